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
 *   await as.revokeGrants()  // every grant so far is revoked: its refresh tokens stop working
 *   as.requests        // 'METHOD /path' of every request it received
 *   await as.close()
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
}

export interface AuthServer {
  issuer: string
  clientId: string
  jwksUrl: string
  /** the resource indicators it knows (change at will: read per request) */
  resources: Record<string, string[]>
  /** Follows an authorization URL through login and consent, requests the redirect, returns its URL. */
  authorize(url: string, options?: { deny?: boolean }): Promise<string>
  /** Revokes every grant made so far (their refresh tokens fail from now on). */
  revokeGrants(): Promise<void>
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
  const clientId = 'yoke-test-client'
  const grants = new Set<string>()
  const requests: string[] = []

  const resourceInfo = (indicator: string) => {
    const scopes = resources[indicator]
    if (!scopes) return undefined
    return {
      scope: scopes.join(' '),
      audience: indicator,
      accessTokenTTL: options.accessTokenTtl ?? 300,
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
      AccessToken: options.accessTokenTtl ?? 300,
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
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  }
  const provider = new Provider(issuer, config)
  // an RFC 8414 metadata path beside OpenID discovery (oidc-provider serves only the latter)
  const callback = provider.callback()

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    requests.push(`${req.method} ${req.url?.split('?')[0]}`)
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

  async function authorize(url: string, { deny = options.deny ?? false } = {}) {
    denyNext = deny
    const cookies = new Map<string, string>()
    let next = new URL(url)
    for (let hop = 0; hop < 20; hop++) {
      if (next.origin !== issuer) {
        // the redirect back to the client: the browser requests it (the client's loopback)
        await fetch(next, { redirect: 'manual' }).then((r) => r.body?.cancel())
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
    authorize,
    async revokeGrants() {
      for (const id of grants) await (await provider.Grant.find(id))?.destroy()
    },
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
