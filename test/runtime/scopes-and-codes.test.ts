// Issue 27's kernel edges: exclusive is exclusive within a scope, a call that waits for a person
// holds no gate, `call(…, { scope })` is honoured (and an unknown scope is said), a body's coded
// error keeps its code, and a call to a tool that is not there says why when a tap knows.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ToolRuntime, YokeError, runtimeView, hostTrack } from '../../src/index.ts'
import type { ToolDefinition } from '../../src/runtime/types.ts'

/** A tool whose body waits until `release()`: which calls are inside a body, in order. */
function gated(name: string, concurrency: string) {
  const entered: string[] = []
  let open!: () => void
  const released = new Promise<void>((resolve) => (open = resolve))
  const def: ToolDefinition = {
    name,
    concurrency,
    execute: async (_args, call) => {
      entered.push(call.call.scope)
      await released
      return 'done'
    },
  }
  return { def, entered, release: () => open() }
}

describe('exclusive within a scope', () => {
  it("one scope's exclusive call leaves another scope's calls running", async () => {
    const rt = new ToolRuntime()
    rt.registry.createScope('s1')
    rt.registry.createScope('s2')
    const excl = gated('excl', 'exclusive')
    rt.register(excl.def, 't')
    rt.register({ name: 'safe', concurrency: 'safe', execute: () => 'ok' }, 't')
    const held = rt.call('excl', {}, { scope: 's1' })
    while (!excl.entered.length) await new Promise((r) => setImmediate(r))
    // s2: both a safe call and an exclusive one of its own run while s1's exclusive call holds s1
    assert.equal((await rt.call('safe', {}, { scope: 's2' })).status, 'ok')
    const second = rt.call('excl', {}, { scope: 's2' })
    while (excl.entered.length < 2) await new Promise((r) => setImmediate(r))
    assert.deepEqual(excl.entered, ['s1', 's2'])
    // s1's next call waits for s1's exclusive one, and then runs
    let s1Safe = false
    const later = rt.call('safe', {}, { scope: 's1' }).then((r) => ((s1Safe = true), r))
    await new Promise((r) => setTimeout(r, 20))
    assert.equal(s1Safe, false, "s1's safe call waited for s1's exclusive call")
    excl.release()
    assert.equal((await held).status, 'ok')
    assert.equal((await second).status, 'ok')
    assert.equal((await later).status, 'ok')
  })

  it("subagents' calls are their agent's: two children's exclusive calls do not overlap", async () => {
    const rt = new ToolRuntime()
    rt.registry.createScope('agent')
    rt.registry.createScope('agent/spawn-1', { parent: 'agent', subagent: true })
    rt.registry.createScope('agent/spawn-2', { parent: 'agent', subagent: true })
    rt.registry.createScope('other')
    const excl = gated('excl', 'exclusive')
    rt.register(excl.def, 't')
    const first = rt.call('excl', {}, { scope: 'agent/spawn-1' })
    while (!excl.entered.length) await new Promise((r) => setImmediate(r))
    const sibling = rt.call('excl', {}, { scope: 'agent/spawn-2' })
    const elsewhere = rt.call('excl', {}, { scope: 'other' })
    while (excl.entered.length < 2) await new Promise((r) => setImmediate(r))
    await new Promise((r) => setTimeout(r, 20))
    assert.deepEqual(
      excl.entered,
      ['agent/spawn-1', 'other'],
      'the sibling waits; another agent runs',
    )
    excl.release()
    await Promise.all([first, sibling, elsewhere])
    assert.deepEqual(excl.entered, ['agent/spawn-1', 'other', 'agent/spawn-2'])
  })

  it('a waiter held back by its own scope lets other scopes pass, in order within each scope', async () => {
    const rt = new ToolRuntime({ maxConcurrent: 4 })
    for (const s of ['a', 'b']) rt.registry.createScope(s)
    const excl = gated('excl', 'exclusive')
    rt.register(excl.def, 't')
    const order: string[] = []
    rt.register(
      {
        name: 'mark',
        concurrency: 'safe',
        execute: (args, call) => void order.push(`${call.call.scope}:${(args as { n: number }).n}`),
      },
      't',
    )
    const first = rt.call('excl', {}, { scope: 'a' })
    while (!excl.entered.length) await new Promise((r) => setImmediate(r))
    const queued = [
      rt.call('mark', { n: 1 }, { scope: 'a' }),
      rt.call('mark', { n: 1 }, { scope: 'b' }),
      rt.call('mark', { n: 2 }, { scope: 'a' }),
      rt.call('mark', { n: 2 }, { scope: 'b' }),
    ]
    await Promise.all(queued.filter((_, i) => i % 2)) // b's calls end while a is held
    assert.deepEqual(order, ['b:1', 'b:2'])
    excl.release()
    await Promise.all([first, ...queued])
    assert.deepEqual(order, ['b:1', 'b:2', 'a:1', 'a:2'])
  })

  it('a call waiting for a person holds no gate: an exclusive call elsewhere and in its scope runs', async () => {
    const rt = new ToolRuntime()
    rt.registry.createScope('asker')
    let asked!: () => void
    const asking = new Promise<void>((r) => (asked = r))
    rt.approvals.register({
      name: 'slow person',
      ask: (request) =>
        new Promise((resolve) => {
          asked()
          request.signal?.addEventListener('abort', () => resolve('deny'))
        }),
    })
    rt.hooks.preExecute.tapPromise('ask-for-risky', async (d, call) =>
      call.name === 'risky' ? { kind: 'ask', reason: 'risky' } : d,
    )
    rt.register({ name: 'risky', concurrency: 'exclusive', execute: () => 'ran' }, 't')
    rt.register({ name: 'other', concurrency: 'exclusive', execute: () => 'ran' }, 't')
    const controller = new AbortController()
    const waiting = rt.call('risky', {}, { scope: 'asker', signal: controller.signal })
    await asking
    assert.equal((await rt.call('other', {}, { scope: 'asker' })).status, 'ok')
    assert.equal((await rt.call('other')).status, 'ok')
    controller.abort()
    assert.equal((await waiting).status, 'ABORTED')
  })
})

