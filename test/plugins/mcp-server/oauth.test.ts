// The gateway as an OAuth-protected resource, against a real authorization server (oidc-provider on
// loopback, test/helpers/oidc.ts) issuing real JWT access tokens through the authorization-code
// flow with PKCE: protected resource metadata per view (RFC 9728), real SDK clients of both eras
// with valid tokens, every kind of bad token answered 401 / 403 with the challenge the MCP spec
// asks for, scopes deciding the views, the v2 SDK's own OAuth client finding its way from the 401,
// no token anywhere in what the gateway logged or answered, `yoke serve --oauth` itself (its stdout
// and stderr), and `yoke dev`'s log file and events with the gateway refusing tokens.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpV2,
  UnauthorizedError,
  type OAuthClientProvider,
} from '@modelcontextprotocol/client'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import mcpServer, { type McpServerApi } from '../../../plugins/mcp-server/index.ts'
import { toPlugin, validateConfig, type Plugin } from '../../../src/index.ts'
import { mcpHarness, type McpHarness } from '../../helpers/mcp.ts'
import { startAuthServer, type AuthServer } from '../../helpers/oidc.ts'
import { DevProcess, runYoke, tempProject, YOKE, type Project } from '../../helpers/project.ts'
import { messagesOf } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'

const PIN = { versionNegotiation: { mode: { pin: '2026-07-28' as const } } }
const SCOPES = ['mcp:all', 'mcp:math']
const STATIC = 'static-token-0123456789abcdef'

const tools = {
  name: 'tools',
  inject: ['runtime'],
  apply(ctx: any) {
    ctx.runtime.register({ name: 'add', risk: 'low', execute: ({ a, b }: any) => String(a + b) })
    ctx.runtime.register({ name: 'secret', risk: 'low', execute: () => 'the secret' })
  },
}

