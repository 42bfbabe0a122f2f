// Holding an MCP server (mcp.hold / McpServerHandle.hold): the connection really ends (a stdio
// server's process, an HTTP server's session), its tools and the hub's resource and prompt tools
// go, nothing reconnects while any hold stands, and the last release connects it again as at start.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { McpServerStatus } from '../../../plugins/mcp/api.ts'
import { toPlugin, type Plugin } from '../../../src/index.ts'
import {
  alive,
  fixture,
  FIXTURE,
  mcpHarness,
  MODERN,
  text,
  type McpHarness,
} from '../../helpers/mcp.ts'
import { DevProcess, runYoke, tempProject, type Project } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

/** the pids a fixture server wrote to its MARK_FILE, one per process started */
const starts = (mark: string) =>
  existsSync(mark)
    ? [...readFileSync(mark, 'utf8').matchAll(/^start (\d+)/gm)].map((m) => Number(m[1]))
    : []

describe('holding an MCP server', () => {
  let h: McpHarness
  let dir: string
  const changes: McpServerStatus[] = []
  const toolsOf = (name: string) =>
    h.rt.list().filter((t) => t.name.startsWith(`mcp__${name}__`)).length
  before(async () => {
    // calls on a held server's tools end for the closed connection, not the runtime's unload grace
    h = await mcpHarness(undefined, { unloadGraceMs: 10_000 })
    dir = mkdtempSync(join(tmpdir(), 'yoke-mcp-hold-'))
    h.hub.hooks.change.tap('test', (s) => void changes.push(structuredClone(s)))
  })
  after(async () => {
    await h.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('a hold ends the process and unregisters the tools; it stays held until the last of two holds is released, then a new process connects', async () => {
    const mark = join(dir, 'counted.log')
    await h.add('counted', fixture('counted', 'normal', { env: { MARK_FILE: mark } }))
    const first = h.status('counted')
    assert.equal(first.state, 'connected')
    assert.equal(toolsOf('counted'), 6)
    const pid = first.pid!
    const seen = changes.length

    const releaseOne = h.hub.hold('counted', 'withdrawn: counted@1.0.0')!
    assert.equal(typeof releaseOne, 'function')
    const held = h.status('counted')
    assert.equal(held.state, 'held')
    assert.equal(held.detail, 'held: withdrawn: counted@1.0.0')
    assert.deepEqual(held.holds, ['withdrawn: counted@1.0.0'])
    assert.deepEqual(held.server, { name: 'fixture', version: '1.0.0' }, 'the last handshake')
    assert.equal(held.protocol?.era, first.protocol?.era)
    assert.equal(held.pid, undefined)
    await until('the held server process to end', () => !alive(pid))
    assert.equal(toolsOf('counted'), 0)
    // its tools are gone; a call of one says why (the hold), not UNKNOWN_TOOL
    const refused = await h.rt.call('mcp__counted__echo', { text: 'x' })
    assert.equal(refused.status, 'MCP_SERVER_HELD')
    assert.match(refused.error!.message, /withdrawn: counted@1\.0\.0/)
    assert.ok(
      changes.slice(seen).some((s) => s.name === 'counted' && s.state === 'held'),
      'hooks.change announced the hold',
    )

    const releaseTwo = h.hub.hold('counted', 'pin mismatch')!
    assert.equal(h.status('counted').detail, 'held: withdrawn: counted@1.0.0; pin mismatch')
    await releaseOne()
    await releaseOne() // idempotent: it does not release the other hold
    assert.equal(h.status('counted').state, 'held')
    assert.deepEqual(h.status('counted').holds, ['pin mismatch'])
    assert.ok(h.hub.restart('counted'), 'the server is there')
    assert.equal(h.status('counted').state, 'held', 'a restart does not reconnect a held server')
    assert.deepEqual(starts(mark), [pid], 'no process was started while held')

    const released = changes.length
    await releaseTwo()
    await h.until(
      'connected again with its tools',
      () => h.status('counted').state === 'connected' && toolsOf('counted') === 6,
    )
    const again = h.status('counted')
    assert.notEqual(again.pid, pid)
    assert.ok(alive(again.pid!))
    assert.deepEqual(starts(mark), [pid, again.pid], 'one fresh process')
    assert.equal(again.holds, undefined)
    assert.ok(
      changes.slice(released).some((s) => s.name === 'counted' && s.state === 'connected'),
      'hooks.change announced the release',
    )
    assert.equal(text(await h.rt.call('mcp__counted__echo', { text: 'back' })), 'back')
    await h.remove('counted')
  })

  it('a call in flight when the hold comes ends with SERVER_UNAVAILABLE saying it is held', async () => {
    await h.add('busy', fixture('busy', 'normal'))
    const call = h.rt.call('mcp__busy__sleep', { ms: 10_000 })
    await new Promise((resolve) => setTimeout(resolve, 150)) // under way (either way it ends so)
    const release = h.hub.hold('busy', 'withdrawn: busy@2')!
    const result = await call
    assert.equal(result.status, 'SERVER_UNAVAILABLE')
    assert.match(result.error!.message, /"busy" is unavailable, held: withdrawn: busy@2/)
    await release()
    await h.remove('busy')
  })

  it('a hold on a name no server has is undefined', () => {
    assert.equal(h.hub.hold('nobody', 'withdrawn'), undefined)
  })

  it('a hold while the first connection is under way abandons it: its process ends and the instance starts, held', async () => {
    const mark = join(dir, 'slow.log')
    const adding = h.add(
      'slow',
      fixture('slow', 'normal', {
        env: { MARK_FILE: mark, START_DELAY_MS: '60000' },
        startupMs: 30_000,
      }),
    )
    await h.until('its process to start', () => starts(mark).length === 1)
    const [pid] = starts(mark)
    await h.until('the server to join the hub', () => h.hub.get('slow') !== undefined)
    assert.equal(h.status('slow').state, 'connecting')
    const release = h.hub.hold('slow', 'withdrawn')!
    const fiber = await adding // it does not wait out the start
    assert.equal(fiber.state, 'active')
    await until('the abandoned process to end', () => !alive(pid!))
    assert.equal(h.status('slow').state, 'held')
    assert.ok(
      !h.logs.some((l) => l.level !== 'info' && l.level !== 'debug' && /"slow"/.test(l.message)),
      'a hold is not a failure',
    )
    await h.remove('slow')
    await release() // after the instance is gone: harmless
    assert.equal(starts(mark).length, 1)
  })

  it('a hold during a reconnect backoff stops the retries; the release reconnects with a full budget', async () => {
    const mark = join(dir, 'backoff.log')
    await h.add(
      'backoff',
      fixture('backoff', 'normal', {
        env: { MARK_FILE: mark },
        reconnect: { initialDelayMs: 200, maxDelayMs: 200, maxAttempts: 5 },
      }),
    )
    process.kill(h.status('backoff').pid!, 'SIGKILL')
    await h.until('reconnecting', () => h.status('backoff').state === 'reconnecting')
    const release = h.hub.hold('backoff', 'withdrawn')!
    assert.equal(h.status('backoff').state, 'held')
    assert.equal(h.status('backoff').attempt, 1)
    // a loaded machine may have been slow to see `reconnecting`: an attempt under way is abandoned
    const seen = starts(mark)
    await until('every process started so far to end', () => seen.every((pid) => !alive(pid)))
    // the backoff timer would have started a process within 200 ms: give it several times that
    await new Promise((resolve) => setTimeout(resolve, 800))
    assert.deepEqual(starts(mark), seen, 'no reconnect ran while held')
    assert.equal(h.status('backoff').state, 'held')
    await release()
    await h.until('connected again', () => h.status('backoff').state === 'connected')
    assert.equal(h.status('backoff').attempt, 0)
    assert.equal(starts(mark).length, seen.length + 1)
    await h.remove('backoff')
  })

  it('removing the instance while held is clean: no reconnect, no error', async () => {
    const mark = join(dir, 'gone.log')
    await h.add('gone', fixture('gone', 'normal', { env: { MARK_FILE: mark } }))
    const pid = h.status('gone').pid!
    const release = h.hub.hold('gone', 'withdrawn')!
    const errors = h.logs.filter((l) => l.level === 'error' || l.level === 'warn').length
    await h.remove('gone')
    assert.equal(h.hub.get('gone'), undefined)
    assert.ok(!alive(pid))
    await release()
    assert.equal(h.hub.hold('gone', 'again'), undefined, 'the name is gone with the instance')
    assert.deepEqual(starts(mark), [pid])
    assert.equal(h.logs.filter((l) => l.level === 'error' || l.level === 'warn').length, errors)
  })

  it('a hold taken through a plugin’s own mcp service is released when that plugin goes', async () => {
    const mark = join(dir, 'owned.log')
    await h.add('owned', fixture('owned', 'normal', { env: { MARK_FILE: mark } }))
    const holder = h.kernel.spawn(
      toPlugin({
        name: 'holder',
        inject: ['mcp'],
        apply: (ctx: any) => void ctx.mcp.hold('owned', 'held by a plugin'),
      }) as Plugin,
      {},
      { key: 'holder' },
    )
    await h.kernel.whenSettled(holder, 10_000)
    assert.equal(h.status('owned').state, 'held')
    await h.kernel.remove(holder)
    await h.until('connected again', () => h.status('owned').state === 'connected')
    assert.equal(starts(mark).length, 2)
    await h.remove('owned')
  })

  it("the hub's resource and prompt tools go while the only server that has them is held", async () => {
    await h.add('modern', { serverName: 'modern', command: process.execPath, args: [MODERN] })
    const hubTools = () => h.rt.list().filter((t) => /_mcp_(resource|prompt)/.test(t.name)).length
    assert.ok(hubTools() > 0, 'offered while connected')
    const release = h.hub.hold('modern', 'withdrawn')!
    assert.equal(hubTools(), 0)
    assert.equal(h.status('modern').server?.name !== undefined, true, 'its identity stays')
    await release()
    await h.until('offered again', () => h.status('modern').state === 'connected' && hubTools() > 0)
    await h.remove('modern')
  })

  it('a held HTTP server has its session ended (DELETE); the release opens a new one', async () => {
    const server = await sessionServer()
    try {
      await h.add('web', { serverName: 'web', url: server.url, ssrfGuard: false })
      const session = h.status('web').sessionId!
      assert.ok(session)
      const release = h.hub.hold('web', 'withdrawn')!
      await h.until('the session to be ended', () => server.deletes.includes(session))
      assert.equal(h.status('web').sessionId, undefined)
      await release()
      await h.until('connected again', () => h.status('web').state === 'connected')
      assert.notEqual(h.status('web').sessionId, session)
      await h.remove('web')
    } finally {
      await server.close()
    }
  })
})

/** A Streamable HTTP server with sessions (the SDK's transport), recording the DELETEs that end them. */
async function sessionServer() {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const deletes: string[] = []
  const http = createServer(async (req, res) => {
    const id = req.headers['mcp-session-id'] as string | undefined
    if (req.method === 'DELETE' && id) deletes.push(id)
    let transport = id ? sessions.get(id) : undefined
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sid) => void sessions.set(sid, transport!),
      })
      const server = new Server({ name: 'web', version: '2.0.0' }, { capabilities: { tools: {} } })
      server.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: [{ name: 'noop', inputSchema: { type: 'object' } }],
      }))
      await server.connect(transport)
    }
    await transport.handleRequest(req, res)
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    deletes,
    close: () => {
      http.closeAllConnections()
      return new Promise((resolve) => http.close(resolve))
    },
  }
}

