// The OAuth client's answers to the security review (issue 20): refreshes serialised across
// processes and ServerAuth objects (one rotating refresh token is redeemed once), an outage that
// is not a sign-in, PKCE S256 required, a resource always sent, the RFC 9207 iss and the state
// checked, only https authorization URLs printed, the SSRF client on every authorization-server
// request (the server's own origin too, with ssrfGuard; redirects refused) with a listener on
// 127.0.0.2 that counts what reached it, https required for an oauth entry, and the SDK's
// warnings kept off the terminal. A hand-written server (fixtures/oauth/fake-as.ts) plays the
// authorization server; nothing waits on a clock.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, beforeEach, describe, it } from 'node:test'
import type { ServerResponse } from 'node:http'
import { mcpClientConfig } from '../../../plugins/mcp-client/api.ts'
import { ServerAuth, type OAuthSettings } from '../../../plugins/mcp-client/oauth/client.ts'
import { login } from '../../../plugins/mcp-client/oauth/login.ts'
import { fileStore, type CredentialStore } from '../../../plugins/mcp-client/oauth/store.ts'
import { startFakeAs, type FakeAs } from '../../fixtures/oauth/fake-as.ts'
import { ROOT } from '../../helpers/project.ts'

describe('mcp-client OAuth: the review fixes', { timeout: 30_000 }, () => {
  let fake: FakeAs
  let dir: string
  let file: string
  /** a TCP listener on 127.0.0.2 that counts connections: "nothing was sent there" */
  let counted: Server
  let hits = 0
  const countedPort = () => (counted.address() as AddressInfo).port
  /** the fake's own token answer (fresh tokens), for a test that changed it */
  let defaultToken: FakeAs['token']

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'yoke-oauth-fix-'))
    counted = createTcpServer((socket) => {
      hits++
      socket.destroy()
    })
    await new Promise<void>((resolve) => counted.listen(0, '127.0.0.2', resolve))
  })
  beforeEach(async () => {
    await fake?.close()
    fake = await startFakeAs()
    defaultToken = fake.token
    file = join(dir, `${Math.random().toString(36).slice(2)}.json`)
    hits = 0
  })
  after(async () => {
    await fake?.close()
    counted.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const serverAuth = (
    extra: Partial<OAuthSettings> = {},
    options: { url?: string; ssrfGuard?: boolean; store?: CredentialStore } = {},
  ) =>
    new ServerAuth({
      server: 'e',
      url: options.url ?? fake.url,
      settings: { scopes: [], allowLoopback: true, clientId: 'c1', ...extra },
      store: options.store ?? fileStore(file),
      ssrfGuard: options.ssrfGuard,
    })
  /** a login whose "browser" follows the printed URL (after `first`, when given) */
  async function signIn(auth = serverAuth(), first?: (url: string) => Promise<void>) {
    const lines: string[] = []
    await login(auth, {
      timeoutMs: 10_000,
      headless: false,
      browser: false,
      say: (line) => {
        lines.push(line)
        const url = /^\s+(https?:\/\/\S+)$/.exec(line)?.[1]
        if (url)
          void (async () => {
            await first?.(url)
            await fetch(url).then((r) => r.body?.cancel())
          })().catch(() => {})
      },
    })
    return lines
  }
  const printedUrl = (lines: string[]) => lines.some((l) => /^\s+\w+:/.test(l))

  it('PKCE: metadata without code_challenge_methods_supported is refused, no URL printed', async () => {
    delete fake.metadata.code_challenge_methods_supported
    const lines: string[] = []
    await assert.rejects(
      login(serverAuth(), {
        timeoutMs: 10_000,
        headless: false,
        browser: false,
        say: (l) => lines.push(l),
      }),
      /does not advertise PKCE S256/,
    )
    assert.ok(!printedUrl(lines), lines.join('\n'))
    assert.ok(!fake.requests.includes('GET /authorize'))
  })

  it('resource: without protected resource metadata the canonical server URL is sent', async () => {
    fake.prm = null
    let authorizeUrl = ''
    await signIn(serverAuth(), async (url) => void (authorizeUrl = url))
    assert.equal(new URL(authorizeUrl).searchParams.get('resource'), fake.url)
    assert.equal(fake.tokenBodies[0]!.get('resource'), fake.url)
  })

  it('RFC 9207: a redirect whose iss is another server is refused before the code is redeemed', async () => {
    fake.metadata.authorization_response_iss_parameter_supported = true
    fake.iss = 'https://evil.example'
    await assert.rejects(signIn(), (err: Error) => /signing in .* failed/.test(err.message))
    assert.ok(!fake.requests.includes('POST /token'), 'no code exchange')
    assert.equal(fileStore(file).read(fake.url), undefined, 'nothing stored')
  })

  it('a hit on the callback without this login’s state is ignored; the real redirect completes it', async () => {
    let foreign = 0
    await signIn(serverAuth(), async (url) => {
      const callback = new URL(new URL(url).searchParams.get('redirect_uri')!)
      callback.search = '?error=access_denied&state=not-this-login'
      foreign = (await fetch(callback)).status
    })
    assert.equal(foreign, 400)
    assert.ok(fileStore(file).read(fake.url)?.tokens?.access_token, 'signed in')
  })

  it('headless: a pasted URL with another state is refused', async () => {
    await assert.rejects(
      login(serverAuth(), {
        timeoutMs: 10_000,
        headless: true,
        browser: false,
        say: () => {},
        readLine: async () => 'http://127.0.0.1:1/callback?code=x&state=stale',
      }),
      /does not carry the state of this login/,
    )
    assert.ok(!fake.requests.includes('POST /token'))
  })

  it('an authorization URL that is not https is neither printed nor opened', async () => {
    fake.metadata.authorization_endpoint = 'http://evil.example/authorize&calc.exe&'
    const lines: string[] = []
    await assert.rejects(
      login(serverAuth(), {
        timeoutMs: 10_000,
        headless: false,
        browser: true,
        say: (l) => lines.push(l),
      }),
      /is not printed or opened: OAuth needs https/,
    )
    assert.ok(!printedUrl(lines), lines.join('\n'))
  })

  it('an outage at the token endpoint during a refresh keeps the grant and is not a sign-in', async () => {
    await signIn()
    const before = fileStore(file).read(fake.url)!
    fake.token = (_form, res) =>
      void res.writeHead(503, { 'content-type': 'text/html' }).end('<h1>maintenance</h1>')
    const stderr: string[] = []
    const write = process.stderr.write.bind(process.stderr)
    process.stderr.write = ((chunk: string) => (stderr.push(String(chunk)), true)) as never
    let failure: Error & { code?: string }
    try {
      failure = await serverAuth()
        .refresh()
        .then(
          () => assert.fail('the refresh succeeded'),
          (err: Error) => err,
        )
    } finally {
      process.stderr.write = write
    }
    assert.equal(failure.code, 'OAUTH_UNAVAILABLE', failure.message)
    assert.ok(!failure.message.includes('maintenance'), failure.message)
    assert.ok(!stderr.join('').includes('maintenance'), 'no raw body on the terminal')
    const after = fileStore(file).read(fake.url)!
    assert.equal(after.tokens?.refresh_token, before.tokens!.refresh_token, 'the grant is kept')
    assert.equal(after.grantLostAt, undefined)
    fake.token = defaultToken // the server is back: the same grant refreshes
    await serverAuth().refresh()
    assert.notEqual(
      fileStore(file).read(fake.url)!.tokens!.access_token,
      before.tokens!.access_token,
    )
  })

  it('invalid_grant drops the tokens (needs a sign-in); invalid_client registers nothing', async () => {
    await signIn()
    fake.token = (_form, res) =>
      void res
        .writeHead(400, { 'content-type': 'application/json' })
        .end('{"error":"invalid_grant"}')
    await assert.rejects(serverAuth().refresh(), (err: Error & { code?: string }) => {
      return err.code === 'OAUTH_LOGIN_REQUIRED' && /expired or was revoked/.test(err.message)
    })
    const lost = fileStore(file).read(fake.url)!
    assert.equal(lost.tokens, undefined)
    assert.ok(lost.grantLostAt)

    fake.token = defaultToken
    await signIn()
    fake.metadata.registration_endpoint = `${fake.origin}/register`
    fake.token = (_form, res) =>
      void res
        .writeHead(401, { 'content-type': 'application/json' })
        .end('{"error":"invalid_client"}')
    const sent = fake.requests.length
    await assert.rejects(serverAuth().refresh(), /no longer accepts yoke's client/)
    assert.ok(
      !fake.requests.slice(sent).includes('POST /register'),
      'a running instance never registers',
    )
  })

  /** refresh tokens rotate, and a reused one is refused as invalid_grant (as oidc-provider does) */
  function rotating() {
    const redeemed = new Set<string>()
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let arrived!: () => void
    const first = new Promise<void>((resolve) => (arrived = resolve))
    let count = 0
    fake.token = async (form: URLSearchParams, res: ServerResponse) => {
      const token = form.get('refresh_token')
      if (form.get('grant_type') === 'refresh_token') {
        if (count++ === 0) {
          arrived()
          await held
        }
        if (redeemed.has(token!))
          return void res
            .writeHead(400, { 'content-type': 'application/json' })
            .end('{"error":"invalid_grant"}')
        redeemed.add(token!)
      }
      defaultToken(form, res)
    }
    return { first, release, refreshes: () => count }
  }

  it('two ServerAuth objects on one store: one refresh, both keep the new tokens', async () => {
    await signIn()
    const rotation = rotating()
    const p1 = serverAuth()
    const store2 = fileStore(file)
    let waiting!: () => void
    const secondWaits = new Promise<void>((resolve) => (waiting = resolve))
    const exclusive = store2.exclusive
    store2.exclusive = (url, fn) => {
      waiting()
      return exclusive(url, fn)
    }
    const p2 = serverAuth({}, { store: store2 })
    const one = p1.refresh()
    await rotation.first // p1 holds the lock, its token request held at the server
    const two = p2.refresh()
    await secondWaits
    rotation.release()
    const results = await Promise.allSettled([one, two])
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled'],
      String(results.map((r) => (r as PromiseRejectedResult).reason?.message)),
    )
    assert.equal(rotation.refreshes(), 1, 'the second read the first one’s tokens')
    const stored = fileStore(file).read(fake.url)!
    assert.ok(stored.tokens?.access_token && !stored.grantLostAt)
    await serverAuth().refresh() // the grant survived: its current refresh token works
  })

  it('two processes refreshing one record: one token request, both succeed', async () => {
    await signIn()
    const rotation = rotating()
    const child = () => {
      const proc = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          '--conditions=yoke-source',
          join(ROOT, 'test/fixtures/oauth/refresh-child.ts'),
          file,
          fake.url,
          'c1',
        ],
        { cwd: ROOT, env: { ...process.env, YOKE_CREDENTIAL_STORE: 'file' } },
      )
      let out = ''
      proc.stdout.on('data', (d) => (out += d))
      proc.stderr.on('data', (d) => (out += d))
      const ready = new Promise<void>((resolve) =>
        proc.stdout.on('data', () => /ready/.test(out) && resolve()),
      )
      const done = new Promise<string>((resolve) => proc.on('exit', () => resolve(out)))
      return { ready, done, kill: () => proc.kill('SIGKILL') }
    }
    const [a, b] = [child(), child()]
    try {
      await Promise.all([a.ready, b.ready])
      await Promise.race([
        rotation.first,
        a.done.then((o) => assert.fail(`a ended: ${o}`)),
        b.done.then((o) => assert.fail(`b ended: ${o}`)),
      ])
      rotation.release()
      const outs = await Promise.all([a.done, b.done])
      for (const out of outs) assert.match(out, /refreshed/, out)
      assert.equal(rotation.refreshes(), 1)
      assert.ok(fileStore(file).read(fake.url)!.tokens?.access_token)
    } finally {
      a.kill()
      b.kill()
    }
  })

  it('ssrfGuard + oauth: the server’s own origin on 127.0.0.2 or 169.254.169.254 is refused, nothing sent', async () => {
    const guarded = `https://127.0.0.2:${countedPort()}/mcp`
    await assert.rejects(
      signIn(serverAuth({ allowLoopback: false }, { url: guarded, ssrfGuard: true })),
      /refused to connect to https:\/\/127\.0\.0\.2.*private, loopback or reserved/,
    )
    await assert.rejects(
      signIn(
        serverAuth(
          { allowLoopback: false },
          { url: 'https://169.254.169.254/mcp', ssrfGuard: true },
        ),
      ),
      /refused to connect to https:\/\/169\.254\.169\.254/,
    )
    assert.equal(hits, 0, 'nothing reached 127.0.0.2')
    // the user's own entry (ssrfGuard off) reaches its own host where the transport does
    await signIn(serverAuth({ allowLoopback: false }, { url: guarded })).catch(() => {})
    assert.ok(hits > 0, 'the counting listener does count')
  })

  it('metadata pointing token or registration requests at metadata or private addresses is refused', async () => {
    fake.metadata.token_endpoint = 'https://169.254.169.254/latest/token'
    await assert.rejects(signIn(), /refused to connect to https:\/\/169\.254\.169\.254/)
    fake.metadata.registration_endpoint = 'https://[fd00:ec2::254]/register'
    await assert.rejects(signIn(serverAuth({ clientId: undefined })), /fd00:ec2::254/)
    assert.ok(!fake.requests.includes('POST /token'))
  })

  it('a redirect from the server’s own token endpoint is refused, nothing sent where it points', async () => {
    fake.token = (_form, res) =>
      void res.writeHead(307, { location: `http://127.0.0.2:${countedPort()}/steal` }).end()
    await assert.rejects(signIn(), /redirects are refused/)
    assert.equal(hits, 0)
  })

  it('an oauth entry needs https (plain http only to loopback with allowLoopback)', () => {
    const parse = (url: string, oauth: unknown) =>
      mcpClientConfig.safeParse({ serverName: 'e', url, oauth })
    const refused = parse('http://remote.example/mcp', true)
    assert.ok(!refused.success)
    assert.match(refused.error!.issues[0]!.message, /OAuth needs https/)
    assert.ok(!parse('http://127.0.0.1:9/mcp', true).success)
    assert.ok(parse('http://127.0.0.1:9/mcp', { allowLoopback: true }).success)
    assert.ok(!parse('http://remote.example/mcp', { allowLoopback: true }).success)
    assert.ok(parse('https://remote.example/mcp', true).success)
    assert.ok(parse('http://remote.example/mcp', false).success, 'no oauth: the user’s choice')
  })

  it("the SDK's warnings go to the instance's log, without a raw body, never to the terminal", () => {
    const logged: string[] = []
    const auth = new ServerAuth({
      server: 'e',
      url: fake.url,
      settings: { scopes: [], allowLoopback: true },
      store: fileStore(file),
      log: (m) => logged.push(m),
    })
    const stderr: string[] = []
    const write = process.stderr.write.bind(process.stderr)
    process.stderr.write = ((chunk: string) => (stderr.push(String(chunk)), true)) as never
    try {
      console.warn('[mcp-sdk] Could not refresh. Cause: "HTTP 500. Raw body: {"token":"SECRET"}"')
    } finally {
      process.stderr.write = write
      auth.close()
    }
    assert.equal(stderr.join(''), '')
    assert.equal(logged.length, 1)
    assert.match(logged[0]!, /Could not refresh/)
    assert.ok(!logged[0]!.includes('SECRET'))
  })
})