describe('the scope a call names', () => {
  it("yoke.call's scope option reaches the runtime, and a scope that does not exist is said", async () => {
    const rt = new ToolRuntime()
    const host = runtimeView(rt, 'host', hostTrack)
    const session = host.scope('session-1')
    session.register({ name: 'mine', execute: () => 'session tool' })
    assert.equal((await host.call('mine', {}, { scope: 'session-1' })).status, 'ok')
    assert.equal((await host.call('mine')).status, 'UNKNOWN_TOOL')
    const missing = await host.call('mine', {}, { scope: 'no-such-scope' })
    assert.equal(missing.status, 'SCOPE_UNKNOWN')
    assert.match(missing.error!.message, /no scope named no-such-scope/)
    // a scope handle calls into its own scope whatever the options say
    assert.equal((await session.call('mine', {}, { scope: 'global' })).status, 'ok')
  })
})

describe('codes that say why', () => {
  it("a body's coded error reaches the caller with its code and hint", async () => {
    const rt = new ToolRuntime()
    rt.register(
      {
        name: 'waits',
        execute: () => {
          throw new YokeError('PLUGIN_WAITING', {
            instance: 'x',
            reason: 'it is not ready',
            what: 'try later',
          })
        },
      },
      't',
    )
    rt.register(
      {
        name: 'lies',
        execute: () => {
          throw new YokeError('DENIED', { name: 'lies', reason: 'a body cannot deny' })
        },
      },
      't',
    )
    const waits = await rt.call('waits')
    assert.equal(waits.status, 'PLUGIN_WAITING')
    assert.match(waits.error!.hint!, /try later/)
    // codes only the pipeline gives stay the pipeline's: a body claiming one failed
    assert.equal((await rt.call('lies')).status, 'EXEC_FAILED')
  })

  it('a tap on unknownTool explains a missing tool; a throwing tap falls back to UNKNOWN_TOOL', async () => {
    const errors: string[] = []
    const rt = new ToolRuntime({}, (message) => errors.push(message))
    rt.hooks.unknownTool.tap('withdrawals', (name) =>
      name === 'gone'
        ? new YokeError('PLUGIN_WAITING', { instance: 'i', reason: 'r', what: 'w' })
        : undefined,
    )
    assert.equal((await rt.call('gone')).status, 'PLUGIN_WAITING')
    assert.equal((await rt.call('never')).status, 'UNKNOWN_TOOL')
    rt.hooks.unknownTool.tap('broken', () => {
      throw new Error('boom')
    })
    assert.equal((await rt.call('never')).status, 'UNKNOWN_TOOL')
    assert.match(errors.join('\n'), /unknownTool hook failed for never/)
  })

  it("a pre-execute tap's arguments that are not JSON data are refused, never run as {}", async () => {
    const rt = new ToolRuntime()
    let ran = false
    rt.register({ name: 'rewritten', execute: () => void (ran = true) }, 't')
    let deep: Record<string, unknown> = {}
    for (let i = 0; i < 100; i++) deep = { deep }
    rt.hooks.preExecute.tapPromise('rewrite', async (d) => ({ ...d, args: deep }))
    const result = await rt.call('rewritten', {})
    assert.equal(result.status, 'INVALID_ARGS')
    assert.match(result.error!.message, /as rewritten before the call: the arguments are not JSON/)
    assert.equal(ran, false)
  })

  it('a scope that masks a name out gets UNKNOWN_TOOL: why it is missing elsewhere is not said there', async () => {
    const rt = new ToolRuntime()
    rt.registry.createScope('view')
    rt.registry.restrict('view', { deny: ['mcp__held__*'] })
    rt.hooks.unknownTool.tap('held', (name) =>
      name.startsWith('mcp__held__')
        ? new YokeError('PLUGIN_WAITING', { instance: 'held', reason: 'r', what: 'w' })
        : undefined,
    )
    assert.equal((await rt.call('mcp__held__x')).status, 'PLUGIN_WAITING')
    assert.equal((await rt.call('mcp__held__x', {}, { scope: 'view' })).status, 'UNKNOWN_TOOL')
  })
})
