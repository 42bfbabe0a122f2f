// mcp-client with OAuth 2.1 against a real authorization server (oidc-provider, test/helpers/oidc.ts)
// and a real MCP server that checks its tokens with jose: 401 → discovery → login through the
// loopback redirect → tools; refresh before expiry and on a 401; a login racing a refresh; a revoked
// grant → waits naming `yoke mcp login`; insufficient_scope → step-up; SSRF refusals of the
// authorization-server client; no token leaks. No wait races a token lifetime: expiry is driven
// by the client's clock (the stored expiry) or by the server (ps.expireTokens()).
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chmodSync, mkdtempSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ServerAuth, type OAuthSettings } from '../../../plugins/mcp-client/oauth/client.ts'
import { login } from '../../../plugins/mcp-client/oauth/login.ts'
import {
  credentialKey,
  fileStore,
  type Credentials,
} from '../../../plugins/mcp-client/oauth/store.ts'
import {
  startProtectedServer,
  type ProtectedServer,
} from '../../fixtures/oauth/protected-server.ts'
import { mcpHarness, text, type McpHarness } from '../../helpers/mcp.ts'
import { startAuthServer, type AuthServer } from '../../helpers/oidc.ts'
import { removeTree } from '../../helpers/temp.ts'

process.env.YOKE_CREDENTIAL_STORE = 'file'