/** A loopback listener for the authorization redirect (the browser step requests it). */
async function callbackServer(): Promise<{ server: Server; url: string }> {
  const server = createServer((_req, res) => res.end('signed in'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback` }
}

/** A real access token: the authorization-code flow with PKCE, for `resource` and `scope`. */
async function tokenFor(
  as: AuthServer,
  redirect: string,
  resource: string,
  scope: string,
): Promise<string> {
  const meta = await (await fetch(`${as.issuer}/.well-known/openid-configuration`)).json()
  const verifier = randomBytes(32).toString('base64url')
  const url = new URL(meta.authorization_endpoint)
  for (const [k, v] of Object.entries({
    client_id: as.clientId,
    response_type: 'code',
    redirect_uri: redirect,
    scope,
    resource,
    state: randomBytes(8).toString('hex'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }))
    url.searchParams.set(k, v)
  const back = new URL(await as.authorize(url.href))
  const code = back.searchParams.get('code')
  assert.ok(code, `no code in the redirect: ${back.search}`)
  const response = await fetch(meta.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirect,
      client_id: as.clientId,
      code_verifier: verifier,
      resource,
    }),
  })
  const body = await response.json()
  assert.equal(response.status, 200, JSON.stringify(body))
  assert.equal(body.access_token.split('.').length, 3, 'a JWT access token')
  return body.access_token
}

const claimsOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString())

/** A raw 2026-07-28 tools/list (its envelope and headers) with this bearer token, or none. */
async function post(url: string, token?: string): Promise<Response> {
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  }
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/list',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
      params: { _meta: envelope },
    }),
    signal: AbortSignal.timeout(10_000),
  })
}

/** The challenge's parameters (`Bearer a="x", b="y"`). */
function challenge(res: Response): Record<string, string> {
  const header = res.headers.get('www-authenticate') ?? ''
  assert.match(header, /^Bearer /)
  return Object.fromEntries([...header.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]))
}

/** A kernel with the tools and an mcp-server instance of this config. */
async function gateway(project: Project, config: Record<string, unknown>) {
  const h = await mcpHarness(project.dir)
  const spawn = async (plugin: unknown, cfg: unknown, key: string) => {
    const p = toPlugin(plugin) as Plugin
    const checked = validateConfig(p, cfg)
    assert.ok('value' in checked, JSON.stringify(checked))
    const fiber = h.kernel.spawn(p, checked.value, { key })
    await h.kernel.whenSettled(fiber, 20_000)
    assert.equal(fiber.state, 'active', String(fiber.error?.stack ?? fiber.error))
  }
  await spawn(tools, {}, 'tools')
  await spawn(mcpServer, config, 'gateway')
  return { h, service: h.kernel.services.get('mcpServer')!.value as McpServerApi }
}

describe('the gateway as an OAuth protected resource', () => {
  let project: Project
  let h: McpHarness
  let as: AuthServer
  let callback: { server: Server; url: string }
  let service: McpServerApi
  let main: string
  let math: string
  /** every token handed out, to look for in what the gateway said */
  const issued: string[] = []
  /** everything the gateway answered (bodies and headers) */
  const answered: string[] = []
  const closers: Array<() => Promise<unknown>> = []
  const token = async (resource: string, scope: string) => {
    const jwt = await tokenFor(as, callback.url, resource, scope)
    issued.push(jwt)
    return jwt
  }
  const record = async (res: Response) => {
    const headers: string[] = []
    res.headers.forEach((value, name) => headers.push(`${name}: ${value}`))
    answered.push(headers.join('\n'), await res.clone().text())
    return res
  }

  before(async () => {
    project = tempProject()
    as = await startAuthServer({ resources: { 'urn:yoke:scopes': SCOPES } })
    callback = await callbackServer()
    ;({ h, service } = await gateway(project, {
      token: STATIC,
      views: { math: { allow: ['add'] } },
      oauth: {
        issuer: as.issuer,
        clockToleranceSec: 0,
        scopes: { 'mcp:all': ['default', 'math'], 'mcp:math': 'math' },
      },
    }))
    main = service.url!
    math = service.urlOf('math')!
    // the authorization server learns the gateway's resources once they have a port
    as.resources[main] = SCOPES
    as.resources[math] = SCOPES
    as.resources['http://127.0.0.1:9/elsewhere'] = SCOPES
  })
  after(async () => {
    for (const close of closers) await close().catch(() => {})
    await h?.close()
    await as?.close()
    callback?.server.close()
    project?.cleanup()
  })

  it('serves protected resource metadata for each view at its RFC 9728 well-known URL', async () => {
    assert.equal(service.oauth?.resourceOf('math'), math)
    const at = new URL(main)
    const doc = await (await fetch(`${at.origin}/.well-known/oauth-protected-resource/mcp`)).json()
    assert.deepEqual(doc, {
      resource: main,
      authorization_servers: [as.issuer],
      bearer_methods_supported: ['header'],
      scopes_supported: ['mcp:all'],
      resource_name: 'yoke MCP gateway',
    })
    const mathDoc = await (await fetch(service.oauth!.metadataUrlOf('math')!)).json()
    assert.equal(mathDoc.resource, math)
    assert.deepEqual(mathDoc.scopes_supported, ['mcp:all', 'mcp:math'])
    const none = await fetch(`${at.origin}/.well-known/oauth-protected-resource/nope`)
    assert.equal(none.status, 401, 'a path that is no metadata is an MCP request like any other')
  })

  it('no token: 401 with the challenge that points at the metadata and names the scope', async () => {
    const res = await record(await post(main))
    assert.equal(res.status, 401)
    assert.deepEqual(challenge(res), {
      scope: 'mcp:all',
      resource_metadata: service.oauth!.metadataUrlOf('default')!,
    })
    // the scopes that open a view are alternatives: the challenge names one, the least (RFC 6750
    // reads its list as all required)
    const mathRes = await record(await post(math, undefined))
    assert.equal(challenge(mathRes).scope, 'mcp:math')
  })

  it('a valid token lists and calls tools, for a 2026-07-28 client and a 2025-era one', async () => {
    const jwt = await token(main, 'mcp:all')
    assert.equal(claimsOf(jwt).aud, main)
    const headers = { Authorization: `Bearer ${jwt}` }
    const modern = new ClientV2({ name: 'v2', version: '1' }, PIN)
    await modern.connect(new HttpV2(new URL(main), { requestInit: { headers } }))
    closers.push(() => modern.close())
    const names = (await modern.listTools()).tools.map((t) => t.name)
    assert.ok(names.includes('add') && names.includes('secret'), names.join(', '))
    const result = await modern.callTool({ name: 'add', arguments: { a: 2, b: 3 } })
    assert.deepEqual(result.content, [{ type: 'text', text: '5' }])
    const legacy = new ClientV1({ name: 'v1', version: '1' })
    await legacy.connect(new HttpV1(new URL(main), { requestInit: { headers } }))
    closers.push(() => legacy.close())
    const secret = await legacy.callTool({ name: 'secret', arguments: {} })
    assert.deepEqual(secret.content, [{ type: 'text', text: 'the secret' }])
  })

  it('a scope that maps to one view opens that view alone, and it sees only its own tools', async () => {
    const jwt = await token(math, 'mcp:math')
    const headers = { Authorization: `Bearer ${jwt}` }
    const modern = new ClientV2({ name: 'v2', version: '1' }, PIN)
    await modern.connect(new HttpV2(new URL(math), { requestInit: { headers } }))
    closers.push(() => modern.close())
    assert.deepEqual(
      (await modern.listTools()).tools.map((t) => t.name),
      ['add'],
    )
    const hidden = await modern.callTool({ name: 'secret', arguments: {} })
    assert.equal(hidden.isError, true)
    const legacy = new ClientV1({ name: 'v1', version: '1' })
    await legacy.connect(new HttpV1(new URL(math), { requestInit: { headers } }))
    closers.push(() => legacy.close())
    assert.deepEqual(
      (await legacy.listTools()).tools.map((t) => t.name),
      ['add'],
    )
    // the same scope in a token for the default view does not open it: 403, naming the scope to ask for
    const narrow = await token(main, 'mcp:math')
    const res = await record(await post(main, narrow))
    assert.equal(res.status, 403)
    const params = challenge(res)
    assert.equal(params.error, 'insufficient_scope')
    assert.equal(params.scope, 'mcp:all')
    assert.equal(params.resource_metadata, service.oauth!.metadataUrlOf('default'))
    assert.match(params.error_description!, /needs the scope mcp:all/)
  })

  it('wrong audience, bad signature, not a JWT: 401 invalid_token, saying what is wrong', async () => {
    const forMain = await token(main, 'mcp:all')
    const elsewhere = await token('http://127.0.0.1:9/elsewhere', 'mcp:all')
    const [head, body, signature] = forMain.split('.') as [string, string, string]
    const flipped = signature[10] === 'A' ? 'B' : 'A'
    const tampered = `${head}.${body}.${signature.slice(0, 10)}${flipped}${signature.slice(11)}`
    // a token with claims of our own making under the issuer's header: its signature is not theirs
    const forged = `${head}.${Buffer.from(JSON.stringify({ ...claimsOf(forMain), scope: 'mcp:all mcp:math' })).toString('base64url')}.${signature}`
    const cases: Array<[string, string, string, RegExp]> = [
      [
        'a token for the default view, on math',
        math,
        forMain,
        /for another resource: its aud must be/,
      ],
      ['a token for another resource', main, elsewhere, /for another resource/],
      ['a tampered signature', main, tampered, /signature does not verify/],
      ['forged claims', main, forged, /signature does not verify/],
      ['not a JWT', main, 'opaque-0123456789', /not a signed JWT/],
    ]
    for (const [what, url, jwt, why] of cases) {
      const res = await record(await post(url, jwt))
      assert.equal(res.status, 401, what)
      const params = challenge(res)
      assert.equal(params.error, 'invalid_token', what)
      assert.match(params.error_description!, why, what)
      assert.ok(params.resource_metadata, what)
      assert.match((await res.json()).error.message, why, what)
    }
  })

  it('the static token, configured too, opens every view; a 2025-era session stays with who opened it', async () => {
    assert.equal((await record(await post(math, STATIC))).status, 200)
    assert.equal((await record(await post(main, `${STATIC}x`))).status, 401)
    const jwt = await token(main, 'mcp:all')
    // a 2025-era session stays with who opened it: the static token's holder cannot use it
    const transport = new HttpV1(new URL(main), {
      requestInit: { headers: { Authorization: `Bearer ${jwt}` } },
    })
    const legacy = new ClientV1({ name: 'v1', version: '1' })
    await legacy.connect(transport)
    const other = await fetch(main, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${STATIC}`,
        'mcp-session-id': transport.sessionId!,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
    })
    assert.equal(other.status, 404, await other.text())
    assert.equal((await legacy.listTools()).tools.length, 2, 'its owner carries on')
    await legacy.close()
  })

  /** The v2 SDK's OAuth client, signing in through the test's authorization server. */
  const sdkProvider = (start?: { access_token: string; token_type: string }) => {
    const state = { verifier: '', saved: start, back: undefined as URLSearchParams | undefined }
    const provider: OAuthClientProvider = {
      redirectUrl: callback.url,
      clientMetadata: {
        redirect_uris: [callback.url],
        client_name: 'sdk',
        token_endpoint_auth_method: 'none',
      },
      clientInformation: () => ({ client_id: as.clientId }),
      tokens: () => state.saved as never,
      saveTokens: (tokens) => void (state.saved = tokens as never),
      saveCodeVerifier: (v) => void (state.verifier = v),
      codeVerifier: () => state.verifier,
      async redirectToAuthorization(url) {
        state.back = new URL(await as.authorize(url.href)).searchParams
        state.back.set('asked-scope', url.searchParams.get('scope') ?? '')
      },
    }
    return { provider, state }
  }

  it("the v2 SDK's OAuth client finds its way from the 401: metadata, sign-in, tools", async () => {
    const { provider, state } = sdkProvider()
    const first = new HttpV2(new URL(math), { authProvider: provider })
    const client = new ClientV2({ name: 'sdk-oauth', version: '1' }, PIN)
    await assert.rejects(client.connect(first), UnauthorizedError)
    const back = state.back
    assert.ok(
      back && back.get('code'),
      'it went to sign in, from what the 401 and the metadata said',
    )
    assert.equal(back.get('asked-scope'), 'mcp:math', "with the challenge's one scope")
    await first.finishAuth(back)
    assert.ok(state.saved, 'it got a token')
    issued.push(state.saved.access_token)
    assert.equal(
      claimsOf(state.saved.access_token).aud,
      math,
      'for the resource the metadata names',
    )
    const again = new ClientV2({ name: 'sdk-oauth', version: '1' }, PIN)
    await again.connect(new HttpV2(new URL(math), { authProvider: provider }))
    closers.push(() => again.close())
    assert.deepEqual(
      (await again.listTools()).tools.map((t) => t.name),
      ['add'],
    )
  })

  it('the v2 SDK steps up from the 403: it signs in again for the scope the challenge names', async () => {
    const narrow = await token(main, 'mcp:math')
    const { provider, state } = sdkProvider({ access_token: narrow, token_type: 'Bearer' })
    const first = new HttpV2(new URL(main), { authProvider: provider })
    const client = new ClientV2({ name: 'sdk-step-up', version: '1' }, PIN)
    await assert.rejects(client.connect(first), UnauthorizedError)
    assert.match(state.back?.get('asked-scope') ?? '', /\bmcp:all\b/, 'it asked for mcp:all')
    await first.finishAuth(state.back!)
    issued.push(state.saved!.access_token)
    assert.match(claimsOf(state.saved!.access_token).scope, /\bmcp:all\b/)
    const again = new ClientV2({ name: 'sdk-step-up', version: '1' }, PIN)
    await again.connect(new HttpV2(new URL(main), { authProvider: provider }))
    closers.push(() => again.close())
    assert.ok((await again.listTools()).tools.some((t) => t.name === 'secret'))
  })

  it('no token is in any log line or answer of the gateway', () => {
    assert.ok(issued.length >= 6)
    const logged = h.logs.map((r) => `${r.message} ${String((r.error as Error)?.stack ?? '')}`)
    assert.ok(
      logged.some((l) => /refused \(401\)/.test(l)),
      'the refusals are logged (at debug)',
    )
    for (const jwt of [...issued, STATIC]) {
      const signature = jwt.split('.')[2] ?? jwt
      for (const text of [...logged, ...answered])
        assert.ok(!text.includes(signature), `a token in: ${text.slice(0, 200)}`)
    }
  })
})

