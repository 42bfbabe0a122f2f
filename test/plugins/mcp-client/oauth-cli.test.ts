// `yoke mcp login --headless`, `yoke mcp auth status`, `yoke mcp logout` as real processes (the
// built bin) against a real authorization server (test/helpers/oidc.ts) and a protected MCP
// server: the test reads the printed URL, drives the consent as a browser on another machine
// would, and pipes the redirected URL back on stdin. The loopback mode's time limit ends with a
// clear error and stores nothing. No output of any command carries a token.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { Credentials } from '../../../plugins/mcp-client/oauth/store.ts'
import {
  startProtectedServer,
  type ProtectedServer,
} from '../../fixtures/oauth/protected-server.ts'
import { startAuthServer, type AuthServer } from '../../helpers/oidc.ts'
import { runYoke, tempProject, YOKE, type Project, type RunResult } from '../../helpers/project.ts'

const ENV = { YOKE_CREDENTIAL_STORE: 'file' }

describe('yoke mcp login / auth status / logout (the CLI)', () => {
  let as: AuthServer
  let ps: ProtectedServer
  let project: Project
  const outputs: string[] = []
  const credentialsFile = () => join(project.home, 'mcp-credentials.json')
  const storedServers = (): Record<string, Credentials> =>
    existsSync(credentialsFile())
      ? (
          JSON.parse(readFileSync(credentialsFile(), 'utf8')) as {
            servers: Record<string, Credentials>
          }
        ).servers
      : {}
  const secrets = new Set<string>()
  let client = ''
  const yoke = async (...args: string[]): Promise<RunResult> => {
    const result = await runYoke(args, { cwd: project.dir, home: project.home, env: ENV })
    outputs.push(result.stdout, result.stderr)
    return result
  }

  before(async () => {
    as = await startAuthServer()
    ps = await startProtectedServer(as.issuer)
    as.resources[ps.url] = ['mcp:read', 'mcp:write']
    project = tempProject({
      'yoke.config.yaml': `preset: base
plugins:
  mcp-p:
    use: mcp-client
    config:
      serverName: p
      url: ${ps.url}
      oauth: { scopes: [mcp:read], allowLoopback: true }
`,
    })
  })
  after(async () => {
    project?.cleanup()
    await ps?.close()
    await as?.close()
  })

  it('login --headless: the printed URL, the consent, the redirected URL on stdin', async () => {
    const child = spawn(process.execPath, [YOKE, 'mcp', 'login', 'p', '--headless'], {
      cwd: project.dir,
      env: { ...process.env, NO_COLOR: '1', YOKE_HOME: project.home, ...ENV },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
    const printed = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (d) => {
        stderr += d
        const url = /^\s+(http:\/\/\S+\/auth\?\S+)$/m.exec(stderr)?.[1]
        if (url && /paste the URL/.test(stderr)) resolve(url)
      })
      void exited.then(() => reject(new Error(`yoke exited before printing the URL:\n${stderr}`)))
    })
    const authorizeUrl = new URL(printed)
    assert.equal(authorizeUrl.searchParams.get('code_challenge_method'), 'S256')
    assert.equal(authorizeUrl.searchParams.get('resource'), ps.url)
    const redirected = await as.authorize(printed, { deliver: false })
    assert.match(redirected, /^http:\/\/127\.0\.0\.1:\d+\/callback\?code=/)
    child.stdin.end(`${redirected}\n`)
    const code = await exited
    clearTimeout(timer)
    outputs.push(stdout, stderr)
    assert.equal(code, 0, stderr)
    assert.match(
      stdout,
      /signed in to p \(scope mcp:read\); credentials in .*mcp-credentials\.json/,
    )

    const [record] = Object.values(storedServers())
    assert.ok(record?.tokens?.access_token && record.tokens.refresh_token, 'tokens stored')
    for (const s of [record.tokens.access_token, record.tokens.refresh_token!]) secrets.add(s)
    assert.equal(record.issuer, as.issuer)
    client = record.client!.client_id
  })

  it('auth status --json shows the entry, never a token', async () => {
    const status = await yoke('mcp', 'auth', 'status', '--json')
    assert.equal(status.code, 0, status.stderr)
    const { servers } = JSON.parse(status.stdout) as { servers: Record<string, unknown>[] }
    assert.deepEqual(
      servers.map(({ server, url, signedIn, issuer, refreshable }) => ({
        server,
        url,
        signedIn,
        issuer,
        refreshable,
      })),
      [{ server: 'p', url: ps.url, signedIn: true, issuer: as.issuer, refreshable: true }],
    )
    assert.match(String(servers[0]!.scope), /mcp:read/)
    assert.ok(!/token"\s*:/.test(status.stdout), 'no token field')
    // what else a user may paste into an issue: the composed config, the server list (a live
    // connection: `mcp list --fresh` starts the entry with the stored token)
    const printed = await yoke('config', 'print')
    assert.equal(printed.code, 0, printed.stderr)
    const listed = await yoke('mcp', 'list', '--fresh')
    assert.match(listed.stdout, /\bp\b/)
    const plain = await yoke('mcp', 'auth', 'status')
    assert.match(plain.stdout, /^p {2}signed in {2}issuer http:\/\/127\.0\.0\.1:\d+ {2}scope /m)
  })

  it('logout revokes at the authorization server and forgets the credentials', async () => {
    const refreshToken = [...secrets][1]!
    const result = await yoke('mcp', 'logout', 'p')
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /signed out of p \(revoked at its authorization server\)/)
    assert.ok(as.requests.includes('POST /token/revocation'), as.requests.join('\n'))
    assert.deepEqual(storedServers(), {})
    const status = JSON.parse((await yoke('mcp', 'auth', 'status', '--json')).stdout) as {
      servers: { signedIn: boolean }[]
    }
    assert.equal(status.servers[0]!.signedIn, false)
    // the revoked refresh token is dead at the authorization server
    const refresh = await fetch(`${as.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        client_id: client,
      }),
    })
    assert.equal(refresh.status, 400)
    assert.equal(((await refresh.json()) as { error: string }).error, 'invalid_grant')
    const again = await yoke('mcp', 'logout', 'p')
    assert.match(again.stdout, /no credentials were stored for p/)
  })

  it('the loopback mode ends after --timeout with a clear error, nothing stored', async () => {
    const result = await yoke('mcp', 'login', 'p', '--timeout', '1', '--no-browser')
    assert.equal(result.code, 1, result.stderr)
    assert.match(result.stderr, /Waiting for the redirect to http:\/\/127\.0\.0\.1:\d+\/callback/)
    assert.match(
      result.stderr,
      /signing in to MCP server "p" failed: no redirect arrived within 1 s/,
    )
    assert.match(result.stderr, /yoke mcp login p/)
    assert.deepEqual(storedServers(), {}, 'not even the registered client is kept')
  })

  it('no output of any command carries a token', () => {
    assert.equal(secrets.size, 2)
    const everything = outputs.join('\n')
    assert.ok(everything.includes('signed in to p'), 'the outputs were collected')
    for (const secret of secrets) assert.ok(!everything.includes(secret), 'a token leaked')
  })
})