describe('yoke mcp list and restart on a held server', () => {
  let project: Project
  let dev: DevProcess
  const yoke = (...args: string[]) =>
    runYoke([...args, '--cwd', project.dir], { cwd: project.dir, home: project.home })
  before(async () => {
    project = tempProject({
      // holds alpha once it has connected, for as long as it runs
      'holder.mjs': `export default {
  name: 'holder',
  inject: ['mcp'],
  apply(ctx) {
    let held
    // the hold announces itself on hooks.change at once: this tap is called again inside hold()
    const take = () => {
      if (held !== undefined || ctx.mcp.get('alpha')?.status().state !== 'connected') return
      held = null
      held = ctx.mcp.hold('alpha', 'withdrawn by the test')
    }
    ctx.tap(ctx.mcp.hooks.change, 'holder', take)
    take()
  },
}
`,
      'yoke.config.yaml': `plugins:\n  alpha:\n    use: mcp-client\n    config:\n      serverName: alpha\n      command: ${JSON.stringify(process.execPath)}\n      args: [${JSON.stringify(FIXTURE)}]\n  holder:\n    use: ./holder.mjs\n`,
    })
    dev = new DevProcess([], { cwd: project.dir, home: project.home })
    await dev.ready(30_000)
  })
  after(async () => {
    await dev.stop()
    project.cleanup()
  })

  it('list shows held with the why; restart refuses, naming it', async () => {
    let alpha: McpServerStatus | undefined
    await until(
      () => `alpha to be held; it is ${JSON.stringify(alpha)}`,
      async () => {
        const r = await yoke('mcp', 'list', '--json')
        alpha = (JSON.parse(r.stdout).servers as McpServerStatus[]).find((s) => s.name === 'alpha')
        return alpha?.state === 'held'
      },
      { ms: 15_000, every: 100 },
    )
    assert.equal(alpha!.detail, 'held: withdrawn by the test')
    assert.deepEqual(alpha!.server, { name: 'fixture', version: '1.0.0' })
    const listed = await yoke('mcp', 'list')
    assert.equal(listed.code, 0, listed.stderr)
    assert.match(listed.stdout, /alpha\s+held: withdrawn by the test\n/)
    const restart = await yoke('mcp', 'restart', 'alpha')
    assert.equal(restart.code, 1)
    assert.match(
      restart.stderr,
      /MCP_SERVER_HELD MCP server "alpha" is held \(withdrawn by the test\)/,
    )
    const json = await yoke('mcp', 'restart', 'alpha', '--json')
    assert.equal(JSON.parse(json.stdout).error.code, 'MCP_SERVER_HELD')
    const after = await yoke('mcp', 'list', '--json')
    const still = (JSON.parse(after.stdout).servers as McpServerStatus[]).find(
      (s) => s.name === 'alpha',
    )
    assert.equal(still?.state, 'held')
  })
})
