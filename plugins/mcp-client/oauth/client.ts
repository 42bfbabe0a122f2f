/**
 * OAuth 2.1 for one MCP server. A login (login.ts) runs the v2 SDK's `auth()` (discovery from the
 * 401 and RFC 9728 metadata, RFC 8414 issuer echo, PKCE S256, `resource` (RFC 8707), CIMD /
 * pre-registered id / DCR, the RFC 9207 `iss` check). A running instance only refreshes, with the
 * SDK's pieces but its own decisions: under the store's cross-process lock, with the store read
 * again once the lock is held (another process may have refreshed already), and only invalid_grant
 * or a refused client means "sign in again"; an unreachable or failing authorization server is an
 * outage (OAUTH_UNAVAILABLE: the supervisor reconnects with backoff), the grant kept. A running
 * instance never opens a browser, registers a client or starts an authorization.
 */
import { randomBytes } from 'node:crypto'
import {
  checkResourceAllowed,
  computeScopeUnion,
  discoverOAuthServerInfo,
  extractWWWAuthenticateParams,
  OAuthError,
  OAuthErrorCode,
  refreshAuthorization,
  resourceUrlFromServerUrl,
  type AuthProvider,
  type FetchLike,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type OAuthProtectedResourceMetadata,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client'
import { messageOf, YokeError } from 'yoke'
import { authServerFetch } from './fetch.ts'
import type { Credentials, CredentialStore } from './store.ts'
import '../errors.ts'

/**
 * The SDK's console.warn lines ("[mcp-sdk] …", some carrying an authorization server's raw
 * answer) go to the instances' debug logs, cut before any raw body; never to the terminal.
 */
const sdkWarningSinks = new Set<(message: string) => void>()
let sdkWarningsRouted = false
function routeSdkWarnings() {
  if (sdkWarningsRouted) return
  sdkWarningsRouted = true
  const warn = console.warn.bind(console)
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] !== 'string' || !args[0].startsWith('[mcp-sdk]')) return warn(...args)
    const line = withoutRawBody(args[0])
    for (const sink of sdkWarningSinks) sink(line)
  }
}

/** An SDK message without the authorization server's raw answer it may quote. */
export function withoutRawBody(message: string): string {
  return message
    .replace(/Invalid OAuth error response:[\s\S]*$/, 'an answer that is not OAuth (not shown)')
    .replace(/\.?\s*Raw body:[\s\S]*$/, ' (its answer is not shown)')
}

/** An entry's `oauth` settings, with defaults. */
export interface OAuthSettings {
  scopes: string[]
  clientId?: string
  clientMetadataUrl?: string
  callbackPort?: number
  allowLoopback: boolean
}

/** A person has to sign in (first use, a revoked or expired grant, more scope). */
export class LoginRequired extends YokeError {
  constructor(
    readonly server: string,
    readonly reason: string,
    options: { cause?: unknown } = {},
  ) {
    super('OAUTH_LOGIN_REQUIRED', { server, reason }, options)
  }
}

/** Refresh this long before the access token expires (octos: 30 s). */
export const REFRESH_SKEW_MS = 30_000

export interface ServerAuthOptions {
  server: string
  url: string
  settings: OAuthSettings
  store: CredentialStore
  /** the entry's ssrfGuard: the server's own origin gets the address rule too (fetch.ts) */
  ssrfGuard?: boolean
  /** where the SDK's warnings go (a debug log) */
  log?(message: string): void
}

type RefreshOptions = { resourceMetadataUrl?: URL }

const LOST_GRANT = new Set<string>([OAuthErrorCode.InvalidGrant])
const LOST_CLIENT = new Set<string>([
  OAuthErrorCode.InvalidClient,
  OAuthErrorCode.UnauthorizedClient,
])

/**
 * What a request about to be sent does with the stored credentials: `none` (no tokens: sent
 * without one, and the 401 says why), `refresh` first (the access token expires within 30 s, or a
 * third of a short lifetime, and there is a refresh token), or `use` the token as it is.
 */