describe('mcp-client OAuth', () => {
  let as: AuthServer
  let ps: ProtectedServer
  let h: McpHarness
  let dir: string
  const storeFile = () => join(dir, '.home', 'mcp-credentials.json')
  const stored = () => fileStore(storeFile()).read(ps.url)
  const outputs: string[] = []
  /** every token the store held, checked against every output at the end */
  const secrets = new Set<string>()
  const remember = () => {
    const t = stored()?.tokens
    for (const s of [t?.access_token, t?.refresh_token]) if (s) secrets.add(s)
  }

  /** everything written to this process's stdout and stderr (the SDK's console.warn included) */
  const terminal: string[] = []
  const writes = { out: process.stdout.write, err: process.stderr.write }
  before(async () => {
    for (const [stream, original] of [
      [process.stdout, writes.out],
      [process.stderr, writes.err],
    ] as const)
      stream.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
        terminal.push(String(chunk))
        return (original as (...a: unknown[]) => boolean).call(stream, chunk, ...rest)
      }) as never
    dir = mkdtempSync(join(tmpdir(), 'yoke-oauth-'))
    as = await startAuthServer() // tokens live 300 s: nothing here expires by the wall clock
    ps = await startProtectedServer(as.issuer)
    as.resources[ps.url] = ['mcp:read', 'mcp:write']
    h = await mcpHarness(dir)
  })
  after(async () => {
    process.stdout.write = writes.out
    process.stderr.write = writes.err
    await h?.close()
    await ps?.close()
    await as?.close()
    await removeTree(dir)
  })

  const settings = (extra: Partial<OAuthSettings> = {}): OAuthSettings => ({
    scopes: ['mcp:read'],
    allowLoopback: true,
    ...extra,
  })
  const serverAuth = (extra?: Partial<OAuthSettings>, url = ps.url) =>
    new ServerAuth({ server: 'p', url, settings: settings(extra), store: fileStore(storeFile()) })
  /**
   * `yoke mcp login p`, the browser step driven through the loopback redirect. Its time limit only
   * catches a hang: the redirect is requested at once, but on a loaded machine the authorization
   * server's round trips (login, consent, the redirect) take seconds.
   */
  async function signIn(auth = serverAuth()) {
    const lines: string[] = []
    const done = login(auth, {
      timeoutMs: 60_000,
      headless: false,
      browser: false,
      say: (line) => {
        lines.push(line)
        outputs.push(line)
        const url = /^\s+(https?:\/\/\S+)$/.exec(line)?.[1]
        if (url) void as.authorize(url)
      },
    })
    await done
    remember()
    return lines
  }

  it('first connect: 401, waits naming yoke mcp login; login; tools listed and called', async () => {
    await h.add('p', {
      serverName: 'p',
      url: ps.url,
      protocol: 'legacy',
      oauth: { scopes: ['mcp:read'], allowLoopback: true },
      reconnect: { initialDelayMs: 50 },
    })
    await h.until('needs login', () => (h.status('p').state as string) === 'needs-login')
    assert.match(h.status('p').detail, /needs a sign-in.*yoke mcp login p/)
    const unavailable = await h.rt.call('mcp__p__whoami', {})
    assert.notEqual(unavailable.status, 'ok')

    const lines = await signIn()
    assert.ok(
      lines.some((l) => l.includes(`${as.issuer}/auth?`)),
      lines.join('\n'),
    )
    const record = stored()!
    assert.ok(record.tokens?.access_token && record.tokens.refresh_token)
    assert.equal(record.issuer, as.issuer)
    assert.equal(statSync(storeFile()).mode & 0o777, 0o600)

    await h.until('connected after login', () => h.status('p').state === 'connected')
    const whoami = await h.rt.call('mcp__p__whoami', {})
    assert.equal(whoami.status, 'ok', text(whoami))
    assert.equal(text(whoami), 'scopes: mcp:read')
    outputs.push(text(whoami), h.status('p').detail)
  })

  const tokenRequests = () => as.requests.filter((r) => r === 'POST /token').length

  it('a token near its expiry (by the stored expiry) is refreshed before the request', async () => {
    const before = stored()!
    const store = fileStore(storeFile())
    // 10 s left: inside the 30 s refresh window, while the server still accepts the token
    store.write({ ...before, expiresAt: Date.now() + 10_000 })
    const count = tokenRequests()
    const refused = ps.refused
    const whoami = await h.rt.call('mcp__p__whoami', {})
    assert.equal(whoami.status, 'ok', text(whoami))
    remember()
    outputs.push(text(whoami))
    assert.equal(tokenRequests(), count + 1, 'one refresh went to the token endpoint')
    assert.equal(ps.refused, refused, 'the refresh came before the request: no 401')
    assert.notEqual(stored()!.tokens!.access_token, before.tokens!.access_token)
    assert.ok(stored()!.expiresAt! > Date.now() + 60_000, 'the new expiry is stored')
  })

  it('a token the server calls expired (401) is refreshed and the call retried', async () => {
    const before = stored()!
    const count = tokenRequests()
    const refused = ps.refused
    ps.expireTokens()
    const whoami = await h.rt.call('mcp__p__whoami', {})
    assert.equal(whoami.status, 'ok', text(whoami))
    remember()
    outputs.push(text(whoami))
    assert.equal(ps.refused, refused + 1, 'one 401')
    assert.equal(tokenRequests(), count + 1, 'one refresh')
    assert.notEqual(stored()!.tokens!.access_token, before.tokens!.access_token)
    assert.equal(
      as.requests.filter((r) => r === 'GET /auth').length,
      1,
      'no second authorization request',
    )
  })

  it('insufficient scope: the call names the login, which asks for the wider scope (step-up)', async () => {
    const refused = await h.rt.call('mcp__p__write_note', {})
    assert.notEqual(refused.status, 'ok')
    assert.match(text(refused), /mcp:write.*yoke mcp login p/)
    outputs.push(text(refused))
    assert.match(stored()!.scope!, /mcp:write/)
    await signIn()
    assert.match(stored()!.tokens!.scope!, /mcp:write/)
    const written = await h.rt.call('mcp__p__write_note', {})
    assert.equal(written.status, 'ok', text(written))
    assert.equal(text(written), 'note written')
  })

  it('a login that finishes while a refresh is in flight keeps its tokens', async () => {
    const held = as.holdNext('POST /token')
    ps.expireTokens()
    const call = h.rt.call('mcp__p__whoami', {}) // 401 → a refresh, held at the token endpoint
    // the refresh arrives, or the call ends without one: that fails here, not as a hung file
    await Promise.race([
      held.arrived,
      call.then((r) => assert.fail(`the call ended before its refresh was held: ${text(r)}`)),
    ])
    await signIn() // `yoke mcp login` elsewhere stores a new grant's tokens meanwhile
    const loggedIn = stored()!.tokens!
    held.release()
    const whoami = await call
    assert.equal(whoami.status, 'ok', text(whoami))
    assert.equal(
      stored()!.tokens!.access_token,
      loggedIn.access_token,
      "the refresh's older result did not overwrite the login's",
    )
    outputs.push(text(whoami))
  })

  it('a revoked grant: the refresh fails and the server waits naming yoke mcp login', async () => {
    await as.revokeGrants()
    ps.expireTokens() // the server refuses the access token: the client must refresh, and cannot
    const result = await h.rt.call('mcp__p__whoami', {})
    assert.notEqual(result.status, 'ok')
    assert.match(text(result), /needs a sign-in.*yoke mcp login p/)
    outputs.push(text(result))
    await h.until('needs login', () => (h.status('p').state as string) === 'needs-login')
    assert.match(h.status('p').detail, /expired or was revoked.*yoke mcp login p/)
    assert.ok(!stored()!.tokens, 'the dead tokens are dropped')
    const registrations = as.requests.filter((r) => r === 'POST /reg').length
    await signIn()
    await h.until('connected again', () => h.status('p').state === 'connected')
    assert.equal((await h.rt.call('mcp__p__whoami', {})).status, 'ok')
    assert.equal(
      as.requests.filter((r) => r === 'POST /reg').length,
      registrations,
      'the running instance never registers a client',
    )
  })

  it('SSRF: an authorization server on 127.0.0.1 without allowLoopback is refused, nothing sent', async () => {
    await h.remove('p') // its refreshes would reach the authorization server meanwhile
    const sent = as.requests.length
    await assert.rejects(signIn(serverAuth({ allowLoopback: false })), (err: Error) => {
      outputs.push(err.message)
      return /refused.*127\.0\.0\.1.*allowLoopback/.test(err.message)
    })
    assert.equal(as.requests.length, sent, 'the authorization server received nothing')
  })

  it('SSRF: metadata that points registration or token requests at 169.254.169.254 is refused', async () => {
    const evil = createServer((req, res) => {
      const origin = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`
      if (req.url?.startsWith('/.well-known/')) {
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(
          JSON.stringify({
            issuer: origin,
            authorization_endpoint: `${origin}/authorize`,
            token_endpoint: 'https://169.254.169.254/latest/token',
            registration_endpoint: 'https://169.254.169.254/latest/register',
            response_types_supported: ['code'],
            code_challenge_methods_supported: ['S256'],
          }),
        )
      }
      // the "user" approves at once: back to the client's redirect with a code
      const asked = new URL(req.url!, origin).searchParams
      const back = new URL(asked.get('redirect_uri')!)
      back.searchParams.set('code', 'abc')
      back.searchParams.set('state', asked.get('state')!)
      res.writeHead(302, { location: back.href }).end()
    })
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve))
    const evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`
    const original = ps.authorizationServers
    ps.authorizationServers = [evilUrl]
    try {
      const refused = (what: RegExp) => (err: Error) => {
        outputs.push(err.message)
        return what.test(err.message) && /169\.254\.169\.254/.test(err.message)
      }
      // no client id: dynamic registration would go there
      await assert.rejects(signIn(serverAuth({}, ps.url)), refused(/refused/))
      // a pre-registered client: the code exchange would go there
      const lines: string[] = []
      await assert.rejects(
        login(serverAuth({ clientId: 'c1' }), {
          timeoutMs: 10_000,
          headless: false,
          browser: false,
          say: (line) => {
            lines.push(line)
            const url = /^\s+(https?:\/\/\S+)$/.exec(line)?.[1]
            if (url) void fetch(url, { redirect: 'follow' }).catch(() => {})
          },
        }),
        refused(/refused/),
      )
    } finally {
      ps.authorizationServers = original
      evil.close()
    }
  })

  it('the credentials file is refused when others may read it', () => {
    chmodSync(storeFile(), 0o644)
    try {
      assert.throws(
        () => fileStore(storeFile()).read(ps.url),
        (err: Error & { hint?: string }) =>
          /may be read by others \(mode 644\)/.test(err.message) && /chmod 600/.test(err.hint!),
      )
    } finally {
      chmodSync(storeFile(), 0o600)
    }
    assert.match(
      credentialKey('HTTP://127.0.0.1:80/mcp/'),
      /^http:\/\/127\.0\.0\.1\/mcp\|[0-9a-f]{16}$/,
    )
    assert.equal(credentialKey('http://127.0.0.1/mcp'), credentialKey('HTTP://127.0.0.1:80/mcp/'))
  })

  it('no token appears in any log, output, result, status or error', () => {
    const file = JSON.parse(readFileSync(storeFile(), 'utf8')) as {
      servers: Record<string, Credentials>
    }
    for (const c of Object.values(file.servers))
      for (const s of [c.tokens?.access_token, c.tokens?.refresh_token]) if (s) secrets.add(s)
    assert.ok(secrets.size >= 6, `${secrets.size} tokens seen`)
    const everything = [
      ...outputs,
      ...h.logs.map((l) => `${l.message} ${(l as { error?: Error }).error?.message ?? ''}`),
      JSON.stringify(h.hub.list()),
      ...terminal,
    ].join('\n')
    assert.ok(!everything.includes('[mcp-sdk]'), 'no SDK warning on the terminal')
    for (const secret of secrets) assert.ok(!everything.includes(secret), 'a token leaked')
    assert.ok(everything.includes('yoke mcp login p'), 'the outputs were collected')
  })
})
