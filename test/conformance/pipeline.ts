/**
 * The pipeline conformance suite. Every tool source (native, plugin executables, MCP) runs it
 * through its own way of registering a tool with one of a few behaviours; every call goes through
 * the real ToolRuntime, and every stage and failure path must end in exactly one result.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, afterEach, before, describe, it } from 'node:test'
import type { Disposer } from '../../src/index.ts'
import type { ToolRuntime } from '../../src/index.ts'
import type { PostDecision, PreDecision, ToolResult } from '../../src/runtime/types.ts'
import { tapHook } from '../../src/kernel/hooks.ts'

/**
 * What a source must provide: a tool named `name` that
 * - echo:     returns its arguments as JSON text
 * - fail:     fails (throws, exits non-zero, or reports isError)
 * - sleep:    waits args.ms, stopping early when its signal aborts
 * - progress: reports progress 3 times, then returns "done"
 * - big:      returns args.bytes bytes of text
 */
export type Behaviour = 'echo' | 'fail' | 'sleep' | 'progress' | 'big'

export interface ToolSource {
  runtime: ToolRuntime
  register(
    name: string,
    behaviour: Behaviour,
    options?: {
      inputSchema?: Record<string, unknown>
      risk?: 'low' | 'high'
      concurrency?: 'safe' | 'exclusive'
      timeoutMs?: number
    },
  ): Promise<Disposer>
  /** the name the tool registered as `name` is called by (MCP: mcp__<server>__<name>) */
  publicName?(name: string): string
  close(): Promise<void>
}

