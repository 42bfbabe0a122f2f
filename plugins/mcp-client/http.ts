/**
 * HTTP transports (Streamable HTTP, and SSE for older servers) and the fetch they use. For URLs
 * that come from packages rather than the user's own config, every request is checked: the host,
 * literal or resolved, may not be private, loopback, link-local or a metadata address, and
 * redirects are refused (octos's SSRF rules). The resolved addresses are checked where the socket
 * connects (undici with our lookup), so DNS rebinding between check and connection is caught too.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { lookup } from 'node:dns/promises'
import type { Agent, fetch as undiciFetch } from 'undici'
import { isIP } from 'node:net'
import {
  SdkHttpError,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type AuthProvider,
  type FetchLike,
} from '@modelcontextprotocol/client'
import { messageOf, YokeError } from 'yoke'
import { isPrivateAddress } from './addresses.ts'
import './errors.ts'

export { isPrivateAddress }

/** Throws URL_REFUSED when the URL's host is, or resolves to, an address that must not be reached. */
export async function checkUrl(url: string | URL, resolve = lookup): Promise<void> {
  const { hostname, href } = new URL(url)
  const host = hostname.replace(/^\[|\]$/g, '')
  const refuse = (reason: string) => new YokeError('URL_REFUSED', { url: href, reason })
  if (/^localhost\.?$/i.test(host) || /\.localhost\.?$/i.test(host))
    throw refuse('localhost is a loopback name')
  if (isIP(host)) {
    if (isPrivateAddress(host)) throw refuse(`${host} is a private, loopback or reserved address`)
    return
  }
  let addresses: Array<{ address: string }>
  try {
    addresses = await resolve(host, { all: true, verbatim: true })
  } catch (err) {
    throw refuse(`${host} does not resolve (${messageOf(err)})`)
  }
  const bad = addresses.find((a) => isPrivateAddress(a.address))
  if (bad)
    throw refuse(`${host} resolves to ${bad.address}, a private, loopback or reserved address`)
}

type Lookup = typeof dnsLookup

/**
 * A lookup for the connection itself: the addresses the socket will use are the ones checked, so
 * a name that resolves to a public address for the check and to a private one for the connection
 * (DNS rebinding) is still refused.
 */
export function guardedLookup(resolve: Lookup = dnsLookup, allowed = (_address: string) => false) {
  return (
    hostname: string,
    options: LookupOptions,
    callback: (err: Error | null, address?: string | LookupAddress[], family?: number) => void,
  ) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err)
      const bad = addresses.find((a) => isPrivateAddress(a.address) && !allowed(a.address))
      if (bad)
        return callback(
          new YokeError('URL_REFUSED', {
            url: hostname,
            reason: `${hostname} resolves to ${bad.address}, a private, loopback or reserved address`,
          }),
        )
      if (options.all) callback(null, addresses)
      else callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }
}

// imported at the first request: a project of stdio servers never pays for undici (~3 MB of heap)
let undici: Promise<{ Agent: typeof Agent; fetch: typeof undiciFetch }> | undefined
const loadUndici = () =>
  (undici ??= import('undici').then(({ Agent, fetch }) => ({ Agent, fetch })))

/**
 * fetch that checks every request's host (before it, and again as it connects) and refuses
 * redirects. `allowed` exempts addresses from the connect-time check (the explicit loopback
 * allowance for a development authorization server).
 */
export function guardedFetch(
  check: (url: string | URL) => Promise<void> = checkUrl,
  resolve?: Lookup,
  allowed?: (address: string) => boolean,
): FetchLike {
  let dispatcher: Agent | undefined
  return async (url, init) => {
    await check(url)
    const undici = await loadUndici()
    dispatcher ??= new undici.Agent({
      connect: { lookup: guardedLookup(resolve, allowed) as never },
    })
    const response = await undici.fetch(url, {
      ...(init as object),
      redirect: 'manual',
      dispatcher,
    })
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => {})
      throw new YokeError('URL_REFUSED', {
        url: String(url),
        reason: `it redirects (HTTP ${response.status}) and redirects are refused`,
      })
    }
    // the global Response class: the SDK tells an error answer by `instanceof Response`
    const { status, statusText, headers } = response
    return new Response(response.body as ReadableStream | null, {
      status,
      statusText,
      headers: headers as unknown as Headers,
    })
  }
}

export interface HttpOptions {
  url: string
  headers: Record<string, string>
  ssrfGuard: boolean
  /** OAuth: the bearer token before each request, and what to do on a 401 (oauth/session.ts) */
  authProvider?: AuthProvider
}

export function streamableTransport(options: HttpOptions): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(options.url), {
    requestInit: { headers: options.headers },
    fetch: options.ssrfGuard ? guardedFetch() : undefined,
    authProvider: options.authProvider,
    // a step-up needs the user (a refresh cannot widen a grant): the call says so instead
    onInsufficientScope: 'throw',
    // our supervisor reconnects; the SDK's own retries of the event stream would only hide an outage
    reconnectionOptions: {
      initialReconnectionDelay: 1000,
      maxReconnectionDelay: 30_000,
      reconnectionDelayGrowFactor: 1.5,
      maxRetries: 0,
    },
  })
}

export function sseTransport(options: HttpOptions): SSEClientTransport {
  const fetcher = options.ssrfGuard ? guardedFetch() : undefined
  return new SSEClientTransport(new URL(options.url), {
    requestInit: { headers: options.headers },
    fetch: fetcher,
    authProvider: options.authProvider,
    eventSourceInit: {
      // the event stream's request keeps its own headers (Accept: text/event-stream) and gets ours
      fetch: (url, init) => {
        const headers = new Headers(init?.headers)
        for (const [name, value] of Object.entries(options.headers)) headers.set(name, value)
        return (fetcher ?? fetch)(url, { ...init, headers })
      },
    },
  })
}

/** The HTTP status an error carries (SdkHttpError.status, also under a negotiation error's cause). */
function httpStatus(err: unknown): number | undefined {
  for (let e = err, depth = 0; e && depth < 4; e = (e as Error).cause, depth++)
    if (e instanceof SdkHttpError) return e.status
  return undefined
}

/** The server refused the request as unauthenticated (HTTP 401). */
export function unauthorized(err: unknown): boolean {
  return httpStatus(err) === 401
}

/** A Streamable HTTP answer that means "this server speaks the older SSE transport". */
export function wantsSse(err: unknown): boolean {
  const status = httpStatus(err)
  return status !== undefined && status >= 400 && status < 500 && status !== 401 && status !== 403
}

/**
 * A session the server no longer knows (it restarted, or ended the session): the spec says 404;
 * servers built on the SDK's examples answer 400 "No valid session ID". The request was not run.
 */
export function sessionExpired(err: unknown): boolean {
  return (
    err instanceof SdkHttpError &&
    (err.status === 404 || (err.status === 400 && /session/i.test(err.message)))
  )
}