describe('the gateway with tokens that expire', () => {
  let project: Project
  let h: McpHarness
  let as: AuthServer
  let callback: { server: Server; url: string }
  let main: string
  before(async () => {
    project = tempProject()
    // no scopes mapped: a valid token opens every view. A token used while valid lives the
    // default 300 s (a loaded machine may take seconds between issuing and using it); the one
    // that must expire is issued living 1 s and used only once its exp has passed
    as = await startAuthServer({ resources: { 'urn:yoke:scopes': SCOPES } })
    callback = await callbackServer()
    let service: McpServerApi
    ;({ h, service } = await gateway(project, {
      oauth: { issuer: as.issuer, clockToleranceSec: 0 },
    }))
    main = service.url!
    as.resources[main] = SCOPES
  })
  after(async () => {
    await h?.close()
    await as?.close()
    callback?.server.close()
    project?.cleanup()
  })

  it('an expired access token is 401 invalid_token; without oauth.scopes a fresh one opens the view', async () => {
    const valid = await tokenFor(as, callback.url, main, 'mcp:all')
    const fresh = await post(main, valid)
    assert.equal(fresh.status, 200, 'no scope map: a valid token opens the view')
    assert.equal((await messagesOf(fresh))[0].result.tools.length, 2)
    as.accessTokenTtl = 1
    const jwt = await tokenFor(as, callback.url, main, 'mcp:all')
    const { exp, iat } = claimsOf(jwt)
    assert.ok(exp - iat <= 1, `a short-lived token (${exp - iat} s)`)
    // its exp is at most a second away: the bound only catches a stalled clock
    await until('the token to expire', () => Date.now() / 1000 > exp, { ms: 30_000 })
    const res = await post(main, jwt)
    assert.equal(res.status, 401)
    assert.equal(challenge(res).error, 'invalid_token')
    assert.match(challenge(res).error_description!, /expired/)
    assert.equal(challenge(res).scope, undefined, 'no scope map: no scope to name')
    assert.ok(!h.logs.some((r) => r.message.includes(jwt.split('.')[2]!)))
    // the valid token still opens it: the 401 was the expiry, not the gateway
    assert.equal((await post(main, valid)).status, 200)
  })
})

