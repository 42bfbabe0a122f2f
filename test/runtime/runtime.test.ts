import assert from 'node:assert/strict'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Kernel, tapHook, toPlugin, type Plugin } from '../../src/index.ts'
import { runtimePlugin, ToolRuntime, type RuntimeApi } from '../../src/index.ts'
import promptPlugin from '../../plugins/prompt/index.ts'
import type { ToolDefinition } from '../../src/runtime/types.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const echo = (name: string, extra: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name,
  execute: (a) => JSON.stringify(a),
  ...extra,
})
const text = (r: { content: readonly any[] }) => r.content.map((c) => c.text ?? '').join('')

describe('registration', () => {
  it('hostile registrations are refused with clear errors and harm nothing registered before them', async () => {
    const rt = new ToolRuntime()
    rt.register(echo('good'), 'first')
    const nest = (depth: number): Record<string, unknown> =>
      depth <= 1 ? { type: 'string' } : { type: 'object', properties: { x: nest(depth - 2) } }
    const cyclic: Record<string, unknown> = { type: 'object' }
    cyclic.properties = { self: cyclic }
    const cases: Array<[string, ToolDefinition, RegExp]> = [
      ['unicode name', echo('wetter_ü'), /names are 1-64 characters/],
      ['65 characters', echo('a'.repeat(65)), /names are 1-64 characters/],
      ['empty name', echo(''), /names are 1-64/],
      [
        'schema depth 11',
        echo('deep', { inputSchema: { type: 'object', properties: { a: nest(9) } } }),
        /nests 11 levels deep; the limit is 10/,
      ],
      [
        '65 KiB schema',
        echo('huge', { inputSchema: { type: 'object', description: 'x'.repeat(65 * 1024) } }),
        /bytes; the limit is 65536/,
      ],
      ['schema is a list', echo('list', { inputSchema: [] as any }), /not a JSON object/],
      ['schema is a string', echo('str', { inputSchema: 'object' as any }), /not a JSON object/],
      [
        'schema of type string',
        echo('typ', { inputSchema: { type: 'string' } }),
        /must have type "object"/,
      ],
      ['cyclic schema', echo('cyc', { inputSchema: cyclic }), /not JSON/],
      [
        'uncompilable schema',
        echo('bad', {
          inputSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } },
        }),
        /does not compile/,
      ],
      ['no execute', { name: 'noexec' } as ToolDefinition, /no execute function/],
    ]
    for (const [label, def, message] of cases) {
      assert.throws(
        () => rt.register(def, 'hostile'),
        (err: any) => {
          assert.equal(err.code, 'TOOL_INVALID', label)
          assert.match(err.message, message, label)
          assert.match(err.message, /instance hostile/, label)
          return true
        },
      )
    }
    assert.throws(
      () => rt.register(echo('good'), 'second'),
      /tool "good" is already registered in scope global: instance "first" already registered it/,
    )
    assert.deepEqual(
      rt.list().map((t) => t.name),
      ['good'],
    )
    assert.equal((await rt.call('good', { a: 1 })).status, 'ok')
  })

  it('change announces what was added and removed; a re-registered tool is a new tool', async () => {
    const rt = new ToolRuntime()
    const changes: unknown[] = []
    rt.hooks.change.tap('t', (c) => void changes.push(c))
    const undo = rt.register(echo('a'), 'p')
    await undo()
    assert.deepEqual(changes, [
      { added: ['a'], removed: [], scope: 'global' },
      { added: [], removed: ['a'], scope: 'global' },
    ])
  })
})

