/**
 * @module kernel/kernel
 * The kernel: a set of fibers, the services they provide, and one rule that keeps them consistent.
 * After a change, each affected idle fiber is compared with the services it injects: a pending
 * fiber whose services all exist is loaded; an active fiber whose service went away or was replaced
 * is unloaded (and loaded again if a replacement exists). Transitions run concurrently per fiber;
 * only fibers touched by a change are looked at, so a change costs its dependents, not the world.
 */
import { SyncHook } from 'tapable'
import { messageOf, YokeError } from '../errors.ts'
import { faultError } from './faults.ts'
import { disposeAll, settledWithin } from './disposer.ts'
import { Fiber } from './fiber.ts'
import { defineHooks, hookName, notify, tapsOf, type AnyHook } from './hooks.ts'
import { ServiceRegistry } from './services.ts'
import { ReloadGates } from './gates.ts'
import type {
  ControlHandler,
  FiberHost,
  FiberInfo,
  LogRecord,
  Plugin,
  Provision,
  ReloadNotice,
  RunMode,
  SpawnOptions,
} from './types.ts'

export type { LogRecord, RunMode, SpawnOptions } from './types.ts'

/** names `yoke dev` answers itself on its control socket */
const RESERVED_CONTROLS = new Set([
  'inspect',
  'reload',
  'ping',
  'doctor',
  'tools-list',
  'tools-call',
])

export interface KernelOptions {
  /** how the composition runs (default `serve`): see RunMode */
  runMode?: RunMode
  /** the CLI command that composes it (`dev`, …): see Context.command */
  command?: string
  /** where a plugin's relative paths (ctx.watch) start: the project's directory (default: cwd) */
  baseDir?: () => string
  /** the built-in plugins `ctx.plugin('<name>')` composes (those some plugin declares in `uses`) */
  pluginNamed?: (name: string) => Plugin | undefined
}

