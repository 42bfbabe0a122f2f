/**
 * A real OAuth 2.1 / OpenID authorization server for tests: oidc-provider 9 on 127.0.0.1 (random
 * port), in memory, gone with `close()`.
 *
 *   const as = await startAuthServer({ resources: { [mcpUrl]: ['mcp:read', 'mcp:write'] } })
 *   as.issuer          // http://127.0.0.1:PORT (its metadata at /.well-known/openid-configuration
 *                      // and /.well-known/oauth-authorization-server)
 *   as.clientId        // a pre-registered public client (redirects to http://127.0.0.1:ANY/callback)
 *   as.jwksUrl         // the keys its JWT access tokens are signed with (RS256)
 *   await as.authorize(url)  // the browser step: logs in as `alice`, consents to what the client
 *                      // asked for, then requests the redirect (the client's loopback) and returns it
 *                      // ({ deliver: false }: returns it unrequested, a browser on another machine)
 *   await as.revokeGrants()  // every grant so far is revoked: its refresh tokens stop working
 *   const held = as.holdNext('POST /token')  // the next such request waits: await held.arrived,
 *                      // then held.release() lets it through (a refresh caught in flight)
 *   as.requests        // 'METHOD /path' of every request it received
 *   as.accessTokenTtl = 1    // tokens issued from now on live 1 s (a test that needs one to
 *                      // expire takes one this short and waits out its exp; the rest live 300 s)
 *   await as.close()
 *
 * `clientMetadataDocuments: { 'https://client.test': 'http://127.0.0.1:PORT' }` turns on Client ID
 * Metadata Documents (draft-02): a client_id that is an https URL of that origin is fetched from the
 * loopback server given (the provider's fetch hook maps the origin; TLS is not part of the test).
 *
 * It supports PKCE (required, S256), refresh tokens (issued to every client allowed the grant),
 * dynamic client registration (`registration: false` turns it off), token revocation (RFC 7009),
 * resource indicators (RFC 8707: a token for resource R is a JWT with `aud` = R and only R's
 * scopes) and the `iss` authorization response parameter (RFC 9207). TTLs are in seconds.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair } from 'jose'
import Provider, { type Configuration } from 'oidc-provider'

export interface AuthServerOptions {
  /** resource indicator (the MCP server's URL) → the scopes it knows; tokens are issued only for these */
  resources?: Record<string, string[]>
  /** the scopes it knows besides OpenID's (default mcp:read, mcp:write, and every resource's) */
  scopes?: string[]
  /** access token lifetime, seconds (default 300) */
  accessTokenTtl?: number
  /** refresh token lifetime, seconds (default 3600) */
  refreshTokenTtl?: number
  /** dynamic client registration (default true) */
  registration?: boolean
  /** the authorize() step refuses consent (the redirect carries error=access_denied) */
  deny?: boolean
  /**
   * Client ID Metadata Documents: an https origin → the loopback http origin that serves its
   * documents. oidc-provider fetches a client_id URL only over https and never from a special-use
   * address (loopback included), so its fetch hook maps the origin instead.
   */
  clientMetadataDocuments?: Record<string, string>
}

export interface AuthServer {
  issuer: string
  clientId: string
  jwksUrl: string
  /** the resource indicators it knows (change at will: read per request) */
  resources: Record<string, string[]>
  /** the lifetime of access tokens issued from now on, seconds (change at will; starts as the option's) */
  accessTokenTtl: number
  /** Follows an authorization URL through login and consent, requests the redirect, returns its URL. */
  authorize(url: string, options?: { deny?: boolean; deliver?: boolean }): Promise<string>
  /** Revokes every grant made so far (their refresh tokens fail from now on). */
  revokeGrants(): Promise<void>
  /** The next request 'METHOD /path' waits until release(); `arrived` resolves when it came. */
  holdNext(request: string): { arrived: Promise<void>; release(): void }
  requests: string[]
  close(): Promise<void>
}

const ACCOUNT = 'alice'
const OIDC_SCOPES = ['openid', 'offline_access', 'profile', 'email']