describe('scopes', () => {
  it('the nearest layer wins, and nested scopes see their ancestors', async () => {
    const rt = new ToolRuntime()
    rt.register({ name: 'who', execute: () => 'global' }, 'g')
    rt.registry.createScope('agent')
    rt.registry.createScope('session', { parent: 'agent' })
    rt.register({ name: 'who', execute: () => 'agent' }, 'a', 'agent')
    assert.equal(text(await rt.call('who')), 'global')
    assert.equal(text(await rt.call('who', {}, { scope: 'agent' })), 'agent')
    assert.equal(text(await rt.call('who', {}, { scope: 'session' })), 'agent')
    rt.register({ name: 'who', execute: () => 'session' }, 's', 'session')
    assert.equal(text(await rt.call('who', {}, { scope: 'session' })), 'session')
    assert.equal(
      (await rt.call('who', {}, { scope: 'nowhere' })).status,
      'ok',
      'an unknown scope sees the global layer',
    )
  })

  it('a deny mask admits globals added later; an allow mask does not; scope tools are never masked', async () => {
    const rt = new ToolRuntime()
    for (const n of ['read_a', 'write_a', 'mcp__github__issues']) rt.register(echo(n), 'g')
    rt.registry.createScope('denied')
    rt.registry.createScope('allowed')
    rt.registry.restrict('denied', { deny: ['write_*', 'mcp__github__*'] })
    rt.registry.restrict('allowed', { allow: ['read_*'] })
    const names = (scope: string) =>
      rt
        .list(scope)
        .map((t) => t.name)
        .sort()
    assert.deepEqual(names('denied'), ['read_a'])
    assert.deepEqual(names('allowed'), ['read_a'])
    rt.register(echo('later_tool'), 'g')
    rt.register(echo('read_later'), 'g')
    rt.register(echo('write_later'), 'g')
    assert.deepEqual(names('denied'), ['later_tool', 'read_a', 'read_later'])
    assert.deepEqual(
      names('allowed'),
      ['read_a'],
      'an allow mask is the tools that matched when it was made',
    )
    assert.equal((await rt.call('write_a', {}, { scope: 'denied' })).status, 'UNKNOWN_TOOL')
    rt.register(echo('write_mine'), 'local', 'denied')
    assert.ok(names('denied').includes('write_mine'), 'scope-local tools are not masked')
    assert.throws(
      () => rt.registry.restrict('global', { deny: ['x'] }),
      /global layer cannot be restricted/,
    )
    assert.throws(() => rt.registry.restrict('denied', {}), /needs allow or deny/)
  })
})

describe('concurrency', () => {
  it('exclusive calls never overlap, safe ones do, and an unknown class is exclusive', async () => {
    const rt = new ToolRuntime({ maxConcurrent: 8 })
    const spans: Array<{ name: string; start: number; end: number }> = []
    const timed = (name: string, concurrency: string): ToolDefinition => ({
      name,
      concurrency,
      execute: async () => {
        const start = performance.now()
        await sleep(20)
        for (let i = 0; i < 2e5; i++); // a little CPU, so the load is real
        spans.push({ name, start, end: performance.now() })
        return 'ok'
      },
    })
    rt.register(timed('safe', 'safe'), 't')
    rt.register(timed('excl', 'exclusive'), 't')
    rt.register(timed('weird', 'sometimes'), 't')
    const calls = []
    for (let i = 0; i < 6; i++)
      calls.push(rt.call('safe'), rt.call(i % 2 ? 'excl' : 'weird'), rt.call('safe'))
    const results = await Promise.all(calls)
    assert.ok(results.every((r) => r.ok))
    assert.equal(rt.list().find((t) => t.name === 'weird')!.concurrency, 'exclusive')
    const overlaps = (a: (typeof spans)[0], b: (typeof spans)[0]) =>
      a.start < b.end && b.start < a.end
    for (const a of spans.filter((s) => s.name !== 'safe')) {
      for (const b of spans)
        if (a !== b) assert.ok(!overlaps(a, b), `${a.name} overlapped ${b.name}`)
    }
    const safe = spans.filter((s) => s.name === 'safe')
    assert.ok(
      safe.some((a) => safe.some((b) => a !== b && overlaps(a, b))),
      'safe calls overlap',
    )
  })

  it('a global cap and per-source caps bound parallelism', async () => {
    const rt = new ToolRuntime({ maxConcurrent: 3, perSource: { 'mcp:slow': 1 } })
    let running = 0
    let peak = 0
    const peaks: Record<string, number> = {}
    let slowRunning = 0
    const tool = (name: string, source: string): ToolDefinition => ({
      name,
      source,
      concurrency: 'safe',
      execute: async () => {
        running++
        if (source === 'mcp:slow') slowRunning++
        peak = Math.max(peak, running)
        peaks[source] = Math.max(peaks[source] ?? 0, source === 'mcp:slow' ? slowRunning : running)
        await sleep(10)
        running--
        if (source === 'mcp:slow') slowRunning--
        return 'ok'
      },
    })
    rt.register(tool('fast', 'native'), 't')
    rt.register(tool('slow', 'mcp:slow'), 't')
    await Promise.all(Array.from({ length: 20 }, (_, i) => rt.call(i % 2 ? 'fast' : 'slow')))
    assert.equal(peak, 3)
    assert.equal(peaks['mcp:slow'], 1)
  })
})

