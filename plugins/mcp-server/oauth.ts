/**
 * The gateway as an OAuth 2.1 protected resource (the MCP authorization spec, RFC 9728, RFC 6750,
 * RFC 9068). Each view is a resource of its own, identified by its URL (or `oauth.resource` and
 * `<resource>/<view>` behind a proxy), with its metadata at the RFC 9728 well-known URL: the path
 * inserted after `/.well-known/oauth-protected-resource`. An access token is a JWT from the one
 * configured issuer, checked with jose against the issuer's keys: the signature, `iss`, `aud` (the
 * view's resource, or `oauth.audience`), `exp` (required) and `nbf`, then the scopes: with
 * `oauth.scopes`, a token may use a view only when it holds a scope that maps to it.
 *
 * A request without a token is 401 with the challenge that points at the metadata (and the scopes
 * that open the view); a bad token is 401 `invalid_token`; a good one without the scope is 403
 * `insufficient_scope`, naming the scopes to ask for (a client steps up with them). A token is
 * never in an answer, a log line or an error: only what was wrong with it.
 */
import { errors as jose, jwtVerify, type JWTPayload } from 'jose'
import { YokeError } from 'yoke'
import { STATIC_HOLDER, type Access, type Admitted, type Refusal } from './access.ts'
import { DEFAULT_VIEW, type OAuthConfig } from './config.ts'
import { Issuer } from './issuer.ts'
import type { Token } from './token.ts'
import type { View } from './views.ts'
import './errors.ts'

const WELL_KNOWN = '/.well-known/oauth-protected-resource'
/** asymmetric only: a key set from an issuer never holds a shared secret to check HMACs with */
const ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]
/** RFC 9068's type, and what issuers that predate it put there (an ID token's aud is its client) */
const TYPES = new Set(['at+jwt', 'application/at+jwt', 'jwt', 'application/jwt'])
/** RFC 6750's b64token */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/

export interface OAuthHost {
  views: Map<string, View>
  /** the URL a view listens on (known once the endpoint listens) */
  urlOf(view: string): string
  warn(message: string, error?: unknown): void
}

export class OAuthAccess implements Access {
  readonly hint: string
  readonly issuer: Issuer
  /** view → the scopes that open it; undefined: every valid token opens every view */
  readonly #opening?: Map<string, string[]>
  #warned = false

  constructor(
    private readonly cfg: OAuthConfig,
    private readonly host: OAuthHost,
    /** the static token, when it is configured too: it opens every view */
    private readonly also?: Token,
  ) {
    this.issuer = new Issuer(cfg.issuer, cfg.jwksUri)
    this.hint = `an OAuth access token from ${cfg.issuer}${also ? `, or the token ${also.hint}` : ''}`
    if (cfg.scopes) {
      this.#opening = new Map()
      for (const [scope, target] of Object.entries(cfg.scopes))
        for (const view of typeof target === 'string' ? [target] : target)
          this.#opening.set(view, [...(this.#opening.get(view) ?? []), scope])
    }
  }

  /** The resource identifier of a view: its URL, or under the configured public one. */
  resourceOf(view: string): string {
    const base = this.cfg.resource
    if (!base) return this.host.urlOf(view)
    return view === DEFAULT_VIEW ? base : `${base.replace(/\/+$/, '')}/${view}`
  }

  /** Where a view's protected resource metadata is (RFC 9728 §3.1). */
  metadataUrlOf(view: string): string {
    const url = new URL(this.resourceOf(view))
    return `${url.origin}${wellKnownPath(url)}`
  }

  /** The scopes that open a view (empty: none does), or undefined when scopes are not mapped. */
  scopesOf(view: string): string[] | undefined {
    return this.#opening && (this.#opening.get(view) ?? [])
  }

  document(path: string): object | undefined {
    const wanted = path.replace(/\/+$/, '') || '/'
    for (const view of this.host.views.keys()) {
      const resource = this.resourceOf(view)
      if ((wellKnownPath(new URL(resource)).replace(/\/+$/, '') || '/') !== wanted) continue
      const scopes = this.scopesOf(view)
      return {
        resource,
        authorization_servers: [this.cfg.issuer],
        bearer_methods_supported: ['header'],
        ...(scopes?.length ? { scopes_supported: scopes } : {}),
        resource_name:
          view === DEFAULT_VIEW ? 'yoke MCP gateway' : `yoke MCP gateway, view ${view}`,
      }
    }
    return undefined
  }

