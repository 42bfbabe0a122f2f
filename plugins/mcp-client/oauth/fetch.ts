/**
 * The second HTTP client (octos's rule): every request of the OAuth flow — protected resource
 * metadata found elsewhere, authorization server discovery, registration, token, refresh,
 * revocation — goes through it. A malicious MCP server could otherwise point token traffic at
 * 127.0.0.1 or 169.254.169.254 to probe the network or harvest credentials. It requires HTTPS,
 * refuses loopback, private, link-local and metadata addresses after DNS resolution (and again
 * where the socket connects) and refuses redirects. `allowLoopback` (explicit config) lets a
 * development server on a loopback address through, over http too; nothing else.
 *
 * Requests to the MCP server's own origin (its /.well-known/oauth-protected-resource) follow the
 * transport's rules instead: the user already chose to reach that host.
 */
import { isIP } from 'node:net'
import type { FetchLike } from '@modelcontextprotocol/client'
import { YokeError } from 'yoke'
import { checkUrl, guardedFetch } from '../http.ts'

export interface AuthFetchOptions {
  /** the MCP server's URL: its origin is reached under the transport's rules */
  serverUrl: string
  /** the transport's fetch for that origin (the SSRF-guarded one for URLs from packages) */
  serverFetch?: FetchLike
  /** a development authorization server on a loopback address is allowed (and plain http for it) */
  allowLoopback: boolean
}

const bare = (host: string) => host.replace(/^\[|\]$/g, '')

export function isLoopbackHost(hostname: string): boolean {
  const host = bare(hostname)
  if (/^localhost\.?$/i.test(host)) return true
  if (isIP(host) === 4) return host.startsWith('127.')
  return host === '::1'
}

const loopbackAddress = (address: string) =>
  address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.')

export function authServerFetch(options: AuthFetchOptions): FetchLike {
  const origin = new URL(options.serverUrl).origin
  const check = async (url: string | URL) => {
    const target = new URL(url)
    const refuse = (reason: string) => new YokeError('URL_REFUSED', { url: target.href, reason })
    const devHost = options.allowLoopback && isLoopbackHost(target.hostname)
    if (target.protocol !== 'https:' && !(devHost && target.protocol === 'http:'))
      throw refuse(
        'authorization server requests need https (plain http only for a loopback development server, with oauth.allowLoopback: true)',
      )
    if (devHost) return
    await checkUrl(target).catch((err: YokeError) => {
      throw refuse(
        `${err.message.replace(/^refused to connect to \S+: /, '')}; authorization server requests may not reach such addresses${isLoopbackHost(target.hostname) ? ' (oauth.allowLoopback: true allows a loopback development server)' : ''}`,
      )
    })
  }
  const guarded = guardedFetch(check, undefined, (address) =>
    options.allowLoopback ? loopbackAddress(address) : false,
  )
  return (url, init) =>
    new URL(url).origin === origin ? (options.serverFetch ?? fetch)(url, init) : guarded(url, init)
}
