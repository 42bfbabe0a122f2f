/**
 * The gateway as an OAuth 2.1 protected resource (the MCP authorization spec, RFC 9728, RFC 6750,
 * RFC 9068). Each view is a resource of its own, identified by its URL (or `oauth.resource` and
 * `<resource>/<view>` behind a proxy), with its metadata at the RFC 9728 well-known URL: the path
 * inserted after `/.well-known/oauth-protected-resource`. An access token is a JWT from the one
 * configured issuer, checked with jose against the issuer's keys: the signature, `iss`, `aud` (the
 * view's resource, or `oauth.audience`), `exp` (required) and `nbf`, with the checks jose leaves
 * to its caller (jwt.ts), then the scopes: with `oauth.scopes`, a token may use a view only when
 * it holds a scope that maps to it.
 *
 * A request without a token is 401 with the challenge that points at the metadata (and names the
 * scope to ask for); a bad token is 401 `invalid_token`; a good one without the scope is 403
 * `insufficient_scope`, naming the one scope to ask for (a client steps up with it); only when the
 * issuer's keys cannot be fetched is the answer 503. A token is never in an answer, a log line or
 * an error: only what was wrong with it.
 */
import { messageOf, YokeError } from 'yoke'
import { STATIC_HOLDER, type Access, type Admitted, type Refusal } from './access.ts'
import { DEFAULT_VIEW, type OAuthConfig } from '../config.ts'
import { Issuer, IssuerUnavailable } from './issuer.ts'
import { explain, holderOf, scopesIn, verifyAccessToken } from './jwt.ts'
import type { Token } from './token.ts'
import type { View } from '../views.ts'
import '../errors.ts'

const WELL_KNOWN = '/.well-known/oauth-protected-resource'
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
  /** view → the one scope a challenge names for it: of those that open it, the one opening fewest views */
  readonly #asked = new Map<string, string>()
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
      const reach = new Map<string, number>()
      for (const [scope, target] of Object.entries(cfg.scopes)) {
        const targets = typeof target === 'string' ? [target] : [...new Set(target)]
        reach.set(scope, targets.length)
        for (const view of targets)
          this.#opening.set(view, [...(this.#opening.get(view) ?? []), scope])
      }
      // the scopes that open a view are alternatives, but a challenge's scope list reads as all
      // required (RFC 6750 §3): it names one, the least a client must be granted (ties: config order)
      for (const [view, scopes] of this.#opening)
        this.#asked.set(
          view,
          scopes.reduce((best, s) => (reach.get(s)! < reach.get(best)! ? s : best)),
        )
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
    let keys
    try {
      keys = await this.issuer.keys()
    } catch (err) {
      return this.#unavailable(reasonOf(err))
    }
    const audience = this.#audience(view)
    let payload
    try {
      payload = await verifyAccessToken(token, keys, { ...this.cfg, audience })
    } catch (err) {
      if (err instanceof IssuerUnavailable) return this.#unavailable(err.message)
      return this.#refuse(401, name, 'invalid_token', explain(err, audience, this.cfg.issuer))
    }
    this.#warned = false
    const who = holderOf(payload, this.cfg.issuer)
    // tokens that name no holder cannot be told apart: one would take over another's session
    if (!who)
      return this.#refuse(
        401,
        name,
        'invalid_token',
        'the access token names no holder: no sub, client_id or jti claim',
      )
    const opening = view && this.scopesOf(view.name)
    if (opening && !opening.some(heldBy(payload)))
      return this.#refuse(
        403,
        name,
        'insufficient_scope',
        opening.length
          ? `the view ${name} needs the scope ${opening.join(' or ')}`
          : `no scope opens the view ${name} (oauth.scopes maps none to it)`,
      )
    return { who }
  }

  /** Finds the issuer's keys now: a wrong issuer is in the log at the start, not at the first request. */
  async warm(): Promise<void> {
    try {
      await this.issuer.keys()
    } catch (err) {
      this.#unavailable(reasonOf(err))
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
    const params: Array<[string, string | undefined]> = [
      ['error', error],
      ['error_description', error && description],
      ['scope', this.#asked.get(view)],
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

/** RFC 9728 §3.1: the well-known path inserted between the host and the resource's path. */
function wellKnownPath(resource: URL): string {
  return resource.pathname === '/' ? WELL_KNOWN : `${WELL_KNOWN}${resource.pathname}`
}

/** Whether a token holds a scope. */
function heldBy(payload: Parameters<typeof scopesIn>[0]): (scope: string) => boolean {
  const held = scopesIn(payload)
  return (scope) => held.has(scope)
}

/** Why the issuer's keys cannot be had, for the warning and the 503. */
function reasonOf(err: unknown): string {
  const message = messageOf(err)
  return err instanceof IssuerUnavailable ? message : `the issuer's keys cannot be had: ${message}`
}

/** A value as RFC 6750 allows in a quoted auth-param: printable ASCII without `"` and `\`. */
function quotable(value: string): string {
  return value.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, '?')
}