describe('yoke serve --oauth ISSUER', () => {
  let project: Project
  let as: AuthServer
  let callback: { server: Server; url: string }
  let child: ChildProcess
  let stderr = ''
  before(async () => {
    as = await startAuthServer({ resources: { 'urn:yoke:scopes': SCOPES } })
    callback = await callbackServer()
    project = tempProject({
      'yoke.config.yaml': `preset: base
plugins:
  gateway:
    use: mcp-server
    config:
      views: { skills: { allow: [skills_list] } }
      oauth: { scopes: { 'mcp:all': [default, skills], 'mcp:math': skills } }
`,
    })
  })
  after(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL')
    await as?.close()
    callback?.server.close()
    project?.cleanup()
  })

  it('serves with the issuer from the flag and the scopes from the config; the token is in no output', async () => {
    child = spawn(
      process.execPath,
      [YOKE, 'serve', '--http', '127.0.0.1:0', '--oauth', as.issuer, '--json'],
      { cwd: project.dir, env: { ...process.env, NO_COLOR: '1', YOKE_HOME: project.home } },
    )
    let stdout = ''
    child.stdout!.on('data', (d) => (stdout += d))
    child.stderr!.on('data', (d) => (stderr += d))
    await until(
      () => `yoke serve to print its URL; stderr:\n${stderr}`,
      () => stdout.includes('\n'),
      {
        ms: 30_000,
      },
    )
    const info = JSON.parse(stdout.split('\n')[0]!)
    assert.equal(info.oauth.issuer, as.issuer)
    assert.equal(info.oauth.resources.skills, info.views.skills)
    assert.match(stderr, /the token is an OAuth access token from http:\/\/127\.0\.0\.1:\d+/)
    assert.ok(
      stderr.includes(`protected resource metadata: ${info.oauth.metadata.default}`),
      stderr,
    )
    assert.ok(!existsSync(join(project.home, 'mcp-token')), 'no static token was generated')
    as.resources[info.views.skills] = SCOPES
    const jwt = await tokenFor(as, callback.url, info.views.skills, 'mcp:math')
    const client = new ClientV2({ name: 'v2', version: '1' }, PIN)
    await client.connect(
      new HttpV2(new URL(info.views.skills), {
        requestInit: { headers: { Authorization: `Bearer ${jwt}` } },
      }),
    )
    assert.deepEqual(
      (await client.listTools()).tools.map((t) => t.name),
      ['skills_list'],
    )
    await client.close()
    const refused = await post(info.url, jwt)
    assert.equal(refused.status, 401, 'a token for the skills view is not one for the default view')
    // refused tokens of every kind, so whatever the gateway says of them is in its output
    const [head, body, signature] = jwt.split('.') as [string, string, string]
    const tampered = `${head}.${body}.${signature.slice(0, -4)}${signature.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`
    for (const [url, bad] of [
      [info.views.skills, tampered],
      [info.url, jwt],
      [info.url, 'opaque-0123456789abcdef'],
    ] as const)
      assert.equal((await post(url, bad)).status, 401)
    child.kill('SIGINT')
    await until('yoke serve to stop', () => child.exitCode !== null, { ms: 15_000 })
    for (const secret of [jwt.split('.')[2]!, tampered.split('.')[2]!, 'opaque-0123456789abcdef']) {
      assert.ok(!stdout.includes(secret), `a token on stdout:\n${stdout}`)
      assert.ok(!stderr.includes(secret), `a token on stderr:\n${stderr}`)
    }
  })
  it('refuses to start on 0.0.0.0 without oauth.resource, saying what to set', async () => {
    const run = await runYoke(
      ['serve', '--http', '0.0.0.0:0', '--oauth', 'https://auth.example.com'],
      { cwd: project.dir, home: project.home },
    )
    assert.equal(run.code, 2, run.stderr)
    assert.match(run.stderr, /config\.oauth\.resource: http\.host 0\.0\.0\.0 is every address/)
    assert.match(run.stderr, /set oauth\.resource to the URL clients reach the gateway at/)
  })
})

