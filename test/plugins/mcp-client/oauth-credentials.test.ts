// The OAuth credentials file as outside data, through the real CLI (bin/yoke.js): a FIFO in its
// place, a file of the wrong shape, one bad entry beside a good one, a 200 MB sparse file, and a
// symlink to where the tokens really are. Each ends with a coded error or the right answer, never
// a hang, a raw TypeError/RangeError, or "signed out" while the tokens stay.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import {
  lstatSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { credentialKey } from '../../../plugins/mcp-client/oauth/store.ts'
import { runYoke, suiteProjects, type Project } from '../../helpers/project.ts'

const project = suiteProjects()
const ENV = { YOKE_CREDENTIAL_STORE: 'file' }
// nothing listens here: no command below needs the server itself
const URL_P = 'http://127.0.0.1:9/mcp'
const URL_Q = 'http://127.0.0.1:9/other'
const CONFIG = `preset: base
plugins:
  mcp-p:
    use: mcp-client
    config:
      serverName: p
      url: ${URL_P}
      oauth: { allowLoopback: true }
      reconnect: { maxAttempts: 0 }
  mcp-q:
    use: mcp-client
    config:
      serverName: q
      url: ${URL_Q}
      oauth: { allowLoopback: true }
      reconnect: { maxAttempts: 0 }
`
const record = (url: string, extra: Record<string, unknown> = {}) => ({
  url,
  tokens: { access_token: `at-${url}`, token_type: 'Bearer', refresh_token: `rt-${url}` },
  expiresAt: Date.now() + 3_600_000,
  savedAt: Date.now(),
  ...extra,
})
const store = (servers: Record<string, unknown>) =>
  `${JSON.stringify({ version: 1, servers }, null, 2)}\n`

function setup(): Project & { file: string } {
  const p = project({ 'yoke.config.yaml': CONFIG })
  return Object.assign(p, { file: join(p.home, 'mcp-credentials.json') })
}
const yoke = (p: Project, ...args: string[]) =>
  runYoke(args, { cwd: p.dir, home: p.home, env: ENV, timeoutMs: 60_000 })
const noRawCrash = (text: string) => assert.doesNotMatch(text, /TypeError|RangeError|\n\s+at /)

describe('the credentials file, read as outside data', () => {
  it('a FIFO in its place: auth status and mcp list --fresh end with CREDENTIALS_UNREADABLE, never block', async () => {
    const p = setup()
    execFileSync('mkfifo', ['-m', '600', p.file])
    const status = await yoke(p, 'mcp', 'auth', 'status')
    assert.equal(status.code, 1, status.stderr)
    assert.match(
      status.stdout,
      /^p {2}CREDENTIALS_UNREADABLE .*mcp-credentials\.json .*not a regular file \(a FIFO\)/m,
    )
    assert.match(status.stdout, /^q {2}CREDENTIALS_UNREADABLE/m)
    noRawCrash(status.stdout + status.stderr)
    const listed = await yoke(p, 'mcp', 'list', '--fresh')
    assert.match(listed.stdout, /\bp\b/)
    assert.match(listed.stdout + listed.stderr, /not a regular file \(a FIFO\)/)
  })

  it('"servers": null is CREDENTIALS_UNREADABLE naming the field, not a TypeError', async () => {
    const p = setup()
    writeFileSync(p.file, JSON.stringify({ version: 1, servers: null }), { mode: 0o600 })
    const status = await yoke(p, 'mcp', 'auth', 'status', '--json')
    assert.equal(status.code, 1, status.stderr)
    const rows = JSON.parse(status.stdout).servers
    assert.equal(rows[0].error.code, 'CREDENTIALS_UNREADABLE')
    assert.match(rows[0].error.message, /servers: /)
    noRawCrash(status.stdout + status.stderr)
    const logout = await yoke(p, 'mcp', 'logout', 'p')
    assert.equal(logout.code, 1)
    assert.match(logout.stderr, /CREDENTIALS_UNREADABLE/)
    assert.doesNotMatch(logout.stdout, /signed out/)
    noRawCrash(logout.stderr)
  })

  it('a bad entry ("expiresAt": "soon") costs its own server only; the other stays signed in', async () => {
    const p = setup()
    const servers = {
      [credentialKey(URL_P)]: record(URL_P, { expiresAt: 'soon' }),
      [credentialKey(URL_Q)]: record(URL_Q),
    }
    writeFileSync(p.file, store(servers), { mode: 0o600 })
    const status = await yoke(p, 'mcp', 'auth', 'status')
    assert.equal(status.code, 1)
    assert.match(
      status.stdout,
      /^p {2}CREDENTIALS_UNREADABLE .*its entry .* is not valid \(expiresAt: /m,
    )
    assert.match(status.stdout, /^q {2}signed in .*access token until \d{4}-/m)
    noRawCrash(status.stdout + status.stderr)
    // logout removes the bad entry as any other, and leaves q's
    const logout = await yoke(p, 'mcp', 'logout', 'p')
    assert.equal(logout.code, 0, logout.stderr)
    assert.match(logout.stdout, /signed out of p/)
    const left = JSON.parse(readFileSync(p.file, 'utf8')).servers
    assert.deepEqual(Object.keys(left), [credentialKey(URL_Q)])
  })

  it('a 200 MB file is refused by its size without being read', async () => {
    const p = setup()
    writeFileSync(p.file, '', { mode: 0o600 })
    truncateSync(p.file, 200 * 1024 * 1024) // sparse: no disk used
    const status = await yoke(p, 'mcp', 'auth', 'status', '--json')
    assert.equal(status.code, 1)
    const [row] = JSON.parse(status.stdout).servers
    assert.equal(row.error.code, 'CREDENTIALS_UNREADABLE')
    assert.match(row.error.message, /over 1 MiB/)
  })

  it('logout through a symlinked file removes the tokens from its target and keeps the link', async () => {
    const p = setup()
    const real = join(p.dir, 'vault', 'creds.json')
    mkdirSync(join(p.dir, 'vault'), { mode: 0o700 })
    const servers = {
      [credentialKey(URL_P)]: record(URL_P),
      [credentialKey(URL_Q)]: record(URL_Q),
    }
    writeFileSync(real, store(servers), { mode: 0o600 })
    symlinkSync(real, p.file)
    const logout = await yoke(p, 'mcp', 'logout', 'p')
    assert.equal(logout.code, 0, logout.stderr)
    assert.match(logout.stdout, /signed out of p/)
    assert.ok(lstatSync(p.file).isSymbolicLink(), 'the link is still a link')
    const text = readFileSync(real, 'utf8')
    assert.doesNotMatch(text, new RegExp(`at-${URL_P}|rt-${URL_P}`.replace(/[./]/g, '\\$&')))
    assert.deepEqual(Object.keys(JSON.parse(text).servers), [credentialKey(URL_Q)])
    assert.equal(lstatSync(real).mode & 0o777, 0o600)
    const status = await yoke(p, 'mcp', 'auth', 'status', '--json')
    const rows = JSON.parse(status.stdout).servers as Array<{ server: string; signedIn: boolean }>
    assert.deepEqual(
      rows.map((r) => [r.server, r.signedIn]),
      [
        ['p', false],
        ['q', true],
      ],
    )
  })
})
