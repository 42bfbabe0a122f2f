// The pipeline runs its hooks' taps itself (src/runtime/taps.ts), not through tapable's promise():
// the order, a removed tap's silence and a failing tap's error must be what tapable and tapHook give.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { tapHook, ToolRuntime } from '../../src/index.ts'

function runtime() {
  const rt = new ToolRuntime()
  const seen: string[] = []
  rt.register({ name: 'echo', execute: async (args) => (seen.push('body'), JSON.stringify(args)) })
  return { rt, seen }
}

describe('the pipeline runs its taps itself', () => {
  it('every stage runs, in order, once per call; sync and async taps mix', async () => {
    const { rt, seen } = runtime()
    tapHook(rt.hooks.preExecute, 'pre-sync', (d) => (seen.push('pre-sync'), d))
    tapHook(rt.hooks.preExecute, 'pre-async', async (d) => (seen.push('pre-async'), d))
    tapHook(rt.hooks.around, 'around', async (next) => async (call, ctx) => {
      seen.push('around')
      return next(call, ctx)
    })
    tapHook(rt.hooks.postExecute, 'post', async (d) => (seen.push('post'), d))
    tapHook(rt.hooks.result, 'result', () => void seen.push('result'))
    rt.guard(() => (seen.push('guard'), undefined))
    const result = await rt.call('echo', { a: 1 })
    assert.equal(result.status, 'ok')
    assert.ok(Object.isFrozen(result) && Object.isFrozen(result.content))
    assert.deepEqual(seen, ['pre-sync', 'pre-async', 'guard', 'around', 'body', 'post', 'result'])
  })

  it('a tap removed before a call, or during it by an earlier tap, never runs; one added later does', async () => {
    const { rt, seen } = runtime()
    let removeLater = () => {}
    tapHook(rt.hooks.preExecute, 'first', async (d) => {
      seen.push('first')
      removeLater() // the call already holds its copy of the taps: this one must still be skipped
      return d
    })
    removeLater = tapHook(rt.hooks.preExecute, 'later', async () => {
      seen.push('later')
      return { kind: 'deny' as const, reason: 'should not run' }
    })
    const gone = tapHook(rt.hooks.postExecute, 'gone', async () => ({
      kind: 'block' as const,
      reason: 'should not run',
    }))
    await rt.call('echo') // the hooks' copies are made with every tap on
    seen.length = 0
    gone()
    assert.equal((await rt.call('echo')).status, 'ok')
    assert.deepEqual(seen, ['first', 'body'])
    tapHook(rt.hooks.preExecute, 'new', async () => ({
      kind: 'deny' as const,
      reason: 'added later',
    }))
    const denied = await rt.call('echo')
    assert.equal(denied.status, 'DENIED')
    assert.match(denied.error!.message, /added later/)
  })

  it('taps made without tapHook run too: tapable promise, callback and sync taps', async () => {
    const { rt, seen } = runtime()
    rt.hooks.preExecute.tapPromise('promise', async (d) => (seen.push('promise'), d))
    rt.hooks.preExecute.tapAsync('callback', (d, _call, done) => {
      seen.push('callback')
      setImmediate(() => done(null, d))
    })
    rt.hooks.preExecute.tap('sync', (d) => (seen.push('sync'), d))
    assert.equal((await rt.call('echo')).status, 'ok')
    assert.deepEqual(seen, ['promise', 'callback', 'sync', 'body'])
  })

  it('a tap that throws, at once or later, fails the call closed with its name; the next call is fine', async () => {
    for (const [label, fn] of [
      [
        'sync',
        () => {
          throw new Error('broke at once')
        },
      ],
      [
        'async',
        async () => {
          throw new Error('broke later')
        },
      ],
    ] as const) {
      const { rt, seen } = runtime()
      const off = tapHook(rt.hooks.preExecute, `bad-${label}`, fn as never)
      const result = await rt.call('echo')
      assert.equal(result.status, 'HOOK_FAILED', label)
      assert.match(result.error!.message, new RegExp(`bad-${label}`))
      assert.deepEqual(seen, [], 'the body never ran')
      off()
      assert.equal((await rt.call('echo')).status, 'ok')
    }
  })

  it('a deny skips the later taps, and a result tap that fails is reported, not thrown', async () => {
    const errors: string[] = []
    const rt = new ToolRuntime({}, (message) => errors.push(message))
    rt.register({ name: 'echo', execute: () => 'ok' })
    const seen: string[] = []
    tapHook(rt.hooks.preExecute, 'deny', () => ({ kind: 'deny' as const, reason: 'no' }))
    tapHook(rt.hooks.preExecute, 'after', async (d) => (seen.push('after'), d))
    tapHook(rt.hooks.result, 'broken', async () => {
      throw new Error('observer broke')
    })
    assert.equal((await rt.call('echo')).status, 'DENIED')
    assert.deepEqual(seen, [])
    await new Promise(setImmediate)
    assert.deepEqual(errors, ['a result hook failed for echo'])
  })
})
