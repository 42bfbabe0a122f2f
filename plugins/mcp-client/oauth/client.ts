/**
 * OAuth 2.1 for one MCP server, on the v2 SDK's `auth()` (discovery from the 401 and RFC 9728
 * metadata, RFC 8414 issuer echo, PKCE, `resource` (RFC 8707), CIMD / pre-registered id / DCR,
 * the RFC 9207 `iss` check, refresh). yoke supplies what the SDK leaves to the host: where
 * credentials live (store.ts), the HTTP client the flow uses (fetch.ts), when to refresh (30 s
 * before expiry, and on a 401), and what a run does when a person is needed: a running instance
 * never opens a browser; it throws LoginRequired, and `yoke mcp login` (login.ts) does the rest.
 */
import { randomBytes } from 'node:crypto'
import {
  auth,
  computeScopeUnion,
  extractWWWAuthenticateParams,
  type AuthProvider,
  type FetchLike,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client'
import { YokeError } from 'yoke'
import { authServerFetch } from './fetch.ts'
import type { Credentials, CredentialStore } from './store.ts'
import '../errors.ts'

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
  ) {
    super('OAUTH_LOGIN_REQUIRED', { server, reason })
  }
}

/** Refresh this long before the access token expires (octos: 30 s). */
export const REFRESH_SKEW_MS = 30_000

export interface ServerAuthOptions {
  server: string
  url: string
  settings: OAuthSettings
  store: CredentialStore
  /** the transport's fetch for the server's own origin */
  serverFetch?: FetchLike
}