describe('approvals', () => {
  it('a session grant is remembered per scope and forgotten when the tool is re-registered', async () => {
    const rt = new ToolRuntime()
    rt.hooks.preExecute.tapPromise('ask all', async () => ({ kind: 'ask', reason: 'policy' }))
    let asked = 0
    rt.approvals.register({ name: 'auto', ask: async () => (asked++, 'allow-session') })
    const undo = rt.register(echo('t'), 'p')
    rt.registry.createScope('other')
    await rt.call('t')
    await rt.call('t')
    assert.equal(asked, 1)
    await rt.call('t', {}, { scope: 'other' })
    assert.equal(asked, 2, 'grants are per scope')
    await undo()
    rt.register(echo('t'), 'p')
    await rt.call('t')
    assert.equal(asked, 3, 'a reloaded tool is asked about again')
  })

  it('a bridge that handles some callers answers those calls; the others go to the newest bridge for all', async () => {
    const rt = new ToolRuntime()
    rt.hooks.preExecute.tapPromise('ask all', async () => ({ kind: 'ask', reason: 'policy' }))
    const answered: string[] = []
    rt.approvals.register({
      name: 'mcp',
      handles: (call) => call.caller.startsWith('mcp:'),
      ask: async ({ call }) => (answered.push(`mcp ${call.caller}`), 'deny'),
    })
    rt.approvals.register({
      name: 'terminal',
      ask: async ({ call }) => (answered.push(`terminal ${call.caller}`), 'allow-once'),
    })
    rt.register(echo('t'), 'p')
    assert.equal((await rt.call('t', {}, { caller: 'cli' })).status, 'ok')
    assert.equal((await rt.call('t', {}, { caller: 'mcp:default:1' })).status, 'DENIED')
    assert.deepEqual(answered, ['terminal cli', 'mcp mcp:default:1'])
  })
})

