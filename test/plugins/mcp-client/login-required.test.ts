// A server that wants a sign-in, or cannot be reached, or is held, says so wherever the user looks:
// its state in `mcp list` (OAUTH_LOGIN_REQUIRED naming `yoke mcp login NAME`, not a reconnect
// loop that shows "HTTP 401"), a warning, and the answer to a call of one of its tools (the code
// that says why, never UNKNOWN_TOOL). A real authorization server (test/helpers/oidc.ts) and the
// SDK's real server behind it (test/fixtures/oauth/protected-server.ts); raw.mjs for stdio.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  startProtectedServer,
  type ProtectedServer,
} from '../../fixtures/oauth/protected-server.ts'
import { fixture, mcpHarness, raw, text, type McpHarness } from '../../helpers/mcp.ts'
import { startAuthServer, type AuthServer } from '../../helpers/oidc.ts'
import { tempProject, type Project } from '../../helpers/project.ts'

describe('a server that waits for a sign-in, or is held, says why', () => {
  let as: AuthServer
  let ps: ProtectedServer
  let project: Project
  let h: McpHarness
  const saved = process.env.YOKE_CREDENTIAL_STORE
  before(async () => {
    process.env.YOKE_CREDENTIAL_STORE = 'file'
    as = await startAuthServer()
    ps = await startProtectedServer(as.issuer)
    project = tempProject()
    h = await mcpHarness(project.dir)
  })
  after(async () => {
    await h?.close()
    await ps?.close()
    await as?.close()
    project?.cleanup()
    if (saved === undefined) delete process.env.YOKE_CREDENTIAL_STORE
    else process.env.YOKE_CREDENTIAL_STORE = saved
  })

  it('a 401 to an entry without oauth waits for a login, named, instead of reconnecting', async () => {
    await h.add('locked', { serverName: 'locked', url: ps.url, reconnect: { initialDelayMs: 50 } })
    const status = h.status('locked')
    assert.equal(status.state, 'needs-login', status.detail)
    assert.match(
      status.detail,
      /needs a sign-in .*HTTP 401.*`oauth: true`.*run `yoke mcp login locked`/,
    )
    assert.ok(
      h.logs.some((l) => l.level === 'warn' && /yoke mcp login locked/.test(l.message)),
      'a warning names the login',
    )
    // no reconnect loop: the server is not asked again and again
    const asked = ps.requests.length
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.equal(h.status('locked').state, 'needs-login')
    assert.ok(ps.requests.length <= asked + 1, `${ps.requests.length - asked} more requests`)
    // a call to one of its tools says so (its tools were never listed: known by the prefix)
    const called = await h.rt.call('mcp__locked__anything', {})
    assert.equal(called.status, 'OAUTH_LOGIN_REQUIRED', called.error?.message)
    assert.match(called.error!.message, /yoke mcp login locked/)
    await h.remove('locked')
  })

  it('an oauth entry with no credentials: a call of its tools is OAUTH_LOGIN_REQUIRED, not UNKNOWN_TOOL', async () => {
    await h.add('docs', { serverName: 'docs', url: ps.url, oauth: { allowLoopback: true } })
    assert.equal(h.status('docs').state, 'needs-login')
    const called = await h.rt.call('mcp__docs__read_note', {})
    assert.equal(called.status, 'OAUTH_LOGIN_REQUIRED', called.error?.message)
    assert.match(called.error!.message, /run `yoke mcp login docs`/)
    // a name of no server at all stays UNKNOWN_TOOL
    assert.equal((await h.rt.call('mcp__nobody__x', {})).status, 'UNKNOWN_TOOL')
    await h.remove('docs')
  })

  it('a held server: a call of a tool it listed is MCP_SERVER_HELD with the why', async () => {
    await h.add('kept', raw('kept', 'normal'))
    assert.equal(text(await h.rt.call('mcp__kept__echo', { text: 'x' })), 'x')
    const release = h.hub.hold('kept', 'a test holds it')!
    await h.until('held', () => h.status('kept').state === 'held')
    const called = await h.rt.call('mcp__kept__echo', { text: 'x' })
    assert.equal(called.status, 'MCP_SERVER_HELD', called.error?.message)
    assert.match(called.error!.message, /a test holds it/)
    release()
    await h.until('connected again', () => h.status('kept').state === 'connected')
    assert.equal(text(await h.rt.call('mcp__kept__echo', { text: 'back' })), 'back')
    await h.remove('kept')
  })

  it('a tool its entry leaves out, or one skipped for its schema, answers MCP_TOOL_LEFT_OUT with why', async () => {
    await h.add(
      'picky',
      raw('picky', 'deep', { disabledTools: ['pid'], env: { DEEP_LEVELS: '100' } }),
    )
    assert.equal(h.status('picky').state, 'connected')
    const pid = await h.rt.call('mcp__picky__pid', {})
    assert.equal(pid.status, 'MCP_TOOL_LEFT_OUT', pid.error?.message)
    assert.match(
      pid.error!.message,
      /"pid", but yoke left it out: its entry leaves it out .*disabledTools: \["pid"\]/,
    )
    const deep = await h.rt.call('mcp__picky__deep', {})
    assert.equal(deep.status, 'MCP_TOOL_LEFT_OUT', deep.error?.message)
    assert.match(
      deep.error!.message,
      /"deep", but yoke left it out: its definition is nested deeper than 64 levels/,
    )
    // a name the server never listed is still unknown
    assert.equal((await h.rt.call('mcp__picky__nothing', {})).status, 'UNKNOWN_TOOL')
    await h.remove('picky')
    await h.add('schemas', fixture('schemas', 'deep'))
    const redos = await h.rt.call('mcp__schemas__redos', { s: 'b' })
    assert.equal(redos.status, 'MCP_TOOL_LEFT_OUT', redos.error?.message)
    assert.match(redos.error!.message, /"redos", but yoke left it out: .*lookbehind/)
    await h.remove('schemas')
  })

  it('an instance that failed to start: a call of its tools answers its failure, not UNKNOWN_TOOL', async () => {
    const fiber = await h.add('broken', {
      serverName: 'broken',
      command: process.execPath,
      args: ['-e', 'process.exit(3)'],
      failOnStartupError: true,
    })
    assert.equal(fiber.state, 'failed')
    const called = await h.rt.call('mcp__broken__anything', {})
    assert.equal(called.status, fiber.error?.code, called.error?.message)
    assert.notEqual(called.status, 'UNKNOWN_TOOL')
    assert.match(called.error!.message, /MCP server "broken" could not start/)
    await h.remove('broken')
  })

  it('a server that gave up: a call of its tools is SERVER_UNAVAILABLE with its state', async () => {
    await h.add('gone', {
      serverName: 'gone',
      command: process.execPath,
      args: ['-e', 'process.exit(3)'],
      reconnect: { maxAttempts: 0 },
    })
    assert.equal(h.status('gone').state, 'gave-up')
    const called = await h.rt.call('mcp__gone__anything', {})
    assert.equal(called.status, 'SERVER_UNAVAILABLE', called.error?.message)
    assert.match(called.error!.message, /gave up/)
    await h.remove('gone')
  })
})
