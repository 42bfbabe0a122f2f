/**
 * @module runtime/taps
 * The pipeline runs its hooks' taps itself rather than through tapable's `promise()`, which chains
 * several promises per tap: a tap that answers at once goes on at once, a tap that answers with a
 * promise costs that promise and one continuation. The order, a removed tap's silence and the
 * error a failing tap gives (tapHook's HOOK_FAILED) are tapable's and tapHook's.
 */
import { directTap, type AnyHook } from '../kernel/hooks.ts'

type Fold<T> = (value: T, answer: unknown) => T

/** The value a stage gives when it waits: what it goes on with reaches the sink later. */
export const PENDING = Symbol('pending')

/** Where a stage that waits goes on: the call's flight. */
export interface Sink {
  /** goes on with `next` once `wait` settles; a failed wait is `mapError`'s error */
  after<T>(
    wait: PromiseLike<T>,
    next: (value: T) => unknown,
    mapError?: (err: unknown) => unknown,
  ): typeof PENDING
}

/**
 * A waterfall over `hook`'s taps: each gets the value so far and `a`, `b`; `fold` merges its
 * answer; once `stop` holds for the value, the later taps are skipped; `then` gets the last value.
 * Synchronous while the taps are (it returns what `then` returns); at a tap that answers with a
 * promise it returns PENDING and goes on through `sink`.
 */
export function waterfall<T, R>(
  hook: AnyHook,
  value: T,
  a: unknown,
  b: unknown,
  fold: Fold<T>,
  stop: ((value: T) => boolean) | undefined,
  then: (value: T) => R,
  sink: Sink,
): R | typeof PENDING {
  if (!hook.taps.length) return then(value)
  return new Waterfall(hook, tapsOf(hook), a, b, fold, stop, then, sink).from(0, value)
}

/** One run of a waterfall: its taps and arguments, held while a tap's promise is awaited. */
class Waterfall<T, R> {
  constructor(
    readonly hook: AnyHook,
    readonly taps: AnyHook['taps'],
    readonly a: unknown,
    readonly b: unknown,
    readonly fold: Fold<T>,
    readonly stop: ((value: T) => boolean) | undefined,
    readonly then: (value: T) => R,
    readonly sink: Sink,
  ) {}

  from(i: number, value: T): R | typeof PENDING {
    const { taps, fold, stop } = this
    for (; i < taps.length && !stop?.(value); i++) {
      const tap = directTap(taps[i]!, this.hook)
      if (!tap.live) continue
      let answer: unknown
      try {
        answer = tap.fn(value, this.a, this.b)
      } catch (err) {
        throw tap.fail(err)
      }
      if (answer instanceof Promise) {
        const next = i + 1
        const held = value
        return this.sink.after(answer, (n) => this.from(next, fold(held, n)), tap.fail)
      }
      value = fold(value, answer)
    }
    return this.then(value)
  }
}

const copies = new WeakMap<AnyHook, AnyHook['taps']>()

/**
 * The hook's taps as they are now, in a copy kept until they change: a tap removed while a call
 * runs must not shift the ones after it. tapable resets a hook's compiled call whenever its taps
 * change (tapHook's removal too): that is when the copy is dropped.
 */
function tapsOf(hook: AnyHook): AnyHook['taps'] {
  let taps = copies.get(hook)
  if (taps) return taps
  const target = hook as AnyHook & { _resetCompilation(): void }
  if (!Object.hasOwn(target, '_resetCompilation')) {
    const reset = target._resetCompilation
    target._resetCompilation = function () {
      copies.delete(hook)
      reset.call(this)
    }
  }
  copies.set(hook, (taps = Object.freeze(hook.taps.slice()) as AnyHook['taps']))
  return taps
}

/** tapable's waterfall fold: an answer replaces the value, undefined keeps it. */
export const replaced = <T>(value: T, answer: unknown): T =>
  answer === undefined ? value : (answer as T)

/** Starts every tap of an observing hook with `a`, `b`; a failure goes to `report`, never to the caller. */
export function observe(
  hook: AnyHook,
  a: unknown,
  b: unknown,
  report: (err: unknown) => void,
): void {
  for (const t of tapsOf(hook)) {
    const tap = directTap(t, hook)
    if (!tap.live) continue
    try {
      const answer = tap.fn(a, b)
      if (answer instanceof Promise) answer.catch((err: unknown) => report(tap.fail(err)))
    } catch (err) {
      report(tap.fail(err))
    }
  }
}
