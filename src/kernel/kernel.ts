/**
 * @module kernel/kernel
 * The kernel: a set of fibers, the services they provide, and one rule that keeps them consistent.
 * After any change, every idle fiber is compared with the services it injects: a pending fiber
 * whose services all exist is loaded; an active fiber whose service went away or was replaced is
 * unloaded (and loaded again if a replacement exists). Transitions run concurrently per fiber.
 */
import { SyncHook } from 'tapable'
import type { ErrorSite } from '../errors.ts'
import { disposeAll } from './disposer.ts'
import { Fiber } from './fiber.ts'
import { defineHooks, hookName, tapsOf, type AnyHook } from './hooks.ts'
import type { LogLevel } from './context.ts'
import type { Plugin } from './plugin.ts'
import { ServiceRegistry } from './services.ts'

export interface LogRecord {
  level: LogLevel
  message: string
  fiber?: Fiber
  error?: unknown
}

export interface SpawnOptions {
  key: string
  parent?: Fiber
  site?: ErrorSite
}

export class Kernel {
  readonly hooks = defineHooks('kernel', {
    /** a fiber changed state */
    state: new SyncHook<[Fiber]>(['fiber']),
    /** a log record from the kernel or a plugin */
    log: new SyncHook<[LogRecord]>(['record']),
  })
  readonly services = new ServiceRegistry(() => this.schedule())
  readonly #fibers = new Set<Fiber>()
  readonly #counts = new Map<string, number>()
  /** hooks that plugins tapped through ctx.tap, with how many such taps they hold */
  readonly #hooks = new Map<AnyHook, number>()
  #scheduled = false

  /** Every fiber that is not disposed yet, in creation order. */
  get fibers(): Fiber[] {
    return [...this.#fibers]
  }

  /** Creates a fiber; it loads as soon as the services it injects exist. */
  spawn(plugin: Plugin, config: unknown, options: SpawnOptions): Fiber {
    const fiber = new Fiber(this, options.key, plugin, config, options.site, options.parent)
    this.#fibers.add(fiber)
    this.schedule()
    return fiber
  }

  /** Disposes a fiber for good (its children go with its effects). */
  async remove(fiber: Fiber): Promise<void> {
    try {
      await fiber.unload('disposed')
    } finally {
      this.#fibers.delete(fiber)
    }
  }

  /** The provision ids of `fiber`'s injected services, or undefined while one is missing. */
  epochOf(fiber: Fiber): string | undefined {
    const ids: number[] = []
    for (const name of fiber.plugin.inject) {
      const provision = this.services.get(name)
      if (!provision || provision.owner === fiber) return undefined
      ids.push(provision.id)
    }
    return ids.join(',')
  }

  schedule(): void {
    if (this.#scheduled) return
    this.#scheduled = true
    queueMicrotask(() => {
      this.#scheduled = false
      this.#refresh()
    })
  }

  #refresh() {
    for (const fiber of this.#fibers) {
      if (fiber.busy || fiber.state === 'disposed' || fiber.state === 'loading') continue
      const epoch = this.epochOf(fiber)
      if (fiber.state === 'active' && epoch !== fiber.epoch) void fiber.unload('pending')
      else if (fiber.state === 'pending' && epoch !== undefined) void fiber.load(epoch)
      // a failed fiber gets another chance when a service it injects is replaced
      else if (fiber.state === 'failed' && epoch !== undefined && epoch !== fiber.epoch) void fiber.load(epoch)
    }
  }

  /** Unloads the active fibers that use a service of `provider`, before the provider unwinds. */
  async releaseDependents(provider: Fiber): Promise<void> {
    const names = new Set(this.services.list().filter((p) => p.owner === provider).map((p) => p.name))
    if (!names.size) return
    const dependents = this.fibers.filter((f) => f !== provider && (f.state === 'active' || f.state === 'loading') && f.plugin.inject.some((n) => names.has(n)))
    await Promise.all(dependents.map((f) => f.unload('pending')))
  }

  /** Resolves once no fiber is loading or unloading and nothing is scheduled. */
  async settled(): Promise<void> {
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve))
      const busy = this.fibers.filter((f) => f.busy)
      if (!busy.length && !this.#scheduled) return
      await Promise.all(busy.map((f) => f.settled()))
    }
  }

  onState(fiber: Fiber): void {
    this.hooks.state.call(fiber)
    this.schedule()
  }

  log(record: LogRecord): void {
    this.hooks.log.call(record)
  }

  /** Counts live resources by kind (taps, watchers, timers) so leaks show in inspect and tests. */
  count(kind: string, delta: number): void {
    this.#counts.set(kind, (this.#counts.get(kind) ?? 0) + delta)
  }

  resources(): Record<string, number> {
    return Object.fromEntries(this.#counts)
  }

  trackHook(hook: AnyHook, delta: number): void {
    const n = (this.#hooks.get(hook) ?? 0) + delta
    if (n > 0) this.#hooks.set(hook, n)
    else this.#hooks.delete(hook)
  }

  /** The kernel's own hooks and every hook plugins tapped, with their taps in call order. */
  hooksInUse(): Array<{ hook: string; taps: string[] }> {
    const hooks = new Set<AnyHook>([...Object.values(this.hooks), ...this.#hooks.keys()])
    return [...hooks].map((h) => ({ hook: hookName(h), taps: tapsOf(h) }))
  }

  /** Disposes every top-level fiber, last first. */
  async dispose(): Promise<void> {
    const roots = this.fibers.filter((f) => !f.parent)
    await disposeAll(
      roots.map((f) => () => this.remove(f)),
      'the kernel',
    )
  }
}
