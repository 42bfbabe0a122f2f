/**
 * The second HTTP client (octos's rule): every request of the OAuth flow — the MCP server's own
 * protected resource metadata and first probe, authorization server discovery, registration,
 * token, refresh, revocation — goes through it. A malicious MCP server could otherwise point
 * token traffic at 127.0.0.1 or 169.254.169.254 to probe the network or harvest credentials. It
 * requires HTTPS, refuses loopback, private, link-local and metadata addresses after DNS
 * resolution (and again where the socket connects), refuses redirects and gives each request
 * 30 s. `allowLoopback` (explicit config) lets a development server on a loopback address
 * through, over http too; nothing else.
 *
 * One exception to the address rule: the MCP server's own origin in the user's own config
 * (ssrfGuard off) may be on a private address, since the transport already talks to it there.
 * HTTPS and the redirect refusal still apply to it; with ssrfGuard on (imported and package URLs)
 * it gets the full rule.
 */
import type { FetchLike } from '@modelcontextprotocol/client'
import { YokeError } from 'yoke'
import { insecureOAuthUrl, isLoopbackHost } from '../addresses.ts'
import { checkUrl, guardedFetch } from '../http.ts'

export { isLoopbackHost }

export interface AuthFetchOptions {
  /** the MCP server's URL */
  serverUrl: string
  /** the entry's ssrfGuard: its own origin gets the address rule too */
  ssrfGuard: boolean
  /** a development authorization server on a loopback address is allowed (and plain http for it) */
  allowLoopback: boolean
}

/** how long one authorization-server request may take */
export const AUTH_REQUEST_MS = 30_000

const loopbackAddress = (address: string) =>
  address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.')

export function authServerFetch(options: AuthFetchOptions): FetchLike {
  const origin = new URL(options.serverUrl).origin
  const refuse = (url: URL, reason: string) =>
    new YokeError('URL_REFUSED', { url: url.href, reason })
  const scheme = (target: URL) => {
    const insecure = insecureOAuthUrl(target.href, options.allowLoopback)
    if (insecure)
      throw refuse(
        target,
        `authorization server requests need https (plain http only for a loopback development server, with oauth.allowLoopback: true)`,
      )
  }
  const check = async (url: string | URL) => {
    const target = new URL(url)
    scheme(target)
    if (options.allowLoopback && isLoopbackHost(target.hostname)) return
    await checkUrl(target).catch((err: YokeError) => {
      throw refuse(
        target,
        `${err.message.replace(/^refused to connect to \S+: /, '')}; authorization server requests may not reach such addresses${isLoopbackHost(target.hostname) ? ' (oauth.allowLoopback: true allows a loopback development server)' : ''}`,
      )
    })
  }
  const guarded = guardedFetch(check, undefined, (address) =>
    options.allowLoopback ? loopbackAddress(address) : false,
  )
  const own = options.ssrfGuard
    ? guarded
    : guardedFetch(
        async (url) => scheme(new URL(url)),
        undefined,
        () => true,
      )
  return (url, init) => {
    // a timer of its own: on Node 20 a timeout signal only AbortSignal.any holds may be collected
    const bound = new AbortController()
    const timer = setTimeout(
      () => bound.abort(new Error(`no answer within ${AUTH_REQUEST_MS / 1000} s`)),
      AUTH_REQUEST_MS,
    )
    timer.unref()
    const signal = init?.signal ? AbortSignal.any([init.signal, bound.signal]) : bound.signal
    return (new URL(url).origin === origin ? own : guarded)(url, { ...init, signal })
  }
}