describe('limits', () => {
  it('a tool returning 50 MB ends as a bounded preview plus a spill file, with bounded heap', async () => {
    const rt = new ToolRuntime()
    rt.register({ name: 'flood', execute: () => 'y'.repeat(50 * 1024 * 1024) }, 'p')
    gc()
    const before = process.memoryUsage().heapUsed
    const result = await rt.call('flood')
    gc()
    const grown = (process.memoryUsage().heapUsed - before) / 1024 / 1024
    assert.equal(result.status, 'ok')
    assert.equal(result.truncated!.bytes, 50 * 1024 * 1024)
    assert.ok(text(result).length < 9 * 1024)
    console.log(`heap after a 50 MB output: +${grown.toFixed(1)} MiB`)
    assert.ok(grown < 10, `the result keeps ${grown.toFixed(1)} MiB`)
  })

  it("a timeout ends the call and aborts the body's signal; so does the caller's abort", async () => {
    const rt = new ToolRuntime({ timeoutMs: 50 })
    let sawAbort: unknown
    rt.register(
      {
        name: 'stuck',
        execute: (_a, ctx) =>
          new Promise((resolve) => {
            ctx.signal.addEventListener('abort', () => {
              sawAbort = ctx.signal.reason
              setTimeout(() => resolve('too late'), 10)
            })
          }),
      },
      'p',
    )
    const result = await rt.call('stuck')
    assert.equal(result.status, 'TIMEOUT')
    assert.match(result.error!.message, /did not finish within 50 ms/)
    assert.equal((sawAbort as any).code, 'TIMEOUT')
    rt.register({ name: 'deaf', timeoutMs: 30, execute: () => new Promise(() => {}) }, 'p')
    assert.equal(
      (await rt.call('deaf')).status,
      'TIMEOUT',
      'a body that ignores its signal still ends',
    )
  })

  it('a call on a tool unloaded mid-call completes within the grace period, or ends UNLOADED', async () => {
    const rt = new ToolRuntime({ unloadGraceMs: 100 })
    const quick = rt.register(
      { name: 'quick', execute: () => sleep(30).then(() => 'finished') },
      'p',
    )
    const call = rt.call('quick')
    await sleep(5)
    await quick()
    assert.equal(text(await call), 'finished')
    const slow = rt.register({ name: 'slow', execute: () => new Promise(() => {}) }, 'p')
    const pending = rt.call('slow')
    await sleep(5)
    const started = performance.now()
    await slow()
    const result = await pending
    assert.equal(result.status, 'UNLOADED')
    assert.ok(performance.now() - started >= 90, 'after the grace period')
    assert.equal((await rt.call('slow')).status, 'UNKNOWN_TOOL')
  })
})

describe('background tasks and prompt sections', () => {
  it('a spawnOnly tool returns a task at once; the tasks service reports its end; a subagent scope runs it inline', async () => {
    const rt = new ToolRuntime()
    let release = () => {}
    rt.register(
      {
        name: 'render',
        spawnOnly: true,
        spawnOnlyMessage: 'rendering started',
        execute: () => new Promise((r) => (release = () => r('video.mp4'))),
      },
      'p',
    )
    const done: string[] = []
    rt.tasks.hooks.completed.tap('t', (task) => void done.push(`${task.id} ${task.status}`))
    const result = await rt.call('render')
    assert.equal(result.status, 'ok')
    assert.match(text(result), /rendering started \(task task_\d+\)/)
    assert.equal(rt.tasks.get(result.task!)!.status, 'running')
    release()
    const task = await rt.tasks.wait(result.task!)
    assert.equal(task!.status, 'done')
    assert.equal(text(task!.result!), 'video.mp4')
    assert.deepEqual(done, [`${result.task} done`])
    rt.registry.createScope('sub', { subagent: true })
    const inline = rt.call('render', {}, { scope: 'sub' })
    await sleep(5)
    release()
    const r = await inline
    assert.equal(r.task, undefined)
    assert.equal(text(r), 'video.mp4')
  })

  it('prompt sections render in order and go with their instance', async () => {
    const kernel = new Kernel()
    kernel.spawn(toPlugin(promptPlugin) as Plugin, {}, { key: 'prompt' })
    const section = (name: string, order: number, text: string) =>
      toPlugin({
        name,
        inject: ['prompt'],
        apply: (ctx: any) => void ctx.prompt.register({ name, order, text }),
      }) as Plugin
    kernel.spawn(section('b', 20, 'second'), {}, { key: 'b' })
    const a = kernel.spawn(section('a', 10, 'first'), {}, { key: 'a' })
    const dup = kernel.spawn(section('a', 5, 'again'), {}, { key: 'dup' })
    await kernel.settled()
    const prompt = kernel.services.get('prompt')!.value as any
    assert.equal(prompt.render(), 'first\n\nsecond')
    assert.equal(dup.state, 'failed')
    assert.match(dup.error!.message, /prompt section "a" is already registered by a/)
    await kernel.remove(a)
    assert.equal(prompt.render(), 'second')
    await kernel.dispose()
  })
})

