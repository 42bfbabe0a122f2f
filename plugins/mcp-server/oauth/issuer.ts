/**
 * The authorization server whose access tokens the gateway takes: its signing keys (JWKS), found
 * in its metadata (RFC 8414 `/.well-known/oauth-authorization-server`, else OpenID Connect
 * discovery) unless `jwksUri` names them, and kept by jose's remote key set (cached; fetched
 * again for a key id it does not know, at most once per cooldown). Every request to the issuer
 * refuses redirects and is bounded in time and size: where the keys come from is the one thing a
 * token's signature rests on, so it is never somewhere the issuer's answer points elsewhere.
 */
import {
  createRemoteJWKSet,
  customFetch,
  type FetchImplementation,
  type JWTVerifyGetKey,
} from 'jose'
import { messageOf } from 'yoke'
import { isLoopbackUrl } from '../config.ts'

/** How long one request to the issuer may take. */
export const ISSUER_TIMEOUT_MS = 5000
/** The largest metadata document or key set read. */
const MAX_BYTES = 1024 * 1024
/** After a failed discovery, requests within this long get the same failure (the issuer is not hammered). */
const RETRY_MS = 5000

/** The issuer could not be used: why, for the log and the 503 (no token is ever in it). */
export class IssuerUnavailable extends Error {}

export class Issuer {
  #keys?: Promise<JWTVerifyGetKey>
  #failedAt = 0

  constructor(
    readonly issuer: string,
    private readonly jwksUri?: string,
  ) {}

  /** The issuer's key set, discovered on first use; a failure is retried after RETRY_MS. */
  keys(): Promise<JWTVerifyGetKey> {
    if (this.#keys && this.#failedAt && Date.now() - this.#failedAt > RETRY_MS) {
      this.#keys = undefined
      this.#failedAt = 0
    }
    return (this.#keys ??= this.#discover().catch((err: Error) => {
      this.#failedAt = Date.now()
      throw err
    }))
  }

  async #discover(): Promise<JWTVerifyGetKey> {
    const jwks = this.jwksUri ?? (await this.#jwksFromMetadata())
    const url = new URL(jwks)
    if (url.protocol !== 'https:' && !isLoopbackUrl(url))
      throw new IssuerUnavailable(
        `the issuer's jwks_uri ${jwks} is not https; give oauth.jwksUri, or fix the issuer's metadata`,
      )
    const fetchKeys: FetchImplementation = (at, options) => fetchRefusingRedirects(at, options)
    return createRemoteJWKSet(url, {
      timeoutDuration: ISSUER_TIMEOUT_MS,
      cooldownDuration: 30_000,
      cacheMaxAge: 10 * 60_000,
      [customFetch]: fetchKeys,
    })
  }

  /** jwks_uri from the issuer's metadata, whose `issuer` must be the configured one (RFC 8414 §3.3). */
  async #jwksFromMetadata(): Promise<string> {
    const problems: string[] = []
    for (const at of metadataUrls(this.issuer)) {
      let doc: unknown
      try {
        doc = await fetchJson(at)
      } catch (err) {
        problems.push(`${at}: ${messageOf(err)}`)
        continue
      }
      const meta = (doc ?? {}) as { issuer?: unknown; jwks_uri?: unknown }
      if (meta.issuer !== this.issuer)
        throw new IssuerUnavailable(
          `${at} names the issuer ${JSON.stringify(meta.issuer)}, not ${this.issuer}; set oauth.issuer to exactly the issuer its tokens carry`,
        )
      if (typeof meta.jwks_uri !== 'string' || !meta.jwks_uri)
        throw new IssuerUnavailable(`${at} has no jwks_uri; give oauth.jwksUri`)
      return meta.jwks_uri
    }
    throw new IssuerUnavailable(`no metadata found for ${this.issuer}: ${problems.join('; ')}`)
  }
}

/**
 * Where an issuer's metadata is: RFC 8414's well-known URL (the path inserted after the host),
 * then OpenID Connect discovery (appended to the issuer).
 */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer)
  const path = url.pathname.replace(/\/$/, '')
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ]
}

/** GET as JSON, redirects refused, bounded in time and size. */
async function fetchJson(url: string): Promise<unknown> {
  const response = await fetchRefusingRedirects(url, {
    method: 'GET',
    headers: new Headers({ accept: 'application/json' }),
    signal: AbortSignal.timeout(ISSUER_TIMEOUT_MS),
  })
  if (response.status !== 200) {
    await response.body?.cancel()
    throw new Error(`HTTP ${response.status}`)
  }
  const text = await readBounded(response)
  try {
    return JSON.parse(text)
  } catch {
    throw new Error('the answer is not JSON')
  }
}

/** fetch that never follows a redirect: a 3xx is an error naming where it pointed. */
async function fetchRefusingRedirects(
  url: string,
  options: { method: 'GET'; headers: Headers; signal: AbortSignal },
): Promise<Response> {
  let response: Response
  try {
    response = await fetch(url, { ...options, redirect: 'manual' })
  } catch (err) {
    const why = (err as { cause?: { code?: string; message?: string } }).cause
    throw new Error(
      (err as Error).name === 'TimeoutError'
        ? `no answer within ${ISSUER_TIMEOUT_MS} ms`
        : (why?.code ?? why?.message ?? messageOf(err)),
      { cause: err },
    )
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel()
    throw new Error(
      `it redirects (HTTP ${response.status} to ${response.headers.get('location') ?? '?'}); redirects are refused: configure the final URL`,
    )
  }
  return response
}

async function readBounded(response: Response): Promise<string> {
  const reader = response.body?.getReader()
  if (!reader) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.length
    if (size > MAX_BYTES) {
      await reader.cancel()
      throw new Error(`the answer is over ${MAX_BYTES} bytes`)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}
