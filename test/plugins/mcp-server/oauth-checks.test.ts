// The gateway's OAuth checks one by one (plugins/mcp-server/oauth/resource.ts, issuer.ts), against an
// issuer of our own on loopback whose keys sign what each case needs (jose): where the keys come
// from (metadata, redirects refused, an issuer that names another, none there), the token kinds a
// resource server must refuse (an HMAC, no exp, a key-bound or non-access token, one issued in the
// future, one that names no holder), the type rules (strictType), which failures are the issuer's
// (503) and which the token's (401), who a token's holder is, scopes as `scp`, the one scope a
// challenge names, one configured audience with the scopes choosing the view, and the config's
// own checks.
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose'
import mcpServer from '../../../plugins/mcp-server/index.ts'
import { isRefusal, type Admitted, type Refusal } from '../../../plugins/mcp-server/oauth/access.ts'
import { OAuthAccess } from '../../../plugins/mcp-server/oauth/resource.ts'
import { oauthConfig } from '../../../plugins/mcp-server/config.ts'
import type { View } from '../../../plugins/mcp-server/views.ts'
import { toPlugin, validateConfig, type Plugin } from '../../../src/index.ts'

const GATEWAY = 'http://127.0.0.1:5999/mcp'
const STATIC = 'a-static-token-of-enough-length'
const views = new Map(['default', 'math'].map((name) => [name, { name } as View]))
const urlOf = (view: string) => (view === 'default' ? GATEWAY : `${GATEWAY}/${view}`)

