import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AsyncSeriesWaterfallHook, SyncBailHook, SyncHook } from 'tapable'
import { disposeAll, EffectScope, tapHook, toDisposer } from '../../src/index.ts'

describe('disposers', () => {
  it('run once, however often they are called, and share the first call', async () => {
    let runs = 0
    const dispose = toDisposer(() => {
      runs++
    })
    assert.equal(dispose.disposed, false)
    const a = dispose()
    const b = dispose()
    assert.equal(a, b)
    await a
    await dispose()
    assert.equal(runs, 1)
    assert.equal(dispose.disposed, true)
  })

  it('run in reverse order and all run when some throw, then one AggregateError', async () => {
    const order: number[] = []
    const cleanups = [1, 2, 3, 4].map((n) => () => {
      order.push(n)
      if (n % 2 === 0) throw new Error(`fail ${n}`)
    })
    await assert.rejects(disposeAll(cleanups, 'test'), (err: unknown) => {
      assert.ok(err instanceof AggregateError)
      assert.deepEqual(
        err.errors.map((e: Error) => e.message),
        ['fail 4', 'fail 2'],
      )
      assert.match(err.message, /2 of the disposers of test threw/)
      return true
    })
    assert.deepEqual(order, [4, 3, 2, 1])
  })

  it('an effect scope disposes in reverse, and an early disposer leaves the scope', async () => {
    const order: string[] = []
    const scope = new EffectScope(() => assert.fail('nothing is late here'))
    scope.add('a', () => void order.push('a'))
    const b = scope.add('b', () => void order.push('b'))
    scope.add('c', async () => {
      await new Promise((r) => setTimeout(r, 5))
      order.push('c')
    })
    assert.deepEqual(
      scope.tree().map((n) => n.label),
      ['a', 'b', 'c'],
    )
    await b()
    assert.deepEqual(
      scope.tree().map((n) => n.label),
      ['a', 'c'],
    )
    await scope.dispose('scope')
    assert.deepEqual(order, ['b', 'c', 'a'])
    assert.equal(scope.size, 0)
  })

  it('registering on a closed scope disposes at once and reports it', async () => {
    const late: string[] = []
    const scope = new EffectScope((label) => late.push(label))
    await scope.dispose('scope')
    let cleaned = false
    const dispose = scope.add('timer', () => {
      cleaned = true
    })
    await dispose()
    assert.equal(cleaned, true)
    assert.deepEqual(late, ['timer'])
    assert.equal(scope.size, 0)
  })
})

describe('taps', () => {
  it('a removed tap never runs again, though tapable has no untap', () => {
    const hook = new SyncHook<[string]>(['x'])
    const calls: string[] = []
    tapHook(hook, 'keep', (x) => void calls.push(`keep ${x}`))
    const remove = tapHook(hook, 'gone', (x) => void calls.push(`gone ${x}`))
    hook.call('1') // compiles the hook with both taps
    remove()
    hook.call('2')
    remove() // idempotent
    hook.call('3')
    assert.deepEqual(calls, ['keep 1', 'gone 1', 'keep 2', 'keep 3'])
    assert.deepEqual(
      hook.taps.map((t) => t.name),
      ['keep'],
    )
  })

  it('a tap removed while an async call is in flight is skipped by that call too', async () => {
    const hook = new AsyncSeriesWaterfallHook<[number]>(['n'])
    let removeSecond = () => {}
    tapHook(hook, 'first', async (n) => {
      removeSecond() // removed mid-call: the compiled call already holds it
      return n + 1
    })
    removeSecond = tapHook(hook, 'second', async (n) => n * 100)
    tapHook(hook, 'third', async (n) => n + 10)
    assert.equal(await hook.promise(1), 12)
  })

  it('a removed waterfall or bail tap leaves the value alone', async () => {
    const bail = new SyncBailHook<[number], string>(['n'])
    const off = tapHook(bail, 'a', () => 'from a')
    tapHook(bail, 'b', () => 'from b')
    assert.equal(bail.call(1), 'from a')
    off()
    assert.equal(bail.call(1), 'from b')
  })

  it('stage and before order taps; a throwing tap is wrapped with its name and hook', async () => {
    const hook = new AsyncSeriesWaterfallHook<[string[]]>(['list'])
    tapHook(hook, 'late', async (l) => [...l, 'late'], { stage: 10 })
    tapHook(hook, 'b', async (l) => [...l, 'b'])
    tapHook(hook, 'a', async (l) => [...l, 'a'], { before: 'b' })
    tapHook(hook, 'early', async (l) => [...l, 'early'], { stage: -10 })
    assert.deepEqual(await hook.promise([]), ['early', 'a', 'b', 'late'])
    tapHook(
      hook,
      'bad',
      async () => {
        throw new Error('nope')
      },
      {},
      { instance: 'inst', plugin: 'p' },
    )
    await assert.rejects(hook.promise([]), (err: any) => {
      assert.equal(err.code, 'HOOK_FAILED')
      assert.match(err.message, /tap "bad" on hook .* threw: nope/)
      assert.equal(err.site.instance, 'inst')
      return true
    })
  })

  it('a tap needs a name', () => {
    assert.throws(() => tapHook(new SyncHook<[]>([]), '', () => {}), /needs a name/)
  })
})