export async function startAuthServer(options: AuthServerOptions = {}): Promise<AuthServer> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const jwk = { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' }
  const resources = options.resources ?? {}
  const documents = options.clientMetadataDocuments ?? {}
  const clientId = 'yoke-test-client'
  const grants = new Set<string>()
  const requests: string[] = []
  const holds: { request: string; arrived(): void; released: Promise<void> }[] = []
  let accessTokenTtl = options.accessTokenTtl ?? 300

  const resourceInfo = (indicator: string) => {
    const scopes = resources[indicator]
    if (!scopes) return undefined
    return {
      scope: scopes.join(' '),
      audience: indicator,
      accessTokenTTL: accessTokenTtl,
      accessTokenFormat: 'jwt' as const,
      jwt: { sign: { alg: 'RS256' as const } },
    }
  }
  const config: Configuration = {
    clients: [
      {
        client_id: clientId,
        application_type: 'native',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
      },
    ],
    jwks: { keys: [jwk as never] },
    scopes: [
      ...new Set([
        ...OIDC_SCOPES,
        ...(options.scopes ?? ['mcp:read', 'mcp:write']),
        ...Object.values(resources).flat(),
      ]),
    ],
    pkce: { required: () => true },
    ttl: {
      // a resource's own accessTokenTTL (getResourceServerInfo) wins, as in a real deployment
      AccessToken: (_ctx, token) =>
        (token as { resourceServer?: { accessTokenTTL?: number } }).resourceServer
          ?.accessTokenTTL ?? accessTokenTtl,
      RefreshToken: options.refreshTokenTtl ?? 3600,
      Interaction: 300,
      Session: 3600,
      Grant: 3600,
      AuthorizationCode: 60,
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // a token request names its resource, or the one of the grant (the MCP client sends it anyway)
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: options.registration ?? true },
      revocation: { enabled: true },
      clientIdMetadataDocument: {
        enabled: Object.keys(documents).length > 0,
        ack: 'draft-02',
        allowFetch: (_ctx: unknown, id: string) => new URL(id).origin in documents,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx: unknown, _client: unknown, requested?: string) =>
          requested ?? Object.keys(resources)[0],
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, indicator: string) => {
          const info = resourceInfo(indicator)
          if (!info) throw new Provider.errors.InvalidTarget(`unknown resource ${indicator}`)
          return info
        },
      },
    },
    fetch: (url: string | URL, init: RequestInit & { dispatcher?: unknown }) => {
      const target = new URL(url)
      const via = documents[target.origin]
      if (!via) return fetch(url, init)
      const { dispatcher: _ssrfChecks, ...rest } = init // the loopback server is the test's
      return fetch(`${via}${target.pathname}${target.search}`, rest)
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  }
  const provider = new Provider(issuer, config)
  // an RFC 8414 metadata path beside OpenID discovery (oidc-provider serves only the latter)
  const callback = provider.callback()

  server.on('request', async (req: IncomingMessage, res: ServerResponse) => {
    const request = `${req.method} ${req.url?.split('?')[0]}`
    requests.push(request)
    const hold = holds.findIndex((h) => h.request === request)
    if (hold >= 0) {
      const [{ arrived, released }] = holds.splice(hold, 1) as [(typeof holds)[number]]
      arrived()
      await released
    }
    if (req.url === '/.well-known/oauth-authorization-server')
      req.url = '/.well-known/openid-configuration'
    if (req.url?.startsWith('/interaction/')) {
      interact(req, res).catch((err: Error) => {
        res.statusCode = 500
        res.end(err.message)
      })
      return
    }
    callback(req, res)
  })

  let denyNext = false
  /** One interaction: logs alice in, or grants what the client asked for (or refuses it). */
  async function interact(req: IncomingMessage, res: ServerResponse) {
    const details = await provider.interactionDetails(req, res)
    const { prompt, params } = details
    if (denyNext) {
      const result = { error: 'access_denied', error_description: 'the user refused' }
      return provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false })
    }
    if (prompt.name === 'login')
      return provider.interactionFinished(
        req,
        res,
        { login: { accountId: ACCOUNT } },
        {
          mergeWithLastSubmission: false,
        },
      )
    const grant = details.grantId
      ? ((await provider.Grant.find(details.grantId)) ?? newGrant())
      : newGrant()
    function newGrant() {
      return new provider.Grant({ accountId: ACCOUNT, clientId: String(params.client_id) })
    }
    const missing = prompt.details as {
      missingOIDCScope?: string[]
      missingResourceScopes?: Record<string, string[]>
    }
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '))
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
      grant.addResourceScope(indicator, scopes.join(' '))
    const grantId = await grant.save()
    grants.add(grantId)
    return provider.interactionFinished(
      req,
      res,
      { consent: { grantId } },
      {
        mergeWithLastSubmission: true,
      },
    )
  }

  async function authorize(url: string, { deny = options.deny ?? false, deliver = true } = {}) {
    denyNext = deny
    const cookies = new Map<string, string>()
    let next = new URL(url)
    for (let hop = 0; hop < 20; hop++) {
      if (next.origin !== issuer) {
        // the redirect back to the client: the browser requests it (the client's loopback)
        if (deliver) await fetch(next, { redirect: 'manual' }).then((r) => r.body?.cancel())
        return next.href
      }
      const response = await fetch(next, {
        redirect: 'manual',
        headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
      })
      for (const line of response.headers.getSetCookie()) {
        const [pair] = line.split(';')
        const at = pair!.indexOf('=')
        cookies.set(pair!.slice(0, at), pair!.slice(at + 1))
      }
      const location = response.headers.get('location')
      const body = await response.text()
      if (!location)
        throw new Error(
          `the authorization server answered ${response.status}: ${body.slice(0, 300)}`,
        )
      next = new URL(location, next)
    }
    throw new Error('too many redirects in the authorization step')
  }

  return {
    issuer,
    clientId,
    jwksUrl: `${issuer}/jwks`,
    resources,
    get accessTokenTtl() {
      return accessTokenTtl
    },
    set accessTokenTtl(seconds: number) {
      accessTokenTtl = seconds
    },
    authorize,
    async revokeGrants() {
      for (const id of grants) await (await provider.Grant.find(id))?.destroy()
    },
    holdNext(request) {
      let arrived!: () => void
      let release!: () => void
      const held = {
        arrived: new Promise<void>((resolve) => (arrived = resolve)),
        release: () => release(),
      }
      holds.push({ request, arrived, released: new Promise<void>((r) => (release = r)) })
      return held
    },
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