describe('plugins and the runtime', () => {
  it("a plugin's tools are its effects: listed while it runs, gone when it ends, and a bad one undoes the rest", async () => {
    const kernel = new Kernel()
    kernel.spawn(toPlugin(runtimePlugin) as Plugin, {}, { key: 'yoke:runtime' })
    const tools = toPlugin({
      name: 'tools',
      inject: ['runtime'],
      apply(ctx: { runtime: RuntimeApi }) {
        ctx.runtime.register(echo('one'))
        ctx.runtime.register(echo('two'))
      },
    }) as Plugin
    const broken = toPlugin({
      name: 'broken',
      inject: ['runtime'],
      apply(ctx: { runtime: RuntimeApi }) {
        ctx.runtime.register(echo('three'))
        ctx.runtime.register(echo('bad name!'))
      },
    }) as Plugin
    const fiber = kernel.spawn(tools, {}, { key: 'tools' })
    const bad = kernel.spawn(broken, {}, { key: 'broken' })
    await kernel.settled()
    const rt = kernel.services.get('runtime')!.value as ToolRuntime
    assert.deepEqual(
      rt.list().map((t) => [t.name, t.owner]),
      [
        ['one', 'tools'],
        ['two', 'tools'],
      ],
    )
    assert.equal(bad.state, 'failed')
    assert.equal(bad.error!.code, 'TOOL_INVALID')
    assert.deepEqual(
      fiber.effects().map((e) => e.label),
      ['tool one', 'tool two'],
    )
    await kernel.remove(fiber)
    assert.deepEqual(rt.list(), [])
    await kernel.dispose()
  })
})