const text = (r: ToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')

export function runPipelineConformance(sourceName: string, open: () => Promise<ToolSource>) {
  describe(`pipeline conformance: ${sourceName}`, () => {
    let source: ToolSource
    let rt: ToolRuntime
    const n = (name: string) => source.publicName?.(name) ?? name
    const untaps: Array<() => void> = []
    const tap = <H extends Parameters<typeof tapHook>[0]>(
      hook: H,
      name: string,
      fn: Parameters<typeof tapHook<H>>[2],
      options?: Parameters<typeof tapHook>[3],
    ) => {
      untaps.push(tapHook(hook, name, fn, options))
    }
    before(async () => {
      source = await open()
      rt = source.runtime
      await source.register('echo', 'echo', {
        inputSchema: { type: 'object', properties: { msg: { type: 'string' } }, required: ['msg'] },
      })
      await source.register('fail', 'fail')
      await source.register('sleep', 'sleep', { timeoutMs: 400 })
      await source.register('progress', 'progress')
      await source.register('big', 'big')
      await source.register('risky', 'echo', { risk: 'high' })
    })
    after(async () => source.close())
    const reset = () => untaps.splice(0).forEach((u) => u())
    afterEach(reset) // a failing test must not leave its taps to the next

    it('stage 1: an unknown tool and invalid arguments end with UNKNOWN_TOOL and INVALID_ARGS', async () => {
      const unknown = await rt.call('no_such_tool', {})
      assert.equal(unknown.status, 'UNKNOWN_TOOL')
      assert.equal(unknown.ok, false)
      assert.match(text(unknown), /hint: /)
      const invalid = await rt.call(n('echo'), { msg: 42 })
      assert.equal(invalid.status, 'INVALID_ARGS')
      assert.match(invalid.error!.message, /\/msg must be string/)
      const missing = await rt.call(n('echo'), {})
      assert.equal(missing.status, 'INVALID_ARGS')
    })

    it('the allowed path returns the output, frozen, with a duration', async () => {
      const result = await rt.call(n('echo'), { msg: 'hi' })
      assert.equal(result.status, 'ok', text(result))
      assert.deepEqual(JSON.parse(text(result)), { msg: 'hi' })
      assert.ok(
        Object.isFrozen(result) &&
          Object.isFrozen(result.content) &&
          Object.isFrozen(result.content[0]),
      )
      assert.equal(typeof result.durationMs, 'number')
    })

    it('stage 2: deny beats everything, ask cannot be relaxed, and taps run by stage and before', async () => {
      const order: string[] = []
      tap(rt.hooks.preExecute, 'late', async (d) => (order.push('late'), d), { stage: 10 })
      tap(rt.hooks.preExecute, 'b', async (d) => (order.push('b'), d))
      tap(rt.hooks.preExecute, 'a', async (d) => (order.push('a'), d), { before: 'b' })
      tap(rt.hooks.preExecute, 'first', async (d) => (order.push('first'), d), { stage: -10 })
      assert.equal((await rt.call(n('echo'), { msg: 'x' })).status, 'ok')
      assert.deepEqual(order, ['first', 'a', 'b', 'late'])
      reset()
      let bodyRan = false
      tap(
        rt.hooks.result,
        'watch',
        async (call, result) => void (bodyRan ||= call.name === n('echo') && result.ok),
      )
      tap(rt.hooks.preExecute, 'denier', async (_d, call) =>
        call.name === n('echo')
          ? ({ kind: 'deny', reason: 'no echo today' } as PreDecision)
          : undefined,
      )
      tap(rt.hooks.preExecute, 'allower', async () => ({ kind: 'allow' }) as PreDecision)
      const denied = await rt.call(n('echo'), { msg: 'x' })
      assert.equal(denied.status, 'DENIED')
      assert.match(denied.error!.message, /no echo today/)
      assert.match(denied.error!.hint!, /narrow or remove the deny rule/)
      assert.equal(bodyRan, false)
      reset()
      tap(
        rt.hooks.preExecute,
        'asker',
        async () => ({ kind: 'ask', reason: 'sure?' }) as PreDecision,
      )
      tap(rt.hooks.preExecute, 'relaxer', async () => ({ kind: 'allow' }) as PreDecision)
      const asked = await rt.call(n('echo'), { msg: 'x' })
      assert.equal(asked.status, 'DENIED', 'ask stays ask, and with no bridge it is denied')
      assert.match(asked.error!.message, /no approval bridge/)
      reset()
    })

    it('stage 3: ask goes to the approval bridge; a refusal is DENIED', async () => {
      tap(
        rt.hooks.preExecute,
        'asker',
        async () => ({ kind: 'ask', reason: 'sure?' }) as PreDecision,
      )
      let answer: 'allow-once' | 'deny' = 'allow-once'
      const seen: string[] = []
      const off = rt.approvals.register({
        name: 'test',
        ask: async ({ call, reason }) => (seen.push(`${call.name}: ${reason}`), answer),
      })
      assert.equal((await rt.call(n('echo'), { msg: 'x' })).status, 'ok')
      answer = 'deny'
      const refused = await rt.call(n('echo'), { msg: 'x' })
      assert.equal(refused.status, 'DENIED')
      assert.match(refused.error!.message, /refused through "test"/)
      assert.deepEqual(seen, [`${n('echo')}: sure?`, `${n('echo')}: sure?`])
      off()
      reset()
    })

    it('stage 4: guards are deny-only and the first denial wins', async () => {
      const seen: string[] = []
      const g1 = rt.guard(
        (call) => (seen.push('g1'), call.name === n('echo') ? 'guard one says no' : undefined),
      )
      const g2 = rt.guard(() => (seen.push('g2'), 'guard two says no'))
      const result = await rt.call(n('echo'), { msg: 'x' })
      assert.equal(result.status, 'DENIED')
      assert.match(result.error!.message, /guard one says no/)
      assert.deepEqual(seen, ['g1'])
      g1()
      g2()
      assert.equal((await rt.call(n('echo'), { msg: 'x' })).status, 'ok')
    })

    it('stage 5: around taps wrap the executor; a later tap wraps the earlier ones', async () => {
      const log: string[] = []
      tap(rt.hooks.around, 'first', async (next) => async (call, ctx) => {
        log.push('first in')
        const out = await next(call, ctx)
        log.push('first out')
        return out
      })
      tap(rt.hooks.around, 'second', async (next) => async (call, ctx) => {
        log.push('second in')
        return next(call, ctx)
      })
      assert.equal((await rt.call(n('echo'), { msg: 'x' })).status, 'ok')
      assert.deepEqual(log, ['second in', 'first in', 'first out'])
      reset()
    })

    it('stage 7: post-execute may replace or block the result, and block is final', async () => {
      tap(rt.hooks.postExecute, 'redact', async (_d, call) =>
        call.name === n('echo')
          ? ({ kind: 'replace', result: 'redacted' } as PostDecision)
          : undefined,
      )
      const replaced = await rt.call(n('echo'), { msg: 'secret' })
      assert.equal(text(replaced), 'redacted')
      tap(
        rt.hooks.postExecute,
        'blocker',
        async () => ({ kind: 'block', reason: 'not today' }) as PostDecision,
      )
      tap(rt.hooks.postExecute, 'unblocker', async () => ({ kind: 'accept' }) as PostDecision)
      const blocked = await rt.call(n('echo'), { msg: 'x' })
      assert.equal(blocked.status, 'BLOCKED')
      assert.match(text(blocked), /not today/)
      reset()
    })

    it('stage 9: the result hook sees every result, frozen', async () => {
      const seen: ToolResult[] = []
      tap(rt.hooks.result, 'audit', async (_call, result) => void seen.push(result))
      await rt.call(n('echo'), { msg: 'x' })
      await rt.call('no_such_tool')
      assert.deepEqual(
        seen.map((r) => r.status),
        ['ok', 'UNKNOWN_TOOL'],
      )
      assert.ok(seen.every((r) => Object.isFrozen(r)))
      assert.throws(() => ((seen[0] as any).status = 'x'))
      reset()
    })

    it('exactly one result in every failure path: throwing taps, a failing body, timeout, abort', async () => {
      const results: string[] = []
      tap(rt.hooks.result, 'count', async (_c, r) => void results.push(r.status))
      const failed = await rt.call(n('fail'), {})
      assert.ok(['EXEC_FAILED', 'TOOL_ERROR'].includes(failed.status), failed.status)
      for (const hook of ['preExecute', 'around', 'postExecute'] as const) {
        const off = tapHook(rt.hooks[hook] as any, `thrower-${hook}`, async () => {
          throw new Error(`${hook} tap broke`)
        })
        const r = await rt.call(n('echo'), { msg: 'x' })
        assert.equal(r.status, 'HOOK_FAILED', hook)
        assert.match(text(r), new RegExp(`${hook} tap broke`))
        off()
      }
      const timedOut = await rt.call(n('sleep'), { ms: 5000 })
      assert.equal(timedOut.status, 'TIMEOUT')
      const controller = new AbortController()
      setTimeout(() => controller.abort(), 50)
      const aborted = await rt.call(n('sleep'), { ms: 5000 }, { signal: controller.signal })
      assert.equal(aborted.status, 'ABORTED')
      assert.deepEqual(results, [
        failed.status,
        'HOOK_FAILED',
        'HOOK_FAILED',
        'HOOK_FAILED',
        'TIMEOUT',
        'ABORTED',
      ])
      reset()
    })

    it('progress from the body reaches the progress hook and the caller', async () => {
      const hooked: unknown[] = []
      const direct: unknown[] = []
      tap(rt.hooks.progress, 'p', (_call, event) => void hooked.push(event))
      const result = await rt.call(n('progress'), {}, { onProgress: (e) => direct.push(e) })
      assert.equal(result.status, 'ok')
      assert.equal(hooked.length, 3)
      assert.equal(direct.length, 3)
      reset()
    })

    it('output over the limit becomes a preview plus a spill file', async () => {
      const result = await rt.call(n('big'), { bytes: 2_000_000 })
      assert.equal(result.status, 'ok')
      assert.ok(result.truncated && result.truncated.bytes >= 2_000_000)
      assert.ok(text(result).length < rt.settings.previewBytes + 500)
      assert.match(text(result), /\[yoke: output truncated\. .* The whole output is in /)
      assert.ok(readFileSync(result.truncated!.spilled!, 'utf8').length >= 2_000_000)
    })
  })
}

/** A source's own tool, as the stage suite exercises it: valid and invalid arguments, and a check of the output. */
export interface RealTool {
  runtime: ToolRuntime
  tool: string
  validArgs: Record<string, unknown>
  invalidArgs: Record<string, unknown>
  check(result: ToolResult): void
  close(): Promise<void>
}

/**
 * The stage conformance suite for tools whose behaviour is their own (skills_list, skill_read, …):
 * every pipeline stage applies to them exactly as to any other tool.
 */
export function runStageConformance(sourceName: string, open: () => Promise<RealTool>) {
  describe(`stage conformance: ${sourceName}`, () => {
    let t: RealTool
    const untaps: Array<() => void> = []
    before(async () => (t = await open()))
    after(async () => t.close())
    afterEach(() => untaps.splice(0).forEach((u) => u()))

    it('validates its arguments, and returns its output frozen', async () => {
      assert.equal((await t.runtime.call(t.tool, t.invalidArgs)).status, 'INVALID_ARGS')
      const result = await t.runtime.call(t.tool, t.validArgs)
      assert.equal(result.status, 'ok', text(result))
      t.check(result)
      assert.ok(Object.isFrozen(result) && Object.isFrozen(result.content))
    })

    it('pre-execute deny and ask, guards, post-execute replace and block all apply', async () => {
      untaps.push(
        tapHook(
          t.runtime.hooks.preExecute,
          'deny',
          async () => ({ kind: 'deny', reason: 'no' }) as PreDecision,
        ),
      )
      assert.equal((await t.runtime.call(t.tool, t.validArgs)).status, 'DENIED')
      untaps.splice(0).forEach((u) => u())
      untaps.push(
        tapHook(
          t.runtime.hooks.preExecute,
          'ask',
          async () => ({ kind: 'ask', reason: 'sure?' }) as PreDecision,
        ),
      )
      assert.equal(
        (await t.runtime.call(t.tool, t.validArgs)).status,
        'DENIED',
        'ask with no bridge',
      )
      untaps.splice(0).forEach((u) => u())
      untaps.push(t.runtime.guard(() => 'guarded'))
      assert.equal((await t.runtime.call(t.tool, t.validArgs)).status, 'DENIED')
      untaps.splice(0).forEach((u) => u())
      untaps.push(
        tapHook(
          t.runtime.hooks.postExecute,
          'swap',
          async () => ({ kind: 'replace', result: 'swapped' }) as PostDecision,
        ),
      )
      assert.equal(text(await t.runtime.call(t.tool, t.validArgs)), 'swapped')
      untaps.push(
        tapHook(
          t.runtime.hooks.postExecute,
          'block',
          async () => ({ kind: 'block', reason: 'blocked' }) as PostDecision,
        ),
      )
      assert.equal((await t.runtime.call(t.tool, t.validArgs)).status, 'BLOCKED')
    })

    it('the result hook sees it, and a cancelled call does not run', async () => {
      const seen: string[] = []
      untaps.push(tapHook(t.runtime.hooks.result, 'see', async (call) => void seen.push(call.name)))
      await t.runtime.call(t.tool, t.validArgs)
      assert.deepEqual(seen, [t.tool])
      const controller = new AbortController()
      controller.abort()
      assert.equal(
        (await t.runtime.call(t.tool, t.validArgs, { signal: controller.signal })).status,
        'ABORTED',
      )
    })
  })
}
