/**
 * Who may talk to the console, checked on every request before anything else (as the MCP
 * Inspector does): the `Host` must be the console's own address (a page on another site that
 * rebinds its DNS name to 127.0.0.1 sends its own name), an `Origin` must be the console's own (a
 * cross-site request), and the launch token must be there — `Authorization: Bearer`, `?token=` on a
 * GET, or the cookie the page got when it was opened with `?token=` (its scripts and styles come
 * without one). A POST needs the header: a query or a cookie is what a cross-site form could send.
 * Tokens are compared in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { isLoopback } from './config.ts'

/** 256 random bits, URL-safe. */
export const newToken = (): string => randomBytes(32).toString('base64url')

const digest = (s: string) => createHash('sha256').update(s).digest()

/** `a === b` in time that does not depend on where they differ (nor on `a`'s length). */
export function sameToken(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b))
}

export interface Verdict {
  status: 401 | 403
  code: 'UNAUTHORIZED' | 'FORBIDDEN'
  message: string
  hint: string
}

export interface GuardOptions {
  token: string
  port: number
  /** the bound host; a remote one (allowRemote) takes any Host header */
  host: string
  /** the cookie's name (per port: two consoles on one machine keep theirs apart) */
  cookie: string
}

const HINT =
  'run `yoke console` in the project (it asks the running `yoke dev` and opens the URL with its token), or copy the URL `yoke dev` printed'

/** Undefined when the request may go on; else why not, as the answer to send. */
export function check(req: IncomingMessage, url: URL, o: GuardOptions): Verdict | undefined {
  const hostHeader = req.headers.host ?? ''
  const own = ownHosts(o)
  if (own && !own.includes(hostHeader.toLowerCase()))
    return forbidden(`the Host "${hostHeader}" is not the console's address (${own[0]})`)
  const origin = req.headers.origin
  if (origin !== undefined && origin !== `http://${hostHeader}`)
    return forbidden(
      `requests from the origin "${origin}" are refused: only the console's own page may call it`,
    )
  const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1]
  const post = req.method !== 'GET' && req.method !== 'HEAD'
  const given =
    bearer ?? (post ? undefined : (url.searchParams.get('token') ?? cookieOf(req, o.cookie)))
  if (given === undefined || given === '')
    return {
      status: 401,
      code: 'UNAUTHORIZED',
      message: post
        ? 'a POST needs the token in the Authorization header (Bearer)'
        : 'the console needs its launch token',
      hint: HINT,
    }
  if (!sameToken(given, o.token))
    return {
      status: 401,
      code: 'UNAUTHORIZED',
      message: "the token is not this console's (each `yoke dev` makes a new one)",
      hint: HINT,
    }
  return undefined
}

/** The Host headers that name this console; undefined (any) when it binds a remote host. */
function ownHosts(o: GuardOptions): string[] | undefined {
  if (!isLoopback(o.host)) return undefined
  return [`127.0.0.1:${o.port}`, `localhost:${o.port}`, `[::1]:${o.port}`]
}

function forbidden(message: string): Verdict {
  return {
    status: 403,
    code: 'FORBIDDEN',
    message,
    hint: `open the console at its own address: ${HINT}`,
  }
}

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=')
    if (key === name) return value.join('=')
  }
  return undefined
}
