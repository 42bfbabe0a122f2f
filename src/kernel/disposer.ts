/**
 * @module kernel/disposer
 * Disposers and the effect scope that collects them. Every registration in yoke returns a
 * Disposer: calling it more than once is harmless, and it drops its reference to the cleanup.
 */
import { YokeError } from '../errors.ts'

export type Cleanup = () => void | Promise<void>

/** An idempotent, awaitable undo. `disposed` turns true on the first call. */
export interface Disposer {
  (): Promise<void>
  readonly disposed: boolean
}

/** Wraps a cleanup so that it runs once; later calls return the first call's promise. */
export function toDisposer(cleanup: Cleanup): Disposer {
  let pending: Cleanup | undefined = cleanup
  let done: Promise<void> | undefined
  const dispose = (() => {
    if (!done) {
      const run = pending!
      pending = undefined // drop the reference: a disposed registration must not pin its target
      done = (async () => run())()
    }
    return done
  }) as Disposer
  Object.defineProperty(dispose, 'disposed', { get: () => done !== undefined })
  return dispose
}

/** Waits for `work` at most `ms`: true when it settled in time (either way), false when time ran out. */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<false>(
    (resolve) => (timer = setTimeout(resolve, Math.max(0, ms), false)),
  )
  const done = await Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    late,
  ])
  clearTimeout(timer)
  return done
}

/** Runs every cleanup, last first, even when some throw; then throws one AggregateError. */
export async function disposeAll(cleanups: Iterable<Cleanup>, what: string): Promise<void> {
  const errors: unknown[] = []
  for (const cleanup of [...cleanups].reverse()) {
    try {
      await cleanup()
    } catch (err) {
      errors.push(err instanceof AggregateError && err.errors.length ? err.errors : err)
    }
  }
  if (errors.length) {
    const flat = errors.flat()
    const summary = new YokeError('DISPOSE_FAILED', { count: flat.length, what })
    throw new AggregateError(flat, summary.message)
  }
}

/** One node of the labelled effect tree that `yoke inspect` prints. */
export interface EffectNode {
  label: string
  children?: EffectNode[]
}

interface Effect {
  label: string
  dispose: Disposer
  children?: () => EffectNode[]
}

/**
 * The effects of one activation of a fiber. Disposing the scope disposes them in reverse order;
 * an effect added after that is disposed at once and reported through `onLate`.
 */
export class EffectScope {
  #effects = new Set<Effect>()
  #closed = false

  constructor(private readonly onLate: (label: string) => void) {}

  get closed() {
    return this.#closed
  }

  get size() {
    return this.#effects.size
  }

  add(label: string, cleanup: Cleanup, children?: () => EffectNode[]): Disposer {
    if (this.#closed) {
      this.onLate(label)
      const late = toDisposer(cleanup)
      void late().catch(() => {}) // the late registration is undone at once; its error was already reported
      return late
    }
    const effect: Effect = { label, children, dispose: toDisposer(() => {}) }
    effect.dispose = toDisposer(async () => {
      this.#effects.delete(effect)
      await cleanup()
    })
    this.#effects.add(effect)
    return effect.dispose
  }

  async dispose(what: string): Promise<void> {
    this.#closed = true
    const effects = [...this.#effects]
    this.#effects.clear()
    await disposeAll(
      effects.map((e) => e.dispose),
      what,
    )
  }

  tree(): EffectNode[] {
    return [...this.#effects].map((e) =>
      e.children ? { label: e.label, children: e.children() } : { label: e.label },
    )
  }
}
