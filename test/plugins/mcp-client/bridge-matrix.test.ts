// yoke's MCP bridge (mcp-client) against both eras, as real processes: 2025-era servers from npm
// (server-everything, server-memory: SDK v1) and the 2026-07-28 fixture (test/fixtures/mcp/
// modern.mjs, SDK v2, which serves the 2025 era too), over stdio and Streamable HTTP, with
// protocol auto, legacy and pinned to 2026-07-28. Each cell: the list, a call, progress,
// cancellation (seen arriving at the server where it can be seen), a timeout, and what the
// negotiated era cannot do ending with a clear error. Rows run in parallel, each with its own
// runtime; the cells of a row share its HTTP server and run one after another.
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  EVERYTHING,
  everythingHttp,
  fixtureLog,
  freePort,
  mcpHarness,
  MEMORY,
  MODERN,
  modernHttp,
  stop,
  TEE,
  text,
  openaiModel,
  type McpHarness,
} from '../../helpers/mcp.ts'
import { modelServer } from '../../helpers/model-server.ts'
import { removeTree } from '../../helpers/temp.ts'
import type { Tasks } from '../../../src/runtime/tasks.ts'

type Protocol = 'auto' | 'legacy' | '2026-07-28'
/**
 * A call's bound with no progress: what a call here costs (a few ms of work on loopback) can take
 * seconds on a loaded machine, so this leaves it room; the timeout cells call tools that stay
 * silent for a minute, and cost this long.
 */
const CALL_MS = 10_000
/** a tool's silence in the timeout cells: far past CALL_MS */
const SILENT_S = 60
const tmp = mkdtempSync(join(tmpdir(), 'yoke-matrix-'))
after(() => removeTree(tmp)) // after every row's own after: their servers are stopped

const names = (h: McpHarness, server: string) =>
  h.rt
    .list()
    .map((t) => t.name)
    .filter((n) => n.startsWith(`mcp__${server}__`))
    .map((n) => n.slice(`mcp__${server}__`.length))

/**
 * A call that the caller abandons once the server is at work on it (its first progress, or a
 * task's first status): there is always a call or task on the server to cancel, however slow the
 * machine (an abandon after a fixed delay could come before the request left).
 */
function abandoned(h: McpHarness, tool: string, args: Record<string, unknown>) {
  const abort = new AbortController()
  return h.rt.call(tool, args, { signal: abort.signal, onProgress: () => abort.abort() })
}

/** A pin the server cannot speak fails the instance at load, naming the server and the era. */
async function refusesPin(h: McpHarness, key: string, entry: Record<string, unknown>, era: RegExp) {
  const fiber = await h.add(key, { ...entry, failOnStartupError: true })
  assert.equal(fiber.state, 'failed')
  assert.equal(fiber.error?.code, 'MCP_CONNECT_FAILED')
  assert.match(String(fiber.error?.message), new RegExp(`MCP server "${entry.serverName}"`))
  assert.match(String(fiber.error?.message), era)
  await h.remove(key)
}