describe('yoke dev with the OAuth gateway: its log file', () => {
  let project: Project
  let as: AuthServer
  let callback: { server: Server; url: string }
  let dev: DevProcess | undefined
  before(async () => {
    as = await startAuthServer({ resources: { 'urn:yoke:scopes': SCOPES } })
    callback = await callbackServer()
    project = tempProject({
      'yoke.config.yaml': `preset: base
plugins:
  gateway:
    use: mcp-server
    config:
      oauth: { issuer: '${as.issuer}', scopes: { 'mcp:all': default } }
`,
    })
  })
  after(async () => {
    await dev?.stop()
    await as?.close()
    callback?.server.close()
    project?.cleanup()
  })

  it('refusals are in .yoke/logs/dev.log and the events, and no token is in them, stdout or stderr', async () => {
    dev = new DevProcess(['--log-level', 'debug'], { cwd: project.dir, home: project.home })
    const listening = await dev.next(
      (e) => e.type === 'log' && /^MCP endpoint http/.test(String(e.message)),
      30_000,
      0,
    )
    const url = /^MCP endpoint (\S+)/.exec(String(listening.message))![1]!
    as.resources[url] = SCOPES
    const good = await tokenFor(as, callback.url, url, 'mcp:all')
    const narrow = await tokenFor(as, callback.url, url, 'mcp:math')
    const [head, body, signature] = good.split('.') as [string, string, string]
    const tampered = `${head}.${body}.${signature.slice(0, -4)}${signature.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`
    assert.equal((await post(url, good)).status, 200)
    assert.equal((await post(url, narrow)).status, 403)
    assert.equal((await post(url, tampered)).status, 401)
    assert.equal((await post(url, 'opaque-0123456789abcdef')).status, 401)
    const file = join(project.dir, '.yoke', 'logs', 'dev.log')
    await until(
      'the refusals in the log file',
      () =>
        existsSync(file) &&
        (readFileSync(file, 'utf8').match(/refused \((401|403)\)/g) ?? []).length >= 3,
      { ms: 10_000 },
    )
    await dev.stop()
    const logged = readFileSync(file, 'utf8')
    assert.match(logged, /refused \(403\): Forbidden: the view default needs the scope mcp:all/)
    const events = dev.events.map((e) => JSON.stringify(e)).join('\n')
    assert.match(events, /refused \(401\)/, 'the debug events show the refusals too')
    for (const secret of [
      signature,
      narrow.split('.')[2]!,
      tampered.split('.')[2]!,
      'opaque-0123456789abcdef',
    ]) {
      assert.ok(!logged.includes(secret), 'a token in the log file')
      assert.ok(!events.includes(secret), 'a token in the events (stdout)')
      assert.ok(!dev.stderr.includes(secret), `a token on stderr:\n${dev.stderr}`)
    }
  })
})