export class Kernel implements FiberHost {
  readonly hooks = defineHooks('kernel', {
    /** a fiber changed state */
    state: new SyncHook<[FiberInfo]>(['fiber']),
    /** a log record from the kernel or a plugin */
    log: new SyncHook<[LogRecord]>(['record']),
    reload: new SyncHook<[ReloadNotice]>(['event']),
  })
  /** what a reload asks before it applies (Context.reloadGate) */
  readonly gates = new ReloadGates()
  readonly services = new ServiceRegistry((name) => this.schedule(...this.#dependents(name)))
  readonly runMode: RunMode
  readonly command: string | undefined
  readonly baseDir: () => string
  readonly #fibers = new Set<Fiber>()
  /** control name → its handlers, newest first */
  readonly #controls = new Map<string, Array<{ handler: ControlHandler; owner: FiberInfo }>>()
  /** service name → the fibers that inject it */
  readonly #injectors = new Map<string, Set<Fiber>>()
  readonly #dirty = new Set<FiberInfo>()
  readonly #counts = new Map<string, number>()
  /** hooks that plugins tapped through ctx.tap, with how many such taps they hold */
  readonly #hooks = new Map<AnyHook, number>()
  /** `key\0plugin` → what ctx.keep handed out, by name: outlives the versions of one instance */
  readonly #kept = new Map<string, Map<string, unknown>>()
  #scheduled = false

  constructor(private readonly options: KernelOptions = {}) {
    this.runMode = options.runMode ?? 'serve'
    this.command = options.command
    this.baseDir = options.baseDir ?? (() => process.cwd())
  }

  /** Every fiber that is not disposed yet, in creation order. */
  get fibers(): Fiber[] {
    return [...this.#fibers]
  }

  /** Creates a fiber; it loads as soon as the services it injects exist. */
  spawn(plugin: Plugin, config: unknown, options: SpawnOptions): Fiber {
    const fiber = new Fiber(this, options.key, plugin, config, options.site, options.parent)
    this.#fibers.add(fiber)
    for (const name of plugin.inject)
      this.#injectors.set(name, (this.#injectors.get(name) ?? new Set()).add(fiber))
    this.schedule(fiber)
    return fiber
  }

  /** Disposes a fiber for good (its children go with its effects). */
  async remove(info: FiberInfo): Promise<void> {
    const fiber = this.#own(info)
    if (!fiber) return
    try {
      await fiber.unload('disposed')
    } finally {
      this.#fibers.delete(fiber)
      for (const name of fiber.plugin.inject) this.#injectors.get(name)?.delete(fiber)
    }
  }

  /** The Fiber behind `info` when it is one of this kernel's. */
  #own(info: FiberInfo): Fiber | undefined {
    return info instanceof Fiber && this.#fibers.has(info) ? info : undefined
  }

  provide(name: string, value: unknown, owner: FiberInfo): () => void {
    return this.services.provide(name, value, owner)
  }

  service(name: string): Provision | undefined {
    return this.services.get(name)
  }

  /**
   * Adds a control handler (see Context.control). As with services, the new version of a reloaded
   * instance (same key) may answer beside the old one and takes over; another owner is
   * CONTROL_CONFLICT.
   */
  control(name: string, handler: ControlHandler, owner: FiberInfo): () => void {
    if (RESERVED_CONTROLS.has(name))
      throw new YokeError('CONTROL_CONFLICT', { name, owner: 'yoke dev itself' })
    const stack = this.#controls.get(name) ?? []
    const other = stack.find((c) => c.owner === owner || c.owner.key !== owner.key)
    if (other) throw new YokeError('CONTROL_CONFLICT', { name, owner: other.owner.label })
    const entry = { handler, owner }
    this.#controls.set(name, [entry, ...stack])
    return () => {
      const rest = (this.#controls.get(name) ?? []).filter((c) => c !== entry)
      if (rest.length) this.#controls.set(name, rest)
      else this.#controls.delete(name)
    }
  }

  keep(owner: FiberInfo, name: string, init: () => unknown): unknown {
    const id = `${owner.key}\0${owner.plugin.name}`
    const kept = this.#kept.get(id) ?? new Map<string, unknown>()
    this.#kept.set(id, kept)
    if (!kept.has(name)) kept.set(name, init())
    return kept.get(name)
  }

  /**
   * Drops what ctx.keep handed to the instance `key` and its children: the composition calls it
   * when the instance leaves the config (a reload that restarts it keeps the state).
   */
  forget(key: string): void {
    for (const id of this.#kept.keys())
      if (id.startsWith(`${key}\0`) || id.startsWith(`${key}/`)) this.#kept.delete(id)
  }

  pluginNamed(name: string): Plugin | undefined {
    return this.options.pluginNamed?.(name)
  }

  /** The control names active instances answer, sorted. */
  controls(): string[] {
    return [...this.#controls]
      .filter(([, stack]) => stack.some((c) => c.owner.state === 'active'))
      .map(([name]) => name)
      .sort()
  }

  /**
   * Runs the control handler `name`, bounded by `timeoutMs` (PLUGIN_TIMEOUT past it);
   * CONTROL_UNKNOWN when no active instance answers it.
   */
  async ask(
    name: string,
    request: Record<string, unknown> = {},
    timeoutMs = 30_000,
  ): Promise<unknown> {
    const entry = this.#controls.get(name)?.find((c) => c.owner.state === 'active')
    if (!entry) {
      throw new YokeError('CONTROL_UNKNOWN', { name, known: this.controls().join(', ') || 'none' })
    }
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      const what = `the control "${name}" of ${entry.owner.label}`
      timer = setTimeout(
        () => reject(new YokeError('PLUGIN_TIMEOUT', { what, ms: timeoutMs })),
        timeoutMs,
      )
    })
    const answer = Promise.resolve()
      .then(() => entry.handler(request))
      .catch((err) => {
        if (err instanceof YokeError) throw err
        throw new YokeError(
          'CONTROL_FAILED',
          { name, owner: entry.owner.label, reason: messageOf(err) },
          { instance: entry.owner.key, plugin: entry.owner.plugin.name, cause: err },
        )
      })
    return Promise.race([answer, late]).finally(() => clearTimeout(timer))
  }

  #dependents(name: string): Iterable<Fiber> {
    return this.#injectors.get(name) ?? []
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

  /** Marks fibers for another look (after this microtask). */
  schedule(...fibers: FiberInfo[]): void {
    for (const fiber of fibers) this.#dirty.add(fiber)
    if (this.#scheduled) return
    this.#scheduled = true
    queueMicrotask(() => {
      this.#scheduled = false
      try {
        this.#refresh()
      } catch (err) {
        // a kernel bug must not take the process down with it: report it and keep running
        this.log({
          level: 'error',
          message: `refresh failed: ${messageOf(err)}`,
          error: err,
        })
      }
    })
  }

  #refresh() {
    const dirty = [...this.#dirty]
    this.#dirty.clear()
    for (const info of dirty) {
      const fiber = this.#own(info)
      if (!fiber || fiber.busy || fiber.state === 'disposed' || fiber.state === 'loading') continue
      const epoch = this.epochOf(fiber)
      const report = (err: unknown) =>
        this.log({
          level: 'error',
          fiber,
          message: `transition failed: ${messageOf(err)}`,
          error: err,
        })
      if (fiber.state === 'active' && epoch !== fiber.epoch) fiber.unload('pending').catch(report)
      else if (
        fiber.state === 'pending' &&
        epoch !== undefined &&
        !(fiber.waiting && epoch === fiber.epoch)
      )
        fiber.load(epoch).catch(report)
      // a failed fiber gets another chance when a service it injects is replaced
      else if (fiber.state === 'failed' && epoch !== undefined && epoch !== fiber.epoch)
        fiber.load(epoch).catch(report)
    }
  }

  /**
   * Unloads the active fibers that use a service of `provider`, before the provider unwinds. Those
   * that already moved to a newer provision (the new version of a reloaded instance) keep running.
   */
  async releaseDependents(provider: FiberInfo): Promise<void> {
    const ids = new Set(this.services.idsOf(provider).map(String))
    const live = this.dependentsOf(provider).filter(
      (f) =>
        (f.state === 'active' || f.state === 'loading') &&
        (f.epoch ?? '').split(',').some((id) => ids.has(id)),
    )
    await Promise.all(live.map((f) => f.unload('pending')))
  }

  /** The fibers that inject a service `provider` provides. */
  dependentsOf(provider: FiberInfo): Fiber[] {
    return [
      ...new Set(this.services.namesOf(provider).flatMap((name) => [...this.#dependents(name)])),
    ].filter((f) => f !== provider)
  }

  /**
   * Resolves when `fiber` has done what it can for now: active, failed, disposed, or pending on a
   * service that is missing; or after `timeoutMs`, whatever its state (a hung apply is reported, not
   * waited for). Other fibers are not waited for.
   */
  async whenSettled(fiber: Fiber, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs
    while (performance.now() < deadline) {
      await new Promise((resolve) => setImmediate(resolve))
      if (fiber.busy) await settledWithin(fiber.settled(), deadline - performance.now())
      else if (!(fiber.state === 'pending' && this.epochOf(fiber) !== undefined && !fiber.waiting))
        return
    }
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

  /** A provision counts only while its owner is active, so a state change concerns its dependents. */
  onState(fiber: Fiber): void {
    notify(this.hooks.state, [fiber], (message, error) =>
      this.log({ level: 'error', fiber, message, error }),
    )
    this.schedule(fiber, ...this.dependentsOf(fiber))
  }

  /** Something `info` started threw after its apply: it is logged and that instance fails alone. */
  fault(info: FiberInfo, err: unknown): void {
    const fiber = this.#own(info)
    const error = faultError(info, err)
    this.log({ level: 'error', fiber: info, message: error.message, error })
    fiber
      ?.fail(error)
      .catch((e) => this.log({ level: 'error', fiber: info, message: messageOf(e) }))
  }

  /** Observers of the log must not break what they observe: a throwing tap goes to stderr. */
  log(record: LogRecord): void {
    notify(this.hooks.log, [record], (message) => process.stderr.write(`yoke: ${message}\n`))
  }

  /** Counts live resources by kind (taps, watchers, timers), and the hooks tapped, so leaks show. */
  count(kind: string, delta: number, hook?: AnyHook): void {
    this.#counts.set(kind, (this.#counts.get(kind) ?? 0) + delta)
    if (!hook) return
    const taps = (this.#hooks.get(hook) ?? 0) + delta
    if (taps > 0) this.#hooks.set(hook, taps)
    else this.#hooks.delete(hook)
  }

  resources(): Record<string, number> {
    return Object.fromEntries(this.#counts)
  }

  /** The kernel's own hooks and every hook plugins tapped, with their taps in call order. */
  hooksInUse(): Array<{ hook: string; taps: string[] }> {
    const hooks = new Set<AnyHook>([...Object.values(this.hooks), ...this.#hooks.keys()])
    return [...hooks].map((h) => ({ hook: hookName(h), taps: tapsOf(h) }))
  }

  /**
   * Disposes every top-level fiber, last first. A fiber whose apply or disposers hang is given
   * `timeoutMs`, then reported and left behind, so shutdown always ends.
   */
  async dispose(timeoutMs = 10_000): Promise<void> {
    this.#kept.clear()
    const roots = this.fibers.filter((f) => !f.parent)
    await disposeAll(
      roots.map((f) => async () => void (await this.removeWithin(f, timeoutMs))),
      'the kernel',
    )
  }

  /** remove(), bounded: resolves false (and warns) when the fiber did not finish in time. */
  async removeWithin(fiber: Fiber, timeoutMs: number): Promise<boolean> {
    const done = await settledWithin(this.remove(fiber), timeoutMs)
    if (!done)
      this.log({
        level: 'warn',
        fiber,
        message: `did not finish disposing within ${timeoutMs} ms; going on without it`,
      })
    return done
  }
}