describe('edge cases from review', () => {
  it('binary and typed-array output becomes JSON, and the body keeps its own objects unfrozen', async () => {
    const rt = new ToolRuntime()
    const mine = { notes: ['a'] }
    rt.register({ name: 'buf', execute: () => Buffer.from('hi') }, 'p')
    rt.register(
      {
        name: 'typed',
        execute: () => ({
          content: [{ type: 'text', text: 'x' }],
          structured: { bytes: new Uint8Array([1, 2]) },
        }),
      },
      'p',
    )
    rt.register(
      {
        name: 'mine',
        execute: () => ({ content: [{ type: 'text', text: 'x' }], structured: mine }),
      },
      'p',
    )
    assert.equal((await rt.call('buf')).status, 'ok')
    assert.deepEqual((await rt.call('typed')).structured, { bytes: { 0: 1, 1: 2 } })
    const r = await rt.call('mine')
    assert.ok(Object.isFrozen(r.structured))
    mine.notes.push('b') // the tool's own state stays writable
    assert.deepEqual((r.structured as any).notes, ['a'])
  })

  it('a hung tap, approval or result hook cannot hang a call: timeout and abort still end it', async () => {
    const rt = new ToolRuntime({ timeoutMs: 100 })
    rt.register(echo('t'), 'p')
    const never = () => new Promise<never>(() => {})
    const off1 = tapHook(rt.hooks.around, 'hang', never as any)
    assert.equal((await rt.call('t')).status, 'TIMEOUT')
    off1()
    const off2 = tapHook(rt.hooks.preExecute, 'hang', never as any)
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 20)
    assert.equal((await rt.call('t', {}, { signal: controller.signal })).status, 'ABORTED')
    off2()
    tapHook(rt.hooks.result, 'hang', never as any)
    assert.equal((await rt.call('t')).status, 'ok', 'observe-only hooks are not waited for')
  })

  it('an already-aborted caller signal runs nothing and asks nobody', async () => {
    const rt = new ToolRuntime()
    let ran = 0
    let asked = 0
    rt.register({ name: 'risky', execute: () => void ran++ }, 'p')
    rt.hooks.preExecute.tapPromise('ask', async () => ({ kind: 'ask', reason: 'x' }))
    rt.approvals.register({ name: 'b', ask: async () => (asked++, 'allow-once') })
    const controller = new AbortController()
    controller.abort()
    assert.equal((await rt.call('risky', {}, { signal: controller.signal })).status, 'ABORTED')
    assert.deepEqual([ran, asked], [0, 0])
  })

  it('a body deaf to its signal gives its slot back after the grace period', async () => {
    const rt = new ToolRuntime({ unloadGraceMs: 50 })
    rt.register({ name: 'deaf', timeoutMs: 30, execute: () => new Promise(() => {}) }, 'p')
    rt.register({ name: 'quick', concurrency: 'safe', timeoutMs: 1000, execute: () => 'done' }, 'p')
    assert.equal((await rt.call('deaf')).status, 'TIMEOUT')
    assert.equal((await rt.call('quick')).status, 'ok')
  })

  it('a tool body may call other tools, exclusive or not, by passing its call as parent', async () => {
    const rt = new ToolRuntime({ maxConcurrent: 1 })
    rt.register({ name: 'inner', execute: () => 'inner done' }, 'p')
    rt.register(
      {
        name: 'outer',
        timeoutMs: 1000,
        execute: async (_a, ctx) => text(await rt.call('inner', {}, { parent: ctx.call })),
      },
      'p',
    )
    const r = await rt.call('outer')
    assert.equal(r.status, 'ok')
    assert.equal(text(r), 'inner done')
  })

  it('a tool unloaded while its call waits for approval is not run', async () => {
    const rt = new ToolRuntime()
    let ran = false
    let approve = () => {}
    rt.hooks.preExecute.tapPromise('ask', async () => ({ kind: 'ask', reason: 'x' }))
    rt.approvals.register({
      name: 'slow',
      ask: () => new Promise((r) => (approve = () => r('allow-once'))),
    })
    const undo = rt.register({ name: 'gone', execute: () => void (ran = true) }, 'p')
    const pending = rt.call('gone')
    await sleep(10)
    await undo()
    approve()
    assert.equal((await pending).status, 'UNLOADED')
    assert.equal(ran, false)
  })

  it('post-execute: an accept after a replace keeps the replacement', async () => {
    const rt = new ToolRuntime()
    rt.register({ name: 'secret', execute: () => 'AWS_SECRET=abc' }, 'p')
    rt.hooks.postExecute.tapPromise('redact', async () => ({
      kind: 'replace',
      result: 'AWS_SECRET=***',
    }))
    let seen: unknown
    rt.hooks.postExecute.tapPromise('later', async (d) => ((seen = d), { kind: 'accept' }))
    assert.equal(text(await rt.call('secret')), 'AWS_SECRET=***')
    assert.deepEqual(seen, { kind: 'replace', result: 'AWS_SECRET=***' })
  })

  it('the gate: an abandoned waiter lets the next start; a source at its cap lets other sources by', async () => {
    const rt = new ToolRuntime({ maxConcurrent: 8, perSource: { 'mcp:slow': 1 } })
    let release = () => {}
    rt.register({ name: 'hold', execute: () => new Promise((r) => (release = () => r('ok'))) }, 'p')
    rt.register({ name: 'excl', execute: () => 'ok' }, 'p')
    rt.register({ name: 'safe', concurrency: 'safe', execute: () => 'ok' }, 'p')
    const holding = rt.call('hold')
    await sleep(5)
    const controller = new AbortController()
    const waiting = rt.call('excl', {}, { signal: controller.signal })
    const behind = rt.call('safe')
    controller.abort()
    assert.equal((await waiting).status, 'ABORTED')
    release()
    assert.equal((await holding).status, 'ok')
    assert.equal((await behind).status, 'ok')
    let slowRelease = () => {}
    rt.register(
      {
        name: 'slow',
        source: 'mcp:slow',
        concurrency: 'safe',
        execute: () => new Promise((r) => (slowRelease = () => r('ok'))),
      },
      'p',
    )
    const first = rt.call('slow')
    await sleep(5)
    const second = rt.call('slow') // waits for its source's cap
    const started = performance.now()
    assert.equal((await rt.call('safe')).status, 'ok')
    assert.ok(
      performance.now() - started < 500,
      'the native call was not held behind the capped source',
    )
    slowRelease()
    await first
    slowRelease()
    await second
  })

  it('schemas with $id can be registered again after a reload, and by other tools', async () => {
    const rt = new ToolRuntime()
    const schema = { $id: 'https://example.com/fetch.json', type: 'object' }
    const undo = rt.register(echo('fetch', { inputSchema: schema }), 'p')
    rt.register(echo('fetch2', { inputSchema: schema }), 'p')
    await undo()
    rt.register(echo('fetch', { inputSchema: schema }), 'p')
    assert.equal((await rt.call('fetch')).status, 'ok')
  })

  it('a guard that removes itself does not skip the next; removing a scope removes its descendants', async () => {
    const rt = new ToolRuntime()
    rt.register(echo('t'), 'p')
    const off = rt.guard(() => void off())
    rt.guard(() => 'second says no')
    assert.equal((await rt.call('t')).status, 'DENIED')
    const removeAgent = rt.registry.createScope('agent')
    rt.registry.createScope('session', { parent: 'agent' })
    rt.registry.createScope('turn', { parent: 'session' })
    rt.registry.restrict('agent', { deny: ['t'] })
    assert.equal((await rt.call('t', {}, { scope: 'turn' })).status, 'UNKNOWN_TOOL')
    removeAgent()
    rt.registry.createScope('turn')
    assert.equal(
      (await rt.call('t', {}, { scope: 'turn' })).status,
      'DENIED',
      'a new scope, not the old orphan',
    )
  })

  it('a throwing tasks.completed tap is reported, not fatal; spilled output is private', async () => {
    const errors: string[] = []
    const rt = new ToolRuntime({ maxOutputBytes: 1000 }, (message) => errors.push(message))
    rt.tasks.hooks.completed.tap('ui', () => {
      throw new Error('ui gone')
    })
    rt.register({ name: 'bg', spawnOnly: true, execute: () => 'x'.repeat(5000) }, 'p')
    const r = await rt.call('bg')
    const task = await rt.tasks.wait(r.task!)
    assert.equal(task!.status, 'done')
    assert.match(errors.join(), /tasks\.completed tap failed/)
    const { statSync } = await import('node:fs')
    assert.equal(statSync(task!.result!.truncated!.spilled!).mode & 0o777, 0o600)
  })
})