describe('OAuth checks of the gateway', () => {
  let server: Server
  let issuer: string
  let privateKey: CryptoKey
  /** what the issuer's metadata route answers: the normal document, a redirect, another issuer */
  let mode: 'normal' | 'redirect' | 'other-issuer' | 'none' = 'normal'
  /** what the key set route answers: the keys, or a server error */
  let keysMode: 'normal' | 'broken' = 'normal'
  const requests: string[] = []
  before(async () => {
    const pair = await generateKeyPair('ES256')
    privateKey = pair.privateKey
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }
    server = createServer((req, res) => {
      requests.push(req.url!)
      const json = (body: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify(body))
      }
      if (req.url === '/jwks') {
        if (keysMode === 'normal') return json({ keys: [jwk] })
        res.writeHead(500)
        return res.end('<h1>maintenance</h1>')
      }
      if (req.url === '/.well-known/oauth-authorization-server') {
        if (mode === 'redirect') {
          res.writeHead(302, { location: `${issuer}/elsewhere` })
          return res.end()
        }
        if (mode === 'none') {
          res.writeHead(404)
          return res.end()
        }
        return json({
          issuer: mode === 'other-issuer' ? 'https://someone.else' : issuer,
          jwks_uri: `${issuer}/jwks`,
        })
      }
      res.writeHead(404)
      res.end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const access = (config: Record<string, unknown> = {}, warnings: string[] = []) =>
    new OAuthAccess(oauthConfig.parse({ issuer, ...config }), {
      views,
      urlOf,
      warn: (message) => void warnings.push(message),
    })
  /** A verdict that must be a refusal. */
  const refusal = (verdict: Refusal | Admitted): Refusal => {
    assert.ok(isRefusal(verdict), `let through as ${JSON.stringify(verdict)}`)
    return verdict
  }
  const sign = (claims: JWTPayload, header: Record<string, unknown> = {}) =>
    new SignJWT({ scope: 'mcp:all', iss: issuer, aud: GATEWAY, sub: 'alice', ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt', ...header })
      .setIssuedAt(claims.iat)
      .setExpirationTime('5m')
      .sign(privateKey)
  const bearer = (jwt: string) => `Bearer ${jwt}`

  it('finds the keys through the metadata, and a good token passes', async () => {
    requests.length = 0
    const ok = await access().check(bearer(await sign({})), views.get('default'))
    assert.deepEqual(ok, { who: JSON.stringify([issuer, 'sub', 'alice']) })
    assert.deepEqual(requests, ['/.well-known/oauth-authorization-server', '/jwks'])
  })

  it('jwksUri given: no metadata is read', async () => {
    requests.length = 0
    const ok = await access({ jwksUri: `${issuer}/jwks` }).check(
      bearer(await sign({})),
      views.get('default'),
    )
    assert.ok(!isRefusal(ok))
    assert.deepEqual(requests, ['/jwks'])
  })

  it('metadata that redirects, names another issuer, or is not there: 503, warned once, nothing followed', async () => {
    const jwt = await sign({})
    for (const [which, why] of [
      ['redirect', /redirects \(HTTP 302 to .*\/elsewhere\); redirects are refused/],
      ['other-issuer', /names the issuer "https:\/\/someone.else"/],
      ['none', /no metadata found for .*HTTP 404/],
    ] as const) {
      mode = which
      requests.length = 0
      const warnings: string[] = []
      const gate = access({}, warnings)
      const first = refusal(await gate.check(bearer(jwt), views.get('default')))
      const second = refusal(await gate.check(bearer(jwt), views.get('default')))
      assert.equal(first.status, 503, which)
      assert.equal(second.status, 503, which)
      assert.match(first.message, why, which)
      assert.equal(warnings.length, 1, `${which}: warned once, not per request`)
      assert.match(warnings[0]!, /cannot check OAuth access tokens from/)
      assert.ok(!requests.includes('/elsewhere'), 'a redirect is never followed')
      assert.ok(!requests.includes('/jwks'), which)
      // without a token the answer needs no issuer: the 401 challenge
      assert.equal(refusal(await gate.check(undefined, views.get('default'))).status, 401)
    }
    mode = 'normal'
  })

  it('refuses an HMAC token, one without exp, a key-bound one and one that is no access token', async () => {
    const gate = access()
    const view = views.get('default')
    const hmac = await new SignJWT({ scope: 'mcp:all' })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience(GATEWAY)
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('a shared secret of thirty-two bytes!'))
    const noExp = await new SignJWT({ scope: 'mcp:all' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience(GATEWAY)
      .sign(privateKey)
    const cases: Array<[string, string, RegExp]> = [
      ['HS256', hmac, /not signed with an asymmetric algorithm/],
      ['no exp', noExp, /has no exp claim/],
      ['cnf', await sign({ cnf: { jkt: 'abc' } }), /bound to a key/],
      ['typ', await sign({}, { typ: 'logout+jwt' }), /type is "logout\+jwt"/],
      ['iss', await sign({ iss: 'https://someone.else' }), /from another issuer/],
      ['nbf', await sign({ nbf: Math.floor(Date.now() / 1000) + 3600 }), /not valid yet/],
    ]
    for (const [what, jwt, why] of cases) {
      const refused = refusal(await gate.check(bearer(jwt), view))
      assert.equal(refused.status, 401, what)
      assert.match(refused.headers['www-authenticate']!, /error="invalid_token"/, what)
      assert.match(refused.message, why, what)
      assert.ok(!refused.headers['www-authenticate']!.includes(jwt.split('.')[2]!), what)
    }
  })

  it('one configured audience: the scopes alone choose the view, as `scope` or as `scp`', async () => {
    const gate = access({
      audience: 'api://yoke',
      scopes: { 'mcp:all': ['default', 'math'], 'mcp:math': 'math' },
    })
    const mathOnly = await sign({ aud: 'api://yoke', scope: undefined, scp: ['mcp:math'] })
    assert.ok(!isRefusal(await gate.check(bearer(mathOnly), views.get('math'))))
    const refused = refusal(await gate.check(bearer(mathOnly), views.get('default')))
    assert.equal(refused.status, 403)
    assert.equal(
      refused.headers['www-authenticate'],
      `Bearer error="insufficient_scope", error_description="the view default needs the scope mcp:all", scope="mcp:all", resource_metadata="http://127.0.0.1:5999/.well-known/oauth-protected-resource/mcp"`,
    )
    const wrongAud = refusal(await gate.check(bearer(await sign({})), views.get('default')))
    assert.match(wrongAud.message, /its aud must be api:\/\/yoke/)
  })

  it('only keys that cannot be fetched are 503; a token the checks choke on is 401, not the issuer', async () => {
    const warnings: string[] = []
    const gate = access({}, warnings)
    const oddType = refusal(
      await gate.check(bearer(await sign({}, { typ: 5 })), views.get('default')),
    )
    assert.equal(oddType.status, 401)
    assert.match(oddType.headers['www-authenticate']!, /error="invalid_token"/)
    assert.match(oddType.message, /type \(typ\) is not a string/)
    assert.deepEqual(warnings, [], 'a bad token is no reason to warn about the issuer')
    // the key set answers 500, or nothing listens where it is: those are the issuer's, 503
    keysMode = 'broken'
    try {
      const closed = createServer()
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
      const gone = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/jwks`
      await new Promise<void>((resolve) => closed.close(() => resolve()))
      for (const jwksUri of [`${issuer}/jwks`, gone]) {
        const seen: string[] = []
        const broken = access({ jwksUri }, seen)
        const answer = refusal(await broken.check(bearer(await sign({})), views.get('default')))
        assert.equal(answer.status, 503, jwksUri)
        assert.match(answer.message, /the issuer's keys cannot be had/, jwksUri)
        assert.equal(seen.length, 1, jwksUri)
      }
    } finally {
      keysMode = 'normal'
    }
  })

  it('a token issued in the future is refused beyond the clock tolerance', async () => {
    const now = Math.floor(Date.now() / 1000)
    const view = views.get('default')
    const later = refusal(await access().check(bearer(await sign({ iat: now + 3600 })), view))
    assert.equal(later.status, 401)
    assert.match(later.message, /issued in the future \(iat\)/)
    // 20 s ahead: the strict check comes first, while it is still ahead on a slow machine (it
    // has 20 s); within the 30 s tolerance it stays, however long the checks take
    const soon = await sign({ iat: Math.floor(Date.now() / 1000) + 20 })
    const strict = refusal(await access({ clockToleranceSec: 0 }).check(bearer(soon), view))
    assert.match(strict.message, /issued in the future/)
    assert.ok(!isRefusal(await access().check(bearer(soon), view)), 'within the 30 s tolerance')
  })

  it('the type: at+jwt always; a plain JWT type or none by default; with strictType, at+jwt alone', async () => {
    const view = views.get('default')
    const typed = async (typ: string | undefined) => bearer(await sign({}, { typ }))
    for (const typ of ['at+jwt', 'application/at+jwt', 'JWT', undefined])
      assert.ok(!isRefusal(await access().check(await typed(typ), view)), `default, ${typ}`)
    const strict = access({ strictType: true })
    for (const typ of ['at+jwt', 'application/AT+JWT'])
      assert.ok(!isRefusal(await strict.check(await typed(typ), view)), `strict, ${typ}`)
    assert.match(refusal(await strict.check(await typed('JWT'), view)).message, /type is "JWT"/)
    assert.match(refusal(await strict.check(await typed(undefined), view)).message, /has no type/)
  })

  it('who holds a token: its sub, else its client_id, else its jti, never run together; naming none is refused', async () => {
    const gate = access()
    const view = views.get('default')
    const holder = async (claims: JWTPayload) => {
      const verdict = await gate.check(bearer(await sign(claims)), view)
      assert.ok(!isRefusal(verdict), JSON.stringify(verdict))
      return verdict.who
    }
    const holders = [
      await holder({ sub: 'client bob' }),
      await holder({ sub: undefined, client_id: 'bob' }),
      await holder({ sub: undefined, jti: 'token-1' }),
      await holder({ sub: undefined, jti: 'token-2' }),
      await holder({ sub: undefined, client_id: '', jti: 'bob' }),
    ]
    assert.equal(new Set(holders).size, holders.length, holders.join('\n'))
    assert.equal(await holder({ sub: 'alice', client_id: 'x' }), await holder({ sub: 'alice' }))
    for (const claims of [
      { sub: undefined },
      { sub: '', client_id: '' },
      { sub: 7 },
    ] as JWTPayload[]) {
      const nobody = refusal(await gate.check(bearer(await sign(claims)), view))
      assert.equal(nobody.status, 401, JSON.stringify(claims))
      assert.match(nobody.message, /names no holder: no sub, client_id or jti/)
    }
  })

  it('a challenge names one scope: of those that open the view, the one opening fewest views', async () => {
    const gate = access({ scopes: { 'mcp:all': ['default', 'math'], 'mcp:math': 'math' } })
    const scopeOf = (refused: Refusal) =>
      /scope="([^"]*)"/.exec(refused.headers['www-authenticate']!)?.[1]
    assert.equal(scopeOf(refusal(await gate.check(undefined, views.get('math')))), 'mcp:math')
    assert.equal(scopeOf(refusal(await gate.check(undefined, views.get('default')))), 'mcp:all')
    const other = refusal(
      await gate.check(
        bearer(await sign({ scope: 'other', aud: urlOf('math') })),
        views.get('math'),
      ),
    )
    assert.equal(other.status, 403)
    assert.equal(scopeOf(other), 'mcp:math')
    assert.match(other.message, /needs the scope mcp:all or mcp:math/)
    // a tie: the one configured first
    const tied = access({ scopes: { 'mcp:b': 'math', 'mcp:a': ['math'] } })
    assert.equal(scopeOf(refusal(await tied.check(undefined, views.get('math')))), 'mcp:b')
    assert.equal(scopeOf(refusal(await tied.check(undefined, views.get('default')))), undefined)
  })

  it('a public resource URL: the views are under it, and their metadata is found by its path', () => {
    const gate = access({ resource: 'https://mcp.example.com/tools' })
    assert.equal(gate.resourceOf('math'), 'https://mcp.example.com/tools/math')
    assert.equal(
      gate.metadataUrlOf('math'),
      'https://mcp.example.com/.well-known/oauth-protected-resource/tools/math',
    )
    assert.deepEqual(
      (gate.document('/.well-known/oauth-protected-resource/tools') as { resource: string })
        .resource,
      'https://mcp.example.com/tools',
    )
    assert.equal(gate.document('/.well-known/oauth-protected-resource/mcp'), undefined)
  })

  it('the config refuses plain http to another host and a scope for a view that does not exist', () => {
    const plugin = toPlugin(mcpServer) as Plugin
    const bad = validateConfig(plugin, {
      oauth: { issuer: 'http://auth.example.com', scopes: { 'mcp:x': 'nope' } },
    })
    assert.ok(!('value' in bad))
    const text = JSON.stringify(bad)
    assert.match(text, /must be https \(plain http only for a loopback host/)
    assert.match(text, /no view named \\"nope\\" \(views: default\)/)
    assert.ok('value' in validateConfig(plugin, { oauth: { issuer: 'https://auth.example.com' } }))
  })

  it('the config refuses oauth on a wildcard address without oauth.resource, naming the fix', () => {
    const plugin = toPlugin(mcpServer) as Plugin
    const oauth = { issuer: 'https://auth.example.com' }
    for (const host of ['0.0.0.0', '::', '[::]', '0:0:0:0:0:0:0:0']) {
      const bad = validateConfig(plugin, { http: { host }, oauth })
      assert.ok(!('value' in bad), host)
      assert.match(
        JSON.stringify(bad),
        /is every address of this machine.*set oauth.resource to the URL clients reach the gateway at/,
        host,
      )
    }
    const behindProxy = { ...oauth, resource: 'https://mcp.example.com/mcp' }
    assert.ok('value' in validateConfig(plugin, { http: { host: '0.0.0.0' }, oauth: behindProxy }))
    assert.ok('value' in validateConfig(plugin, { http: { host: '192.168.1.5' }, oauth }))
    assert.ok('value' in validateConfig(plugin, { http: { host: '0.0.0.0' }, token: STATIC }))
  })
})