/**
 * The SDK's OAuthClientProvider over the credential store. `interactive` gives it the loopback
 * redirect of a login; without one, a flow that needs the user throws LoginRequired.
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
      serverFetch: options.serverFetch,
      allowLoopback: options.settings.allowLoopback,
    })
  }

  get credentials(): Credentials | undefined {
    return this.options.store.read(this.options.url)
  }

  #save(change: Partial<Credentials>) {
    const { url, store } = this.options
    store.write({ ...(this.credentials ?? { url }), ...change, url, savedAt: Date.now() })
  }

  /** The scope to ask for: the entry's, every scope asked for before (step-ups), and `more`. */
  scope(more?: string): string | undefined {
    const own = this.options.settings.scopes.join(' ') || undefined
    return computeScopeUnion(own, this.credentials?.scope, more)
  }

  /** Remembers a scope the server asked for, so the next login asks for it too. */
  wantScope(scope: string | undefined) {
    const union = this.scope(scope)
    if (union !== this.credentials?.scope) this.#save({ scope: union })
  }

  /**
   * The SDK's provider. `interactive` (a login) gives it the loopback redirect and keeps a newly
   * registered client to itself until the tokens arrive, so a running instance refreshing
   * meanwhile keeps the client its refresh token belongs to. Without it (a running instance),
   * `refreshing` is the refresh token being redeemed: its result is stored only if that is still
   * the stored one, so a login that finished meanwhile (another process) is never overwritten.
   */
  provider(
    interactive?: { redirectUrl: string; redirect(url: URL): void },
    refreshing?: string,
  ): OAuthClientProvider {
    const { settings, server } = this.options
    const signedOutWhy = () => this.#signedOutWhy()
    const redirectUris = interactive ? [interactive.redirectUrl] : ['http://127.0.0.1/callback']
    const metadata: OAuthClientMetadata = {
      client_name: 'yoke',
      redirect_uris: redirectUris,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      application_type: 'native',
    }
    /** a login's new client (registration, CIMD), stored with its tokens */
    let pendingClient: StoredOAuthClientInformation | undefined
    const stillOurs = () => interactive || this.credentials?.tokens?.refresh_token === refreshing
    return {
      // defined without a login too: the SDK takes a provider without one for client_credentials
      get redirectUrl() {
        return redirectUris[0]
      },
      clientMetadataUrl: settings.clientMetadataUrl,
      get clientMetadata() {
        return metadata
      },
      state: () => (this.#state = randomBytes(16).toString('base64url')),
      clientInformation: () => {
        if (settings.clientId)
          return { client_id: settings.clientId, issuer: this.credentials?.issuer }
        if (pendingClient) return pendingClient
        if (interactive && this.#newClient) return undefined
        return this.credentials?.client as StoredOAuthClientInformation | undefined
      },
      saveClientInformation: (client: StoredOAuthClientInformation) => {
        if (!interactive)
          throw new LoginRequired(
            server,
            'yoke is not registered with its authorization server yet',
          )
        if (!settings.clientId) pendingClient = client
      },
      tokens: () => {
        const c = this.credentials
        return c?.tokens && { ...c.tokens, issuer: c.issuer }
      },
      saveTokens: (tokens: StoredOAuthTokens) => {
        if (!stillOurs()) return // a login stored newer tokens while this refresh ran
        const { issuer, ...rest } = tokens as StoredOAuthTokens & { issuer?: string }
        this.#save({
          tokens: rest,
          issuer: issuer ?? this.credentials?.issuer,
          expiresAt: rest.expires_in ? Date.now() + rest.expires_in * 1000 : undefined,
          grantLostAt: undefined,
          ...(pendingClient && { client: pendingClient }),
        })
        if (interactive) this.#newClient = false
      },
      redirectToAuthorization(url: URL) {
        if (!interactive) throw new LoginRequired(server, signedOutWhy())
        interactive.redirect(url)
      },
      saveCodeVerifier: (verifier: string) => void (this.#verifier = verifier),
      codeVerifier: () => {
        if (!this.#verifier) throw new Error('no PKCE verifier: the login did not start here')
        return this.#verifier
      },
      invalidateCredentials: (what) => {
        if ((what === 'all' || what === 'tokens') && stillOurs())
          this.#save({
            tokens: undefined,
            expiresAt: undefined,
            grantLostAt: interactive ? undefined : Date.now(),
          })
        if (what === 'all' || what === 'client') {
          pendingClient = undefined
          if (interactive) this.#newClient = true
          else if (!settings.clientId && stillOurs()) this.#save({ client: undefined })
        }
        if (what === 'all' || what === 'discovery') this.#discovery = undefined
        if (what === 'verifier') this.#verifier = undefined
      },
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

  #signedOutWhy(): string {
    const c = this.credentials
    return c?.grantLostAt || c?.tokens
      ? 'its sign-in expired or was revoked'
      : 'it has not been signed in to yet'
  }

  /** The state a login's authorization URL carries (checked on the redirect). */
  get expectedState(): string | undefined {
    return this.#state
  }

  /**
   * Runs the SDK's flow without a person: a refresh, or LoginRequired. Without a refresh token or
   * a client it throws at once: a running instance never registers a client or starts a login.
   */
  async #runAuth(options: { resourceMetadataUrl?: URL; scope?: string } = {}) {
    const c = this.credentials
    const refreshToken = c?.tokens?.refresh_token
    if (!refreshToken || !(this.options.settings.clientId || c?.client))
      throw new LoginRequired(this.options.server, this.#signedOutWhy())
    const result = await auth(this.provider(undefined, refreshToken), {
      serverUrl: this.options.url,
      fetchFn: this.fetch,
      ...options,
    })
    if (result !== 'AUTHORIZED')
      throw new LoginRequired(this.options.server, 'it needs a new sign-in')
  }

  /** One refresh at a time: concurrent requests wait for the same one. */
  refresh(options?: { resourceMetadataUrl?: URL; scope?: string }): Promise<void> {
    this.#refreshing ??= this.#runAuth(options).finally(() => (this.#refreshing = undefined))
    return this.#refreshing
  }

  /** What the transport uses: the token before each request, and a refresh (or LoginRequired) on 401. */
  transportAuth(): AuthProvider {
    return {
      token: async () => {
        const c = this.credentials
        if (!c?.tokens) return undefined // the server answers 401, and onUnauthorized says why
        // before expiry: 30 s ahead, or a third of a short lifetime ahead
        const skew = Math.min(REFRESH_SKEW_MS, ((c.tokens.expires_in ?? 90) * 1000) / 3)
        if (c.expiresAt && c.expiresAt - Date.now() < skew && c.tokens.refresh_token)
          await this.refresh()
        return this.credentials?.tokens?.access_token
      },
      onUnauthorized: async ({ response }) => {
        const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response)
        if (!this.credentials?.tokens) {
          this.wantScope(scope)
          throw new LoginRequired(this.options.server, this.#signedOutWhy())
        }
        await this.refresh({ resourceMetadataUrl, scope: this.scope(scope) })
      },
    }
  }
}