const NO_MODERN = /does not speak MCP 2026-07-28, which its entry pins \(protocol: 2026-07-28/

// ---------------------------------------------------------------- 2025-era servers from npm

/** One server-everything cell: it always lands on the 2025 era. */
async function everythingCell(h: McpHarness, server: string, tee?: string) {
  const status = h.hub.list().find((s) => s.name === server)!
  assert.equal(status.state, 'connected', status.lastError)
  assert.deepEqual(status.protocol, { era: 'legacy', version: '2025-11-25' })
  for (const tool of ['echo', 'trigger-long-running-operation', 'simulate-research-query'])
    assert.ok(names(h, server).includes(tool), tool)
  assert.equal(text(await h.rt.call(`mcp__${server}__echo`, { message: 'hi' })), 'Echo: hi')
  const progress: unknown[] = []
  const long = `mcp__${server}__trigger-long-running-operation`
  const done = await h.rt.call(
    long,
    { duration: 0.5, steps: 5 },
    { onProgress: (e) => progress.push(e) },
  )
  assert.equal(done.status, 'ok', text(done))
  assert.ok(progress.length >= 2, `progress relayed: ${JSON.stringify(progress)}`)
  const cancelled = await abandoned(h, long, { duration: 5, steps: 5 })
  assert.equal(cancelled.status, 'ABORTED')
  const timedOut = await h.rt.call(long, { duration: SILENT_S, steps: 1 })
  assert.equal(timedOut.status, 'TIMEOUT', text(timedOut))
  assert.match(timedOut.error!.message, new RegExp(`${CALL_MS}`))
  if (tee)
    await h.until(
      'the cancellations to reach server-everything',
      () => (readFileSync(tee, 'utf8').match(/"notifications\/cancelled"/g)?.length ?? 0) >= 2,
    )
  assert.equal(text(await h.rt.call(`mcp__${server}__echo`, { message: 'after' })), 'Echo: after')
}

describe('the bridge matrix', { concurrency: true }, () => {
  describe('server-everything over stdio (through a pipe that shows what reaches it)', () => {
    let h: McpHarness
    before(async () => (h = await mcpHarness()))
    after(() => h.close())
    const entry = (serverName: string, protocol: Protocol, tee: string) => ({
      serverName,
      command: process.execPath,
      args: [TEE, EVERYTHING, 'stdio'],
      env: { TEE_FILE: tee },
      protocol,
      callMs: CALL_MS,
    })

    for (const protocol of ['auto', 'legacy'] as const)
      it(`protocol ${protocol}: the 2025 era; list, call, progress, cancellation, timeout`, async () => {
        const tee = join(tmp, `everything-${protocol}.jsonl`)
        await h.add(`ev-${protocol}`, entry(`ev_${protocol}`, protocol, tee))
        await everythingCell(h, `ev_${protocol}`, tee)
        const sent = readFileSync(tee, 'utf8')
        if (protocol === 'auto')
          assert.match(sent, /"server\/discover"[\s\S]*"initialize"/, 'probed in place, then 2025')
        else assert.doesNotMatch(sent, /server\/discover/, 'legacy: no probe at all')
        await h.remove(`ev-${protocol}`)
      })

    it('protocol 2026-07-28: refused clearly, naming the server and the era', async () => {
      const tee = join(tmp, 'everything-pin.jsonl')
      await refusesPin(h, 'ev-pin', entry('ev_pin', '2026-07-28', tee), NO_MODERN)
      assert.doesNotMatch(readFileSync(tee, 'utf8'), /"initialize"/, 'a pin never falls back')
    })

    it('simulate-research-query runs as a 2025-11-25 task: status as progress, its result, tasks/cancel on abort', async () => {
      const tee = join(tmp, 'everything-task.jsonl')
      await h.add('ev-task', entry('ev_task', 'auto', tee))
      const progress: Array<{ message?: string; status?: string }> = []
      const research = await h.rt.call(
        'mcp__ev_task__simulate-research-query',
        { topic: 'yoke' },
        { onProgress: (e) => progress.push(e) },
      )
      assert.equal(research.status, 'ok', text(research))
      assert.match(text(research), /# Research Report: yoke/)
      assert.ok(progress.some((p) => p.status === 'working' && /\w/.test(p.message ?? '')))
      const cancelled = await abandoned(h, 'mcp__ev_task__simulate-research-query', {
        topic: 'again',
      })
      assert.equal(cancelled.status, 'ABORTED')
      await h.until('tasks/cancel to reach server-everything', () =>
        readFileSync(tee, 'utf8').includes('"tasks/cancel"'),
      )
      await h.remove('ev-task')
    })
  })

  describe('server-everything over Streamable HTTP (one server for the row)', () => {
    let h: McpHarness
    let server: ChildProcess
    let url: string
    before(async () => {
      h = await mcpHarness()
      const port = await freePort()
      server = await everythingHttp('streamableHttp', port)
      url = `http://127.0.0.1:${port}/mcp`
    })
    after(async () => {
      await h.close()
      await stop(server)
    })
    const entry = (serverName: string, protocol: Protocol) => ({
      serverName,
      url,
      protocol,
      callMs: CALL_MS,
    })

    for (const protocol of ['auto', 'legacy'] as const)
      it(`protocol ${protocol}: the 2025 era over a session; list, call, progress, cancellation, timeout`, async () => {
        await h.add(`evh-${protocol}`, entry(`evh_${protocol}`, protocol))
        assert.ok(h.status(`evh_${protocol}`).sessionId, 'a 2025-era HTTP session')
        await everythingCell(h, `evh_${protocol}`)
        await h.remove(`evh-${protocol}`)
      })

    it('protocol 2026-07-28: refused clearly, naming the server and the era', () =>
      refusesPin(h, 'evh-pin', entry('evh_pin', '2026-07-28'), NO_MODERN))
  })

  describe('server-memory over stdio', () => {
    let h: McpHarness
    before(async () => (h = await mcpHarness()))
    after(() => h.close())
    const entry = (serverName: string, protocol: Protocol) => ({
      serverName,
      command: process.execPath,
      args: [MEMORY],
      env: { MEMORY_FILE_PATH: join(tmp, `${serverName}.jsonl`) },
      protocol,
      callMs: CALL_MS,
    })

    // server-memory has no long-running tool: progress, cancellation and timeouts of the 2025
    // era are the server-everything rows'
    for (const protocol of ['auto', 'legacy'] as const)
      it(`protocol ${protocol}: the 2025 era; list and calls`, async () => {
        const server = `mem_${protocol}`
        await h.add(server, entry(server, protocol))
        assert.deepEqual(h.status(server).protocol, { era: 'legacy', version: '2025-11-25' })
        assert.ok(names(h, server).includes('create_entities'))
        const created = await h.rt.call(`mcp__${server}__create_entities`, {
          entities: [{ name: 'yoke', entityType: 'project', observations: [`via ${protocol}`] }],
        })
        assert.equal(created.status, 'ok', text(created))
        assert.match(text(await h.rt.call(`mcp__${server}__read_graph`, {})), /via /)
        await h.remove(server)
      })

    it('protocol 2026-07-28: refused clearly, naming the server and the era', () =>
      refusesPin(h, 'mem-pin', entry('mem_pin', '2026-07-28'), NO_MODERN))
  })

  // ------------------------------------------------------------------- the 2026-07-28 fixture

  // over HTTP the cells share one server (and its log): one after another
  for (const transport of ['stdio', 'http'] as const)
    describe(`the modern fixture over ${transport}`, { concurrency: transport === 'stdio' }, () => {
      let h: McpHarness
      let server: { url: string; child: ChildProcess } | undefined
      const httpLog = join(tmp, 'modern-http.jsonl')
      const asked = new Map<string, Array<{ mode: string; call?: string }>>()
      const changed = new Map<string, string[]>()
      const add = <T>(map: Map<string, T[]>, key: string, value: T) =>
        map.set(key, [...(map.get(key) ?? []), value])
      before(async () => {
        h = await mcpHarness()
        if (transport === 'http') server = await modernHttp(['--log', httpLog, '--ttl-ms', '60000'])
        h.hub.answerer({
          name: 'matrix',
          ask: async (q) => {
            add(asked, q.server, { mode: q.mode, call: q.call?.name })
            return q.mode === 'url'
              ? { action: 'accept' }
              : { action: 'accept', content: { ok: true } }
          },
        })
        h.hub.hooks.listChanged.tap('matrix', (name, list) => add(changed, name, list))
      })
      after(async () => {
        await h.close()
        if (server) await stop(server.child)
      })
      const entry = (serverName: string, protocol: Protocol, args: string[] = []) => {
        const log = transport === 'http' ? httpLog : join(tmp, `${serverName}.jsonl`)
        return {
          log,
          config:
            transport === 'http'
              ? { serverName, url: server!.url, protocol, callMs: CALL_MS }
              : {
                  serverName,
                  command: process.execPath,
                  args: [MODERN, '--log', log, '--ttl-ms', '60000', ...args],
                  protocol,
                  callMs: CALL_MS,
                },
        }
      }

      const cells = [
        { protocol: 'auto', era: 'modern' },
        { protocol: 'legacy', era: 'legacy' },
        { protocol: '2026-07-28', era: 'modern' },
      ] as const
      for (const { protocol, era } of cells)
        it(`protocol ${protocol}: the ${era} era; list, call, progress, cancellation, timeout, a question, a task`, async () => {
          const name = `mod_${transport}_${protocol.replace(/-/g, '')}`
          const { log, config } = entry(name, protocol)
          const from = fixtureLog(log).length
          const since = () => fixtureLog(log).slice(from)
          await h.add(name, config)
          const status = h.status(name)
          assert.equal(status.state, 'connected', status.lastError)
          assert.equal(status.protocol?.era, era)
          assert.equal(status.protocol?.version, era === 'modern' ? '2026-07-28' : '2025-11-25')
          assert.equal(Boolean(status.sessionId), transport === 'http' && era === 'legacy')
          const tool = (t: string) => `mcp__${name}__${t}`
          // list: every tool, the task-only one too
          for (const t of ['echo', 'shapes', 'slow', 'confirm', 'research', 'change'])
            assert.ok(names(h, name).includes(t), t)
          // call, and every content shape
          assert.equal(text(await h.rt.call(tool('echo'), { text: name })), `echo: ${name}`)
          const shapes = await h.rt.call(tool('shapes'), {})
          assert.deepEqual(
            shapes.content.map((c) => c.type),
            ['text', 'text', 'image', 'resource', 'resource_link'],
          )
          assert.deepEqual(shapes.content[3], {
            type: 'resource',
            resource: { uri: 'fixture://embedded', mimeType: 'text/plain', text: 'embedded text' },
          })
          assert.equal((shapes.structured as { count: number }).count, 4)
          if (transport === 'http' && era === 'modern') {
            const call = since().find((e) => e.method === 'tools/call' && e.name === 'echo')
            assert.deepEqual(call?.headers, {
              'mcp-method': 'tools/call',
              'mcp-name': 'echo',
              'mcp-protocol-version': '2026-07-28',
            })
          }
          // progress
          const progress: unknown[] = []
          const slow = await h.rt.call(
            tool('slow'),
            { steps: 3, ms: 30 },
            { onProgress: (e) => progress.push(e) },
          )
          assert.equal(text(slow), 'slow done 3')
          assert.ok(progress.length >= 2, JSON.stringify(progress))
          // cancellation and a timeout, both seen by the server
          assert.equal((await abandoned(h, tool('slow'), { steps: 50, ms: 100 })).status, 'ABORTED')
          const timedOut = await h.rt.call(tool('slow'), { steps: 1, ms: SILENT_S * 1000 })
          assert.equal(timedOut.status, 'TIMEOUT', text(timedOut))
          await h.until(
            'both cancellations to reach the server',
            () => since().filter((e) => e.event === 'aborted').length >= 2,
          )
          // a question: input_required on 2026-07-28, elicitation/create in the 2025 era
          assert.equal(
            text(await h.rt.call(tool('confirm'), { what: 'deploy' })),
            'confirm deploy: accept {"ok":true}',
          )
          assert.equal(
            text(await h.rt.call(tool('confirm-url'), { what: 'pay' })),
            'confirm-url pay: accept',
          )
          assert.deepEqual(asked.get(name), [
            { mode: 'form', call: tool('confirm') },
            { mode: 'url', call: tool('confirm-url') },
          ])
          // a task: 2026-07-28 only; the 2025 era ends with a clear error
          const research = await h.rt.call(tool('research'), { topic: name, steps: 3, ms: 50 })
          if (era === 'modern') {
            assert.equal(text(research), `research on ${name}: done after 3 steps`)
            const gone = await abandoned(h, tool('research'), { topic: 'x', steps: 100 })
            assert.equal(gone.status, 'ABORTED')
            await h.until('tasks/cancel to reach the server', () =>
              since().some((e) => e.event === 'task-cancelled'),
            )
          } else {
            assert.equal(research.status, 'EXEC_FAILED')
            assert.match(
              research.error!.message,
              /research runs only as an MCP task, and MCP server "mod_\w+" offers no tasks on this connection/,
            )
          }
          // resources and prompts, through the mcp tools
          const read = await h.rt.call('read_mcp_resource', {
            server: name,
            uri: 'fixture://readme',
          })
          assert.match(text(read), /# Fixture readme/)
          const prompt = await h.rt.call('get_mcp_prompt', {
            server: name,
            name: 'greet',
            arguments: { name: 'Ada' },
          })
          assert.match(text(prompt), /Hello, Ada!/)
          await h.remove(name)
        })

      it('list_changed: on a listen stream (2026-07-28) or as a notification (2025), tools re-read, prompts announced; cache hints hold the lists', async () => {
        const name = `mod_${transport}_changes`
        const { log, config } = entry(name, 'auto')
        const from = fixtureLog(log).length
        const count = (method: string) =>
          fixtureLog(log)
            .slice(from)
            .filter((e) => e.method === method).length
        try {
          await h.add(name, config)
          assert.equal(count('subscriptions/listen'), 1, 'a 2026-07-28 client listens for changes')
          assert.equal(count('tools/list'), 1)
          for (let i = 0; i < 2; i++) await h.rt.call('list_mcp_resources', { server: name })
          assert.equal(count('resources/list'), 1, 'not read again before its ttlMs')
          await h.rt.call(`mcp__${name}__change`, {})
          await h.until('the added tool', () => names(h, name).includes('added'))
          assert.equal(text(await h.rt.call(`mcp__${name}__added`, {})), 'added')
          await h.until('both lists announced', () =>
            ['tools', 'prompts'].every((l) => changed.get(name)?.includes(l)),
          )
          assert.equal(count('tools/list'), 2, 'read again only because the server said so')
        } finally {
          await h.remove(name)
        }
      })

      if (transport === 'stdio')
        it('a refusal reaches the server as decline; a question nobody answers within callMs, as cancel', async () => {
          const off = h.hub.answerer({
            name: 'refuser',
            handles: (q) => /nope|never/.test(q.message),
            ask: (q) =>
              /nope/.test(q.message)
                ? Promise.resolve({ action: 'decline' as const })
                : new Promise(() => {}), // never answers
          })
          try {
            for (const protocol of ['auto', 'legacy'] as const) {
              const name = `mod_refuse_${protocol}`
              await h.add(name, entry(name, protocol).config)
              assert.equal(
                text(await h.rt.call(`mcp__${name}__confirm`, { what: 'nope' })),
                'confirm nope: decline',
              )
              if (protocol === 'auto') {
                // 2026-07-28: the call waits for the answer, not the server: callMs bounds the question
                const unanswered = await h.rt.call(`mcp__${name}__confirm`, { what: 'never' })
                assert.equal(text(unanswered), 'confirm never: cancel')
                const said = new RegExp(
                  `"${name}" asked .*→ cancel by refuser \\(no answer within ${CALL_MS} ms\\)`,
                )
                assert.ok(h.logs.some((l) => said.test(l.message)))
              }
              await h.remove(name)
            }
          } finally {
            off()
          }
        })

      if (transport === 'stdio')
        it("spawnOnly: a yoke background task, backed by the server's own task", async () => {
          const name = 'mod_spawn'
          const { log, config } = entry(name, 'auto')
          await h.add(name, { ...config, spawnOnly: ['research'] })
          const started = await h.rt.call(`mcp__${name}__research`, {
            topic: 'bg',
            steps: 3,
            ms: 50,
          })
          assert.equal(started.status, 'ok')
          assert.ok(started.task, 'the call returns its background task at once')
          const tasks = h.kernel.services.get('tasks')!.value as Tasks
          // the task ends by itself (done, or its call's TIMEOUT): this bound only catches a hang
          let timer: NodeJS.Timeout | undefined
          const done = await Promise.race([
            tasks.wait(started.task),
            new Promise<undefined>((resolve) => {
              timer = setTimeout(() => resolve(undefined), 6 * CALL_MS)
            }),
          ]).finally(() => clearTimeout(timer))
          assert.equal(done?.status, 'done', JSON.stringify(done))
          assert.equal(text(done!.result!), 'research on bg: done after 3 steps')
          assert.ok(
            fixtureLog(log).some((e) => e.method === 'tasks/get'),
            'an upstream task',
          )
          await h.remove(name)
        })

      if (transport === 'stdio')
        it('protocol legacy against a server that speaks only 2026-07-28: refused clearly', () =>
          refusesPin(
            h,
            'mod-only',
            entry('mod_only', 'legacy', ['--modern-only']).config,
            /refused the 2025-era handshake, which its entry pins \(protocol: legacy/,
          ))
    })

  describe('negotiation over stdio, in place (one process per connection)', () => {
    let h: McpHarness
    before(async () => (h = await mcpHarness()))
    after(() => h.close())
    /** a 2025-only server; `onProbe` says what it does with a request before initialize */
    const legacyOnly = (onProbe: string) => `
      const { appendFileSync } = require('node:fs')
      const log = (m) => appendFileSync(process.env.LOG, m + '\\n')
      log('start')
      let ready = false
      const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n')
      require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
        const m = JSON.parse(line)
        if (!ready && m.method !== 'initialize') { log(m.method); ${onProbe} }
        if (m.method === 'initialize') { ready = true; return send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'old', version: '1' } } }) }
        if (m.method === 'tools/list') return send({ id: m.id, result: { tools: [{ name: 'hi', inputSchema: { type: 'object' } }] } })
        if (m.method === 'tools/call') return send({ id: m.id, result: { content: [{ type: 'text', text: 'hi' }] } })
        if (m.id !== undefined) send({ id: m.id, error: { code: -32601, message: 'no' } })
      })`
    const lines = (file: string) => readFileSync(file, 'utf8').trim().split('\n')

    for (const [kind, onProbe, first] of [
      ['exits on the probe (as rmcp servers do)', 'process.exit(1)', 'started again once'],
      ['ignores the probe', 'return', 'waited out'],
    ] as const)
      it(`a 2025-only server that ${kind}: ${first}, then remembered as 2025-only`, async () => {
        const name = onProbe === 'return' ? 'silent' : 'strict'
        const log = join(tmp, `${name}.log`)
        await h.add(name, {
          serverName: name,
          command: process.execPath,
          args: ['-e', legacyOnly(onProbe)],
          env: { LOG: log },
          // the probe waits half of it at most; the other half is the 2025 handshake's (a loaded
          // machine makes it seconds)
          startupMs: 12_000,
        })
        assert.deepEqual(h.status(name).protocol, { era: 'legacy', version: '2025-11-25' })
        assert.equal(text(await h.rt.call(`mcp__${name}__hi`, {})), 'hi')
        const spawns = onProbe === 'return' ? 1 : 2
        assert.deepEqual(lines(log), [
          'start',
          'server/discover',
          ...(spawns === 2 ? ['start'] : []),
        ])
        const pid = h.status(name).pid!
        process.kill(pid, 'SIGKILL')
        await h.until(
          'it reconnects',
          () => h.status(name).state === 'connected' && h.status(name).pid !== pid,
        )
        assert.deepEqual(lines(log).slice(spawns + 1), ['start'], 'no probe on reconnecting')
        await h.remove(name)
      })

    it('a malformed tool costs that tool only, in the 2026-07-28 era too', async () => {
      const server = `
        import { Server } from '@modelcontextprotocol/server'
        import { serveStdio } from '@modelcontextprotocol/server/stdio'
        const tools = [{ name: 'good', inputSchema: { type: 'object' } }, { name: 'noSchema' }, { name: 42, inputSchema: { type: 'object' } }]
        serveStdio(() => {
          const s = new Server({ name: 'malformed', version: '1' }, { capabilities: { tools: {} } })
          s.setRequestHandler('tools/list', () => ({ tools }))
          s.setRequestHandler('tools/call', (r) => ({ content: [{ type: 'text', text: 'called ' + r.params.name }] }))
          return s
        }, { legacy: 'reject' })`
      await h.add('malformed', {
        serverName: 'malformed',
        command: process.execPath,
        args: ['--input-type=module', '-e', server],
      })
      const status = h.status('malformed')
      assert.equal(status.protocol?.era, 'modern')
      assert.deepEqual(names(h, 'malformed'), ['good'])
      assert.match(status.problems.join('\n'), /skipped tool "noSchema": .*inputSchema/)
      assert.match(status.problems.join('\n'), /skipped tool #3 of tools\/list \(name 42\)/)
      assert.equal(text(await h.rt.call('mcp__malformed__good', {})), 'called good')
      await h.remove('malformed')
    })
  })
  describe('sampling asked for inside a 2026-07-28 result (input_required createMessage)', () => {
    let h: McpHarness
    before(async () => (h = await mcpHarness()))
    after(() => h.close())
    const server = `
      import { Server, inputRequired } from '@modelcontextprotocol/server'
      import { serveStdio } from '@modelcontextprotocol/server/stdio'
      serveStdio(() => {
        const s = new Server({ name: 'sampler', version: '1' }, { capabilities: { tools: {} } })
        s.setRequestHandler('tools/list', () => ({ tools: [{ name: 'summarise', inputSchema: { type: 'object' } }] }))
        s.setRequestHandler('tools/call', (r, ctx) => {
          const answer = ctx.mcpReq.inputResponses?.s
          if (answer) return { content: [{ type: 'text', text: JSON.stringify(answer) }] }
          return inputRequired({ inputRequests: { s: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'sum up' } }], maxTokens: 500 }) } })
        })
        return s
      }, { legacy: 'reject' })`
    const entry = (serverName: string, sampling: boolean) => ({
      serverName,
      command: process.execPath,
      args: ['--input-type=module', '-e', server],
      sampling,
      samplingMaxTokens: 40,
    })

    it('off: not declared, the call ends with the reason; on: the model service answers, capped', async () => {
      await h.add('nosample', entry('nosample', false))
      const refused = await h.rt.call('mcp__nosample__summarise', {})
      assert.equal(refused.status, 'EXEC_FAILED')
      // sampling is not declared, so the server's SDK does not even ask; it says why
      assert.match(
        refused.error!.message,
        /MCP server "nosample" answered: .*sampling\/createMessage.*do not declare the required capability/,
      )
      await h.remove('nosample')
      const model = await modelServer([
        { text: 'a summary', usage: { inputTokens: 3, outputTokens: 2 } },
      ])
      const provider = await openaiModel(
        h,
        'matrix-model',
        'gpt-matrix',
        model.openaiBaseUrl,
        'TEST_MATRIX_KEY',
      )
      try {
        await h.add('sampler', entry('sampler', true))
        const answered = await h.rt.call('mcp__sampler__summarise', {})
        assert.equal(answered.status, 'ok', text(answered))
        assert.deepEqual(JSON.parse(text(answered)), {
          role: 'assistant',
          content: { type: 'text', text: 'a summary' },
          model: 'gpt-matrix',
          stopReason: 'endTurn',
        })
        assert.equal(model.requests[0]!.body.max_tokens, 40, 'capped by samplingMaxTokens')
      } finally {
        await h.remove('sampler')
        await h.kernel.remove(provider)
        await model.close()
        delete process.env.TEST_MATRIX_KEY
      }
    })
  })
})