describe('rewritten arguments', () => {
  it('a pre-execute tap may rewrite the arguments: checked against the schema, seen by approval, guards and the body', async () => {
    const rt = new ToolRuntime()
    const ran: unknown[] = []
    rt.register({
      name: 'w',
      inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      execute: (args) => (ran.push(args), 'ok'),
    })
    let rewrite: Record<string, unknown> = { n: 2 }
    tapHook(rt.hooks.preExecute, 'rewriter', async (d) => ({ ...d, args: rewrite }))
    tapHook(rt.hooks.preExecute, 'asker', async () => ({ kind: 'ask' as const, reason: 'check' }))
    const approved: unknown[] = []
    const guarded: unknown[] = []
    rt.approvals.register({
      name: 'record',
      ask: async ({ call }) => (approved.push(call.args), 'allow-once'),
    })
    rt.guard((call) => void guarded.push(call.args))
    assert.equal((await rt.call('w', { n: 1 })).status, 'ok')
    assert.deepEqual(
      [approved, guarded, ran],
      [[{ n: 2 }], [{ n: 2 }], [{ n: 2 }]],
      'a later tap (ask) kept the rewrite',
    )
    rewrite = { n: 'two' }
    const bad = await rt.call('w', { n: 1 })
    assert.equal(bad.status, 'INVALID_ARGS')
    assert.match(bad.error!.message, /as rewritten before the call: \/n must be number/)
    assert.equal(ran.length, 1)
  })
})