export function tokenStep(c: Credentials | undefined, now: number): 'none' | 'refresh' | 'use' {
  if (!c?.tokens) return 'none'
  const skew = Math.min(REFRESH_SKEW_MS, ((c.tokens.expires_in ?? 90) * 1000) / 3)
  return c.expiresAt && c.expiresAt - now < skew && c.tokens.refresh_token ? 'refresh' : 'use'
}

/**
 * What the authorization server's refusal of a refresh means: the grant is gone (invalid_grant)
 * or yoke's client is (invalid_client, unauthorized_client): a person must sign in again
 * (OAUTH_LOGIN_REQUIRED); anything else is an outage (OAUTH_UNAVAILABLE) and the grant is kept.
 */
export function refusalOf(err: unknown): 'grant' | 'client' | 'outage' {
  const code = err instanceof OAuthError ? err.code : ''
  return LOST_GRANT.has(code) ? 'grant' : LOST_CLIENT.has(code) ? 'client' : 'outage'
}

/** Why a server with these credentials is signed out (the reason of OAUTH_LOGIN_REQUIRED). */
export function signedOutWhy(c: Credentials | undefined): string {
  return c?.grantLostAt || c?.tokens
    ? 'its sign-in expired or was revoked'
    : 'it has not been signed in to yet'
}

/**
 * Whether a server waiting for a sign-in should connect again: the store holds tokens saved
 * after `seenSavedAt` (a `yoke mcp login`, maybe in another process, stored new ones).
 */
export function signedInSince(
  seenSavedAt: number | undefined,
  c: Credentials | undefined,
): boolean {
  return c !== undefined && c.savedAt !== seenSavedAt && c.tokens !== undefined
}

/**
 * One server's sign-in over the credential store: the SDK's OAuthClientProvider for a login, and
 * the token and refresh a running transport uses.
 */
export class ServerAuth {
  readonly fetch: FetchLike
  #discovery?: OAuthDiscoveryState
  #verifier?: string
  #state?: string
  #refreshing?: Promise<void>

  constructor(readonly options: ServerAuthOptions) {
    this.fetch = authServerFetch({
      serverUrl: options.url,
      ssrfGuard: options.ssrfGuard ?? false,
      allowLoopback: options.settings.allowLoopback,
    })
    routeSdkWarnings()
    if (options.log) sdkWarningSinks.add(options.log)
  }

  /** Stops sending the SDK's warnings to this one's log. */
  close() {
    if (this.options.log) sdkWarningSinks.delete(this.options.log)
  }

  get credentials(): Credentials | undefined {
    return this.options.store.read(this.options.url)
  }

