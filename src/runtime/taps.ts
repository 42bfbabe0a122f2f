/**
 * @module runtime/taps
 * The pipeline runs its hooks' taps itself rather than through tapable's `promise()`, which chains
 * several promises per tap: a tap that answers at once goes on at once, a tap that answers with a
 * promise costs that promise and one continuation. The order, a removed tap's silence and the
 * error a failing tap gives (tapHook's HOOK_FAILED) are tapable's and tapHook's.
 */
import { directTap, type AnyHook } from '../kernel/hooks.ts'

type Fold<T> = (value: T, answer: unknown) => T

/**
 * A waterfall over `hook`'s taps: each gets the value so far and `a`, `b`; `fold` merges its
 * answer; once `stop` holds for the value, the later taps are skipped; `then` gets the last value.
 * Synchronous while the taps are: then it returns what `then` returns.
 */
export function waterfall<T, R>(
  hook: AnyHook,
  value: T,
  a: unknown,
  b: unknown,
  fold: Fold<T>,
  stop: ((value: T) => boolean) | undefined,
  then: (value: T) => R | Promise<R>,
): R | Promise<R> {
  if (!hook.taps.length) return then(value)
  return new Waterfall(tapsOf(hook), a, b, fold, stop, then).from(0, value)
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

/** One run of a waterfall: its taps and arguments, held while a tap's promise is awaited. */
class Waterfall<T, R> {
  constructor(
    readonly taps: AnyHook['taps'],
    readonly a: unknown,
    readonly b: unknown,
    readonly fold: Fold<T>,
    readonly stop: ((value: T) => boolean) | undefined,
    readonly then: (value: T) => R | Promise<R>,
  ) {}

  from(i: number, value: T): R | Promise<R> {
    const { taps, fold, stop } = this
    for (; i < taps.length && !stop?.(value); i++) {
      const tap = directTap(taps[i]!)
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
        return answer.then(
          (n: unknown) => this.from(next, fold(held, n)),
          (err: unknown) => {
            throw tap.fail(err)
          },
        )
      }
      value = fold(value, answer)
    }
    return this.then(value)
  }
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
    const tap = directTap(t)
    if (!tap.live) continue
    try {
      const answer = tap.fn(a, b)
      if (answer instanceof Promise) answer.catch((err: unknown) => report(tap.fail(err)))
    } catch (err) {
      report(tap.fail(err))
    }
  }
}
