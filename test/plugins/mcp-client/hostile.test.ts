// mcp-client against servers that get things wrong or overreach, each a real process: a server
// that widens its sandbox from roots/list (as server-filesystem does), tools/list answers the
// SDK's schema would refuse whole (raw JSON-RPC frames, no SDK), lists over the tool cap, messages
// over the size cap, a line that is not JSON in the middle of a session, risk from annotations
// (server-memory from npm), timer-range config, and URLs imported from someone else's file.
import assert from 'node:assert/strict'
import { realpathSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { mcpClientConfig, totalCallMs, MAX_TIMER_MS } from '../../../plugins/mcp-client/config.ts'
import { importText } from '../../../plugins/mcp-client/import.ts'
import { riskOf } from '../../../plugins/mcp-client/tools.ts'
import policyPlugin from '../../../plugins/policy/index.ts'
import { tapHook, toPlugin, validateConfig, type Plugin } from '../../../src/index.ts'
import {
  FILESYSTEM,
  FS_LIKE,
  MEMORY,
  mcpHarness,
  raw,
  text,
  type McpHarness,
} from '../../helpers/mcp.ts'
import { tempProject, type Project } from '../../helpers/project.ts'

describe("roots are the user's choice: a server's sandbox is never widened", () => {
  let h: McpHarness
  let project: Project
  let sub: string
  before(async () => {
    project = tempProject({
      'secret.txt': 'the whole project\n',
      'sub/visible.txt': 'inside sub\n',
      'sub/inner/deep.txt': 'inside inner\n',
    })
    sub = realpathSync(project.path('sub'))
    h = await mcpHarness(realpathSync(project.dir))
  })
  after(async () => {
    await h.close()
    project.cleanup()
  })
  // a server that replaces the directories of its command line with the client's roots
  const fsLike = (serverName: string, extra: Record<string, unknown> = {}) => ({
    serverName,
    command: process.execPath,
    args: [FS_LIKE, sub],
    ...extra,
  })
  const allowed = async (server: string) =>
    text(await h.rt.call(`mcp__${server}__list_allowed_directories`, {}))
      .split('\n')
      .slice(1)
  const read = (server: string, path: string) =>
    h.rt.call(`mcp__${server}__read_text_file`, { path })

  it('by default no roots are declared: the directory it was started with stays its only one', async () => {
    await h.add('fs', fsLike('fs'))
    assert.equal(h.status('fs').state, 'connected')
    assert.deepEqual(await allowed('fs'), [sub])
    const outside = await read('fs', project.path('secret.txt'))
    assert.equal(outside.status, 'TOOL_ERROR')
    assert.match(text(outside), /Access denied/)
    assert.equal(text(await read('fs', project.path('sub/visible.txt'))), 'inside sub\n')
    await h.remove('fs')
  })

  it('the real server-filesystem keeps the directory it was started with: yoke never widens it', async () => {
    await h.add('realfs', {
      serverName: 'realfs',
      command: process.execPath,
      args: [FILESYSTEM, sub],
    })
    assert.equal(h.status('realfs').state, 'connected')
    assert.deepEqual(await allowed('realfs'), [sub])
    assert.match(
      text(await read('realfs', project.path('secret.txt'))),
      /Access denied|outside allowed/i,
    )
    assert.equal(text(await read('realfs', project.path('sub/visible.txt'))), 'inside sub\n')
    await h.remove('realfs')
  })

  it('roots listed in the entry are what it gets, relative to the project directory', async () => {
    await h.add('narrow', fsLike('narrow', { roots: ['sub/inner'] }))
    // the server asks roots/list once initialized (and answers calls once it has the answer)
    assert.deepEqual(await allowed('narrow'), [`${sub}/inner`])
    assert.match(text(await read('narrow', project.path('sub/visible.txt'))), /Access denied/)
    assert.equal(text(await read('narrow', project.path('sub/inner/deep.txt'))), 'inside inner\n')
    await h.remove('narrow')
    // and a user who wants the whole project says so
    await h.add('wide', fsLike('wide', { roots: ['.'] }))
    assert.deepEqual(await allowed('wide'), [realpathSync(project.dir)])
    assert.equal(text(await read('wide', project.path('secret.txt'))), 'the whole project\n')
    await h.remove('wide')
  })

  it('roots must be directories: a URL of another scheme is a config error', () => {
    const r = mcpClientConfig.safeParse({
      serverName: 's',
      command: 'x',
      roots: ['https://example.com/'],
    })
    assert.ok(!r.success)
    assert.match(r.error.issues[0]!.message, /a root is a directory/)
  })
})

describe('lenient tool lists (raw JSON-RPC servers)', () => {
  let h: McpHarness
  before(async () => {
    h = await mcpHarness()
  })
  after(() => h.close())
  const tools = (server: string) =>
    h.rt
      .list()
      .map((t) => t.name)
      .filter((n) => n.startsWith(`mcp__${server}__`))

  it('a tool without inputSchema, one with a numeric name and one that is no object are skipped alone, each named', async () => {
    await h.add('bad', raw('bad', 'malformed'))
    const status = h.status('bad')
    assert.equal(status.state, 'connected')
    assert.deepEqual(tools('bad').sort(), ['mcp__bad__echo', 'mcp__bad__pid'])
    const problems = status.problems.join('\n')
    assert.match(problems, /skipped tool "no-schema": .*inputSchema/)
    assert.match(problems, /skipped tool #3 of tools\/list \(name 42\): .*name/)
    assert.match(problems, /skipped tool #4 of tools\/list \(no name\)/)
    assert.ok(
      h.logs.some((l) => l.level === 'warn' && /"bad": skipped tool "no-schema"/.test(l.message)),
    )
    assert.equal(text(await h.rt.call('mcp__bad__echo', { text: 'still works' })), 'still works')
    // no reconnect loop: the same process keeps serving
    const pid = text(await h.rt.call('mcp__bad__pid', {}))
    await new Promise((resolve) => setTimeout(resolve, 700)) // past reconnect.initialDelayMs
    assert.equal(h.status('bad').state, 'connected')
    assert.equal(text(await h.rt.call('mcp__bad__pid', {})), pid)
    await h.remove('bad')
  })

  it('over the default cap of 5000 tools: the first 5000 register with a warning, the connection stays', async () => {
    // the event loop runs while they register (slices), and every one is announced
    let turns = 0
    let turnsAtFirst: number | undefined
    let turnsAtLast = 0
    let announced = 0
    let spinning = true
    const spin = () => spinning && (turns++, setImmediate(spin))
    const untap = tapHook(h.rt.hooks.change, 'count', ({ added }) => {
      const ours = added.filter((n) => n.startsWith('mcp__many__')).length
      if (!ours) return
      turnsAtFirst ??= turns
      turnsAtLast = turns
      announced += ours
    })
    spin()
    await h.add('many', raw('many', 'many', { env: { TOOL_COUNT: '5003', PAGE_SIZE: '1000' } }))
    spinning = false
    untap()
    assert.equal(announced, 5000)
    assert.ok(turnsAtLast > turnsAtFirst!, 'the event loop ran between the first and the last tool')
    const status = h.status('many')
    assert.equal(status.state, 'connected')
    assert.equal(status.tools, 5000)
    assert.ok(tools('many').includes('mcp__many__tool_4999'))
    assert.ok(!tools('many').includes('mcp__many__tool_5000'))
    assert.match(status.problems.join('\n'), /more than 5000 tools \(maxTools\): the first 5000/)
    assert.equal(text(await h.rt.call('mcp__many__echo', { text: 'x' })), 'x')
    await h.remove('many')
    assert.equal(tools('many').length, 0)
  })

  it('maxTools sets the cap; a repeated cursor or a page without a tools array leaves no reconnect loop', async () => {
    await h.add('few', raw('few', 'many', { maxTools: 3, env: { TOOL_COUNT: '10' } }))
    assert.equal(h.status('few').tools, 3)
    assert.match(h.status('few').problems.join(), /more than 3 tools \(maxTools\)/)
    await h.remove('few')
    await h.add('loop', raw('loop', 'cursor'))
    assert.equal(h.status('loop').state, 'connected')
    assert.deepEqual(tools('loop').sort(), ['mcp__loop__echo', 'mcp__loop__pid'])
    assert.match(h.status('loop').problems.join(), /repeats the cursor "again"/)
    await h.remove('loop')
    await h.add('nolist', raw('nolist', 'notlist'))
    assert.equal(h.status('nolist').state, 'connected')
    assert.equal(h.status('nolist').tools, 0)
    assert.match(h.status('nolist').problems.join(), /without a tools array/)
    await h.remove('nolist')
  })

  it('a tools/list over maxMessageBytes is named as such, with the cap and how to raise it', async () => {
    await h.add(
      'huge',
      raw('huge', 'hugelist', {
        maxMessageBytes: 1024 * 1024,
        reconnect: { initialDelayMs: 60_000, maxDelayMs: 60_000 },
      }),
    )
    const status = h.status('huge')
    assert.equal(status.state, 'reconnecting')
    assert.match(
      status.lastError!,
      /over 1048576 bytes \(1 MiB, maxMessageBytes\); raise maxMessageBytes in its entry/,
    )
    assert.doesNotMatch(status.lastError!, /exited with code/)
    await h.remove('huge')
    // raised, the same list arrives
    await h.add('huge2', raw('huge2', 'hugelist', { maxMessageBytes: 4 * 1024 * 1024 }))
    assert.equal(h.status('huge2').state, 'connected')
    assert.ok(tools('huge2').includes('mcp__huge2__echo'))
    await h.remove('huge2')
  })

  it('a line that is not JSON in mid-session fails the call in flight at once and restarts the server', async () => {
    await h.add(
      'garble',
      raw('garble', 'normal', { callMs: 30_000, reconnect: { initialDelayMs: 50 } }),
    )
    const pid = text(await h.rt.call('mcp__garble__pid', {}))
    const started = Date.now()
    const result = await h.rt.call('mcp__garble__garble', {})
    assert.equal(result.status, 'SERVER_UNAVAILABLE')
    assert.ok(Date.now() - started < 2000, `ended after ${Date.now() - started} ms, not callMs`)
    assert.match(result.error!.message, /not JSON-RPC: "Traceback \(most recent call last\)/)
    await h.until('restarted', () => h.status('garble').state === 'connected')
    assert.notEqual(text(await h.rt.call('mcp__garble__pid', {})), pid)
    assert.equal(text(await h.rt.call('mcp__garble__echo', { text: 'back' })), 'back')
    await h.remove('garble')
  })
})

describe('risk from annotations (server-memory from npm)', () => {
  let h: McpHarness
  let project: Project
  const asked: string[] = []
  before(async () => {
    project = tempProject()
    h = await mcpHarness(project.dir)
    const policy = toPlugin(policyPlugin) as Plugin
    const checked = validateConfig(policy, {})
    assert.ok('value' in checked)
    await h.kernel.whenSettled(h.kernel.spawn(policy, checked.value, { key: 'policy' }), 10_000)
    h.rt.approvals.register({
      name: 'test',
      ask: async ({ call }) => {
        asked.push(call.name)
        return 'deny'
      },
    })
  })
  after(async () => {
    await h.close()
    project.cleanup()
  })
  const memory = (serverName: string, extra: Record<string, unknown> = {}) => ({
    serverName,
    command: process.execPath,
    args: [MEMORY],
    env: { MEMORY_FILE_PATH: project.path(`${serverName}.jsonl`) },
    ...extra,
  })
  const riskOfTool = (name: string) => h.rt.list().find((t) => t.name === name)?.risk

  it('destructiveHint is high (the policy asks), readOnlyHint low, neither medium', async () => {
    await h.add('memory', memory('memory'))
    assert.equal(riskOfTool('mcp__memory__delete_entities'), 'high')
    assert.equal(riskOfTool('mcp__memory__delete_relations'), 'high')
    assert.equal(riskOfTool('mcp__memory__read_graph'), 'low')
    assert.equal(riskOfTool('mcp__memory__create_entities'), 'medium')
    const deleted = await h.rt.call('mcp__memory__delete_entities', { entityNames: ['x'] })
    assert.equal(deleted.status, 'DENIED')
    assert.deepEqual(asked, ['mcp__memory__delete_entities'])
    const read = await h.rt.call('mcp__memory__read_graph', {})
    assert.equal(read.status, 'ok', text(read))
    assert.deepEqual(asked, ['mcp__memory__delete_entities'], 'a read-only tool is not asked about')
    await h.remove('memory')
  })

  it("the entry's risk wins over the hints", async () => {
    asked.length = 0
    await h.add('trusted', memory('trusted', { risk: 'medium' }))
    assert.equal(riskOfTool('mcp__trusted__delete_entities'), 'medium')
    assert.equal(riskOfTool('mcp__trusted__read_graph'), 'medium')
    const deleted = await h.rt.call('mcp__trusted__delete_entities', { entityNames: ['x'] })
    assert.equal(deleted.status, 'ok', text(deleted))
    assert.deepEqual(asked, [])
    await h.remove('trusted')
  })

  it('hints that contradict each other get the stricter risk', () => {
    assert.equal(riskOf({ readOnlyHint: true, destructiveHint: true }), 'high')
    assert.equal(riskOf({ readOnlyHint: true, destructiveHint: false }), 'low')
    assert.equal(riskOf({ destructiveHint: false }), 'medium')
    assert.equal(riskOf(undefined), 'medium')
  })
})

describe('config values a timer cannot hold, and imported URLs', () => {
  const issues = (config: Record<string, unknown>) => {
    const r = mcpClientConfig.safeParse({ serverName: 's', command: 'x', ...config })
    return r.success
      ? ''
      : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')
  }

  it('delays beyond 2^31-1 ms and maxDelayMs below initialDelayMs are config errors', () => {
    assert.match(
      issues({ reconnect: { initialDelayMs: 2 ** 31 } }),
      /reconnect\.initialDelayMs: at most 2147483647 ms/,
    )
    assert.match(issues({ reconnect: { maxDelayMs: 2 ** 31 } }), /reconnect\.maxDelayMs: at most/)
    assert.match(
      issues({ reconnect: { initialDelayMs: 5000, maxDelayMs: 1000 } }),
      /reconnect\.maxDelayMs: maxDelayMs must be at least initialDelayMs/,
    )
    assert.match(issues({ callMs: 2 ** 31 }), /callMs: at most/)
    assert.match(issues({ startupMs: 2 ** 32 }), /startupMs: at most/)
    assert.match(issues({ maxCallMs: 2 ** 31 }), /maxCallMs: at most/)
    assert.equal(issues({ reconnect: { initialDelayMs: 1000, maxDelayMs: 1000 } }), '')
    // the default maxCallMs (10 × callMs) stays within a timer's range
    const cfg = mcpClientConfig.parse({ serverName: 's', command: 'x', callMs: MAX_TIMER_MS })
    assert.equal(totalCallMs(cfg), MAX_TIMER_MS)
  })

  it("URLs from someone else's file get the SSRF guard; trustUrls takes them as the user's own", async () => {
    const file = JSON.stringify({
      mcpServers: {
        local: { url: 'http://127.0.0.1:9/mcp' },
        remote: { url: 'https://mcp.example.com/mcp' },
        cmd: { command: 'server' },
      },
    })
    const guarded = importText(file, '.mcp.json')
    assert.deepEqual(
      guarded.servers.map((s) => s.config.ssrfGuard),
      [true, true, undefined],
    )
    assert.deepEqual(guarded.warnings, [
      'server "local": its url reaches 127.0.0.1, a loopback or private address, which the SSRF guard refuses; if the file is yours, import it with --trust-urls (or set ssrfGuard: false)',
    ])
    const trusted = importText(file, '.mcp.json', { trustUrls: true })
    assert.deepEqual(
      trusted.servers.map((s) => s.config.ssrfGuard),
      [undefined, undefined, undefined],
    )
    assert.deepEqual(trusted.warnings, [])
    // the guarded entry as mcp-client runs it: refused before anything is sent
    const h = await mcpHarness()
    try {
      await h.add('local', {
        ...guarded.servers[0]!.config,
        reconnect: { initialDelayMs: 60_000, maxDelayMs: 60_000 },
      })
      assert.match(
        h.status('local').lastError!,
        /refused to connect to http:\/\/127\.0\.0\.1:9\/mcp/,
      )
    } finally {
      await h.close()
    }
  })
})