  async check(
    authorization: string | undefined,
    view: View | undefined,
  ): Promise<Refusal | Admitted> {
    const name = view?.name ?? DEFAULT_VIEW
    const bearer = authorization && /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization)
    if (!bearer)
      return this.#refuse(
        401,
        name,
        undefined,
        `send Authorization: Bearer <an access token from ${this.cfg.issuer}>`,
      )
    if (this.also?.check(authorization)) return { who: STATIC_HOLDER }
    const token = bearer[1]!
    if (!B64TOKEN.test(token))
      return this.#refuse(401, name, 'invalid_token', 'the access token is not a bearer token')
    let payload: JWTPayload
    try {
      const keys = await this.issuer.keys()
      const verified = await jwtVerify(token, keys, {
        issuer: this.cfg.issuer,
        audience: this.#audience(view),
        algorithms: ALGORITHMS,
        requiredClaims: ['exp'],
        clockTolerance: this.cfg.clockToleranceSec,
      })
      const typ = verified.protectedHeader.typ
      if (typ !== undefined && !TYPES.has(typ.toLowerCase()))
        throw new Refused(`the token's type is ${typ}, not an access token (at+jwt)`)
      if (verified.payload.cnf !== undefined)
        throw new Refused('the access token is bound to a key (cnf); only bearer tokens are taken')
      payload = verified.payload
    } catch (err) {
      const why = explain(err, this.#audience(view), this.cfg.issuer)
      if (why.unavailable) return this.#unavailable(why.text)
      return this.#refuse(401, name, 'invalid_token', why.text)
    }
    this.#warned = false
    const opening = view && this.scopesOf(view.name)
    if (opening) {
      const held = scopesIn(payload)
      if (!opening.some((s) => held.has(s)))
        return this.#refuse(
          403,
          name,
          'insufficient_scope',
          opening.length
            ? `the view ${name} needs the scope ${opening.join(' or ')}`
            : `no scope opens the view ${name} (oauth.scopes maps none to it)`,
        )
    }
    const { sub, client_id: client } = payload as { sub?: unknown; client_id?: unknown }
    return { who: `${this.cfg.issuer} ${String(sub ?? `client ${String(client ?? '')}`)}` }
  }

  /** Finds the issuer's keys now: a wrong issuer is in the log at the start, not at the first request. */
  async warm(): Promise<void> {
    try {
      await this.issuer.keys()
    } catch (err) {
      this.#unavailable(explain(err, '', this.cfg.issuer).text)
    }
  }

  /** The issuer cannot be used: warned once (until a token is checked again), and 503. */
  #unavailable(text: string): Refusal {
    if (!this.#warned) {
      const reason = `${text}; requests are answered 503 until it works`
      const error = new YokeError('MCP_OAUTH_ISSUER', { issuer: this.cfg.issuer, reason })
      this.host.warn(error.message, error)
    }
    this.#warned = true
    return {
      status: 503,
      message: `Service unavailable: access tokens cannot be checked now (${text})`,
      headers: { 'retry-after': '5' },
    }
  }

  /** What `aud` must hold: the configured audience, else the view's resource (any view's, for no view). */
  #audience(view: View | undefined): string | string[] {
    if (this.cfg.audience) return this.cfg.audience
    return view
      ? this.resourceOf(view.name)
      : [...this.host.views.keys()].map((v) => this.resourceOf(v))
  }

  /** A refusal with the WWW-Authenticate challenge of RFC 6750 §3 and RFC 9728 §5.1. */
  #refuse(
    status: 401 | 403,
    view: string,
    error: 'invalid_token' | 'insufficient_scope' | undefined,
    description: string,
  ): Refusal {
    const scopes = this.scopesOf(view)
    const params: Array<[string, string | undefined]> = [
      ['error', error],
      ['error_description', error && description],
      ['scope', scopes?.length ? scopes.join(' ') : undefined],
      ['resource_metadata', this.metadataUrlOf(view)],
    ]
    const challenge = params
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => `${key}="${quotable(value!)}"`)
      .join(', ')
    return {
      status,
      message: `${status === 401 ? 'Unauthorized' : 'Forbidden'}: ${description}`,
      headers: { 'www-authenticate': `Bearer ${challenge}` },
    }
  }
}

/** A check of ours that failed after jose's passed. */
class Refused extends Error {}

/** RFC 9728 §3.1: the well-known path inserted between the host and the resource's path. */
function wellKnownPath(resource: URL): string {
  return resource.pathname === '/' ? WELL_KNOWN : `${WELL_KNOWN}${resource.pathname}`
}

/** The scopes a token holds: RFC 9068's space-separated `scope`, or a `scp` list (some issuers). */
function scopesIn(payload: JWTPayload): Set<string> {
  const { scope, scp } = payload as { scope?: unknown; scp?: unknown }
  const held = new Set<string>()
  if (typeof scope === 'string') for (const s of scope.split(' ')) if (s) held.add(s)
  if (Array.isArray(scp)) for (const s of scp) if (typeof s === 'string') held.add(s)
  if (typeof scp === 'string') for (const s of scp.split(' ')) if (s) held.add(s)
  return held
}

/** What was wrong with a token, in words for its client; `unavailable`: the issuer's fault, not the token's. */
function explain(
  err: unknown,
  audience: string | string[],
  issuer: string,
): { text: string; unavailable?: boolean } {
  if (err instanceof Refused) return { text: err.message }
  const code = (err as { code?: string }).code
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return { text: 'the access token expired' }
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const { claim, reason } = err as jose.JWTClaimValidationFailed
      if (reason === 'missing') return { text: `the access token has no ${claim} claim` }
      if (claim === 'aud')
        return {
          text: `the access token is for another resource: its aud must be ${[audience].flat().join(' or ')}`,
        }
      if (claim === 'iss')
        return { text: `the access token is from another issuer: its iss must be ${issuer}` }
      if (claim === 'nbf') return { text: 'the access token is not valid yet (nbf)' }
      return { text: `the access token's ${claim} claim is not acceptable` }
    }
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return { text: "the access token's signature does not verify with the issuer's keys" }
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return { text: "the access token is not signed with a key of the issuer's (kid)" }
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return { text: 'the access token is not signed with an asymmetric algorithm' }
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return { text: 'the access token is not a signed JWT this gateway can check' }
    default:
      return {
        text: `the issuer's keys cannot be had: ${(err as Error)?.message ?? String(err)}`,
        unavailable: true,
      }
  }
}

/** A value as RFC 6750 allows in a quoted auth-param: printable ASCII without `"` and `\`. */
function quotable(value: string): string {
  return value.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, '?')
}