  /** Changes the stored record under the store's lock; `change` returns undefined to keep it. */
  #update(change: (now: Credentials | undefined) => Partial<Credentials> | undefined) {
    const { url, store } = this.options
    store.update(url, (now) => {
      const next = change(now)
      return next && { ...(now ?? { url }), ...next, url, savedAt: Date.now() }
    })
  }

  /** The scope to ask for: the entry's, every scope asked for before (step-ups), and `more`. */
  scope(more?: string): string | undefined {
    const own = this.options.settings.scopes.join(' ') || undefined
    return computeScopeUnion(own, this.credentials?.scope, more)
  }

  /** Remembers a scope the server asked for, so the next login asks for it too. */
  wantScope(scope: string | undefined) {
    if (!scope) return
    this.#update((now) => {
      const own = this.options.settings.scopes.join(' ') || undefined
      const union = computeScopeUnion(own, now?.scope, scope)
      return union === now?.scope ? undefined : { scope: union }
    })
  }

  /**
   * The RFC 8707 resource: the protected resource metadata's `resource` when it covers this
   * server's URL (the same origin, the URL at or under its path), else the server's canonical
   * URL. Always one: a token without an audience would be good at any server of its issuer.
   */
  resourceFor(resource?: string): URL {
    const canonical = resourceUrlFromServerUrl(this.options.url)
    if (!resource) return canonical
    if (!checkResourceAllowed({ requestedResource: canonical, configuredResource: resource }))
      throw new YokeError('OAUTH_FAILED', {
        server: this.options.server,
        reason: `its protected resource metadata names the resource ${resource}, which does not cover ${canonical.href}`,
      })
    return new URL(resource)
  }

  /**
   * The SDK's provider for a login: the loopback redirect, and a newly registered client kept to
   * itself until the tokens arrive, so a running instance refreshing meanwhile keeps the client
   * its refresh token belongs to.
   */
  provider(interactive: { redirectUrl: string; redirect(url: URL): void }): OAuthClientProvider {
    const { settings, server } = this.options
    const metadata: OAuthClientMetadata = {
      client_name: 'yoke',
      redirect_uris: [interactive.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      application_type: 'native',
    }
    /** a login's new client (registration, CIMD), stored with its tokens */
    let pendingClient: StoredOAuthClientInformation | undefined
    const discovered = () => this.#discovery?.authorizationServerMetadata
    return {
      redirectUrl: interactive.redirectUrl,
      clientMetadataUrl: settings.clientMetadataUrl,
      clientMetadata: metadata,
      state: () => (this.#state = randomBytes(16).toString('base64url')),
      clientInformation: () => {
        const issuer = this.credentials?.issuer ?? discovered()?.issuer
        if (settings.clientId) return { client_id: settings.clientId, issuer }
        if (pendingClient) return pendingClient
        if (this.#newClient) return undefined
        return this.credentials?.client as StoredOAuthClientInformation | undefined
      },
      saveClientInformation: (client: StoredOAuthClientInformation) => {
        if (!settings.clientId) pendingClient = client
      },
      tokens: () => {
        const c = this.credentials
        return c?.tokens && { ...c.tokens, issuer: c.issuer }
      },
      saveTokens: (tokens: StoredOAuthTokens) => {
        const { issuer, ...rest } = tokens as StoredOAuthTokens & { issuer?: string }
        this.#update((now) => ({
          tokens: rest,
          issuer: issuer ?? now?.issuer,
          expiresAt: rest.expires_in ? Date.now() + rest.expires_in * 1000 : undefined,
          grantLostAt: undefined,
          ...(pendingClient && { client: pendingClient }),
        }))
        this.#newClient = false
      },
      // MCP: a client MUST refuse an authorization server that does not advertise S256
      redirectToAuthorization: (url: URL) => {
        if (!discovered()?.code_challenge_methods_supported?.includes('S256'))
          throw new YokeError('OAUTH_FAILED', {
            server,
            reason:
              'its authorization server does not advertise PKCE S256 (code_challenge_methods_supported in its metadata), which MCP requires; yoke does not sign in there',
          })
        interactive.redirect(url)
      },
      saveCodeVerifier: (verifier: string) => void (this.#verifier = verifier),
      codeVerifier: () => {
        if (!this.#verifier) throw new Error('no PKCE verifier: the login did not start here')
        return this.#verifier
      },
      // a login invalidates only its own state: the stored record changes when its tokens arrive
      invalidateCredentials: (what) => {
        if (what === 'all' || what === 'client') {
          pendingClient = undefined
          this.#newClient = true
        }
        if (what === 'all' || what === 'discovery') this.#discovery = undefined
        if (what === 'verifier') this.#verifier = undefined
      },
      validateResourceURL: async (_serverUrl, resource) => this.resourceFor(resource),
      saveDiscoveryState: (state) => void (this.#discovery = state),
      discoveryState: () => this.#discovery,
    }
  }

  /** a login asks for more than the registered client may (see needsNewClient) */
  #newClient = false

  /**
   * A dynamically registered client may ask only for the scopes it registered with: a login that
   * needs more (a step-up) registers again. The stored client stays until the login has tokens.
   */
  needsNewClient(scope: string | undefined) {
    const registered = (this.credentials?.client as { scope?: string } | undefined)?.scope
    if (!registered || !scope || this.options.settings.clientId) return
    const has = new Set(registered.split(' '))
    if (scope.split(' ').some((s) => !has.has(s))) this.#newClient = true
  }

  #signedOutWhy(c = this.credentials): string {
    return signedOutWhy(c)
  }

  /** The state a login's authorization URL carries (checked on the redirect). */
  get expectedState(): string | undefined {
    return this.#state
  }

  #unavailable(err: unknown): YokeError {
    if (err instanceof YokeError && err.code === 'URL_REFUSED') return err
    const reason = withoutRawBody(messageOf(err))
    return new YokeError(
      'OAUTH_UNAVAILABLE',
      { server: this.options.server, reason },
      { cause: err },
    )
  }

  /**
   * One refresh, under the server's cross-process lock. `tried` is the refresh token the caller
   * saw: once the lock is held the store is read again, and a different one there means another
   * process (or a login) has already refreshed: its tokens are used, nothing is sent. A refusal
   * drops the tokens only if the stored refresh token is still the one refused.
   */
  async #refreshNow(options: RefreshOptions): Promise<void> {
    const { server, url, store, settings } = this.options
    const tried = this.credentials?.tokens?.refresh_token
    if (!tried) throw new LoginRequired(server, this.#signedOutWhy())
    await store.exclusive(url, async () => {
      const c = this.credentials
      const refreshToken = c?.tokens?.refresh_token
      if (!refreshToken) throw new LoginRequired(server, this.#signedOutWhy(c))
      if (refreshToken !== tried) return
      const client = settings.clientId ? { client_id: settings.clientId } : c.client
      if (!client)
        throw new LoginRequired(server, 'yoke is not registered with its authorization server yet')
      const found = await discoverOAuthServerInfo(url, {
        resourceMetadataUrl: options.resourceMetadataUrl,
        fetchFn: this.fetch,
      }).catch((err: unknown) => {
        throw this.#unavailable(err)
      })
      const metadata = found.authorizationServerMetadata
      const issuer = metadata?.issuer ?? String(found.authorizationServerUrl)
      if (c.issuer && c.issuer.replace(/\/$/, '') !== issuer.replace(/\/$/, ''))
        throw new LoginRequired(
          server,
          `its authorization server is now ${issuer}, not ${c.issuer} that signed it in`,
        )
      const resource = this.resourceFor(
        (found.resourceMetadata as OAuthProtectedResourceMetadata | undefined)?.resource,
      )
      const stillOurs = (now: Credentials | undefined) =>
        now?.tokens?.refresh_token === refreshToken
      let tokens
      try {
        tokens = await refreshAuthorization(found.authorizationServerUrl, {
          metadata,
          clientInformation: client,
          refreshToken,
          resource,
          fetchFn: this.fetch,
        })
      } catch (err) {
        const lost = refusalOf(err)
        if (lost === 'outage') throw this.#unavailable(err)
        this.#update((now) =>
          stillOurs(now)
            ? {
                tokens: undefined,
                expiresAt: undefined,
                grantLostAt: Date.now(),
                ...(lost === 'client' && !settings.clientId && { client: undefined }),
              }
            : undefined,
        )
        throw new LoginRequired(
          server,
          lost === 'grant'
            ? 'its sign-in expired or was revoked'
            : "its authorization server no longer accepts yoke's client",
        )
      }
      this.#update((now) =>
        stillOurs(now)
          ? {
              tokens,
              issuer: now!.issuer ?? issuer,
              expiresAt: tokens.expires_in ? Date.now() + tokens.expires_in * 1000 : undefined,
              grantLostAt: undefined,
            }
          : undefined,
      )
    })
  }

  /**
   * One refresh at a time in this process: concurrent requests wait for the same one (its
   * resource metadata URL is the first caller's; a scope a caller was asked for is remembered
   * by wantScope, since a refresh cannot widen a grant anyway).
   */
  refresh(options: RefreshOptions = {}): Promise<void> {
    this.#refreshing ??= this.#refreshNow(options).finally(() => (this.#refreshing = undefined))
    return this.#refreshing
  }

  /** What the transport uses: the token before each request, and a refresh (or LoginRequired) on 401. */
  transportAuth(): AuthProvider {
    return {
      token: async () => {
        const step = tokenStep(this.credentials, Date.now())
        if (step === 'none') return undefined // the server answers 401, and onUnauthorized says why
        if (step === 'refresh') await this.refresh()
        return this.credentials?.tokens?.access_token
      },
      onUnauthorized: async ({ response }) => {
        const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response)
        this.wantScope(scope)
        if (!this.credentials?.tokens)
          throw new LoginRequired(this.options.server, this.#signedOutWhy())
        await this.refresh({ resourceMetadataUrl })
      },
    }
  }
}
