/**
 * @module config/reconcile
 * Moves the running instances to a new resolved config, per instance key:
 *   added → spawn; removed or disabled → dispose; changed (use, config, enabled, module code)
 *   → make before break: the new version starts beside the old one and takes over its names
 *   (tools, services, controls) the moment it registers them, then the old one is disposed, so no
 *   call finds a tool missing that exists before and after; if the new one cannot start beside the
 *   old (an exclusive resource such as a port), it is tried once more after the old one is gone,
 *   and if it fails, the old one is restored;
 *   unchanged → untouched (same fiber, same connections).
 * A config with errors changes nothing; a module that fails to import keeps its old version.
 * Instances start concurrently, and a reload waits only for the instances it touched (and those
 * that depend on them), each for at most settleMs: a hung apply is reported, not waited for.
 */
import { YokeError } from '../errors.ts'
import type { Fiber } from '../kernel/fiber.ts'
import type { Kernel } from '../kernel/kernel.ts'
import type { InstanceSpec, ResolvedConfig } from './resolve.ts'

export interface Running {
  spec: InstanceSpec
  fiber?: Fiber
  /** the signature of a newer spec that failed to start; not retried until it changes */
  rejected?: string
}

export interface ReloadReport {
  /** false when the candidate config had errors and nothing was changed */
  ok: boolean
  added: string[]
  removed: string[]
  restarted: string[]
  unchanged: string[]
  failed: Array<{ instance: string; error: YokeError }>
  errors: YokeError[]
  durationMs: number
}

type Outcome = 'added' | 'restarted' | 'unchanged'
type Planned = 'added' | 'restarted' | 'removed'

export class Reconciler {
  readonly running = new Map<string, Running>()

  /**
   * @param settleMs how long an instance's apply may take: past it, the instance fails (PLUGIN_TIMEOUT)
   * @param removeMs how long it waits for an instance's disposers before going on without it
   */
  constructor(
    private readonly kernel: Kernel,
    private readonly settleMs = 30_000,
    private readonly removeMs = 10_000,
  ) {}

  async apply(next: ResolvedConfig): Promise<ReloadReport> {
    const started = performance.now()
    const report: ReloadReport = {
      ok: !next.errors.length,
      added: [],
      removed: [],
      restarted: [],
      unchanged: [],
      failed: [],
      errors: next.errors,
      durationMs: 0,
    }
    if (report.ok) await this.#apply(next, report)
    report.durationMs = Math.round(performance.now() - started)
    return report
  }

  async #apply(next: ResolvedConfig, report: ReloadReport) {
    const wanted = new Map(next.instances.map((s) => [s.key, s]))
    for (const [key, old] of [...this.running].reverse()) {
      const spec = wanted.get(key)
      if (spec?.enabled) continue
      if (old.fiber) {
        await this.kernel.removeWithin(old.fiber, this.removeMs)
        report.removed.push(key)
      }
      this.kernel.forget(key) // what ctx.keep held for it: it left the config (a restart keeps it)
      if (spec) this.running.set(key, { spec })
      else this.running.delete(key)
    }
    const outcomes = await Promise.all(next.instances.map((spec) => this.#reconcile(spec, report)))
    next.instances.forEach((spec, i) => {
      const outcome = outcomes[i]
      if (outcome) report[outcome].push(spec.key)
    })
    // the started instances were waited for; now wait for those that depend on them
    const started = next.instances
      .filter((_, i) => outcomes[i] === 'added' || outcomes[i] === 'restarted')
      .map((s) => this.running.get(s.key)?.fiber)
    const dependents = new Set<Fiber>()
    const visit = (f: Fiber) =>
      this.kernel
        .dependentsOf(f)
        .forEach((d) => !dependents.has(d) && (dependents.add(d), visit(d)))
    for (const fiber of started) if (fiber) visit(fiber)
    await Promise.all([...dependents].map((f) => this.kernel.whenSettled(f, this.settleMs)))
  }

  /**
   * What `apply(next)` would change, computed as it decides (nothing is touched): the running
   * instances it would dispose, and the specs it would start or restart (a broken module, a
   * rejected or unchanged version are neither).
   */
  plan(next: ResolvedConfig): Array<{ key: string; change: Planned; spec: InstanceSpec }> {
    const wanted = new Map(next.instances.map((s) => [s.key, s]))
    const removed = [...this.running]
      .filter(([key, old]) => old.fiber && !wanted.get(key)?.enabled)
      .map(([key, old]) => ({ key, change: 'removed' as const, spec: old.spec }))
    const started = next.instances.flatMap((spec) => {
      const old = this.running.get(spec.key)
      if (!spec.enabled || spec.error) return []
      const sig = signature(spec)
      if (old?.fiber && (signature(old.spec) === sig || old.rejected === sig)) return []
      return [
        { key: spec.key, change: old?.fiber ? ('restarted' as const) : ('added' as const), spec },
      ]
    })
    return [...removed, ...started]
  }

  async #reconcile(spec: InstanceSpec, report: ReloadReport): Promise<Outcome | undefined> {
    if (!spec.enabled) {
      this.running.set(spec.key, { spec })
      return undefined
    }
    const old = this.running.get(spec.key)
    if (spec.error) {
      // broken code: a running old version stays; otherwise the instance shows as failed
      report.failed.push({ instance: spec.key, error: spec.error })
      if (!old?.fiber) this.running.set(spec.key, { spec })
      return undefined
    }
    const sig = signature(spec)
    if (old?.fiber && (signature(old.spec) === sig || old.rejected === sig)) {
      if (!old.rejected) old.spec = spec // same code and config; positions may have moved
      return 'unchanged'
    }
    const oldWorked = old?.fiber && old.fiber.state !== 'failed'
    if (old?.fiber && oldWorked && !spec.module!.plugin.exclusive) {
      // make before break: the old version serves until the new one has taken its names over
      const fiber = await this.#start(spec)
      if (fiber.state === 'failed') {
        await this.kernel.removeWithin(fiber, this.removeMs)
        this.running.set(spec.key, { ...old, rejected: sig })
        report.failed.push({ instance: spec.key, error: rolledBack(spec, fiber) })
        return undefined
      }
      await this.kernel.removeWithin(old.fiber, this.removeMs)
      this.running.set(spec.key, { spec, fiber })
      return 'restarted'
    }
    // break before make: no old version, a failed one, or a plugin whose instances hold something
    // only one can hold at a time (a port)
    if (old?.fiber) await this.kernel.removeWithin(old.fiber, this.removeMs)
    const fiber = await this.#start(spec)
    if (fiber.state === 'failed' && oldWorked) {
      await this.kernel.removeWithin(fiber, this.removeMs)
      const restored = await this.#start(old!.spec)
      this.running.set(spec.key, { spec: old!.spec, fiber: restored, rejected: sig })
      report.failed.push({ instance: spec.key, error: rolledBack(spec, fiber) })
      return undefined
    }
    this.running.set(spec.key, { spec, fiber })
    if (fiber.state === 'failed') report.failed.push({ instance: spec.key, error: fiber.error! })
    return old?.fiber ? 'restarted' : 'added'
  }

  async #start(spec: InstanceSpec): Promise<Fiber> {
    const fiber = this.kernel.spawn(spec.module!.plugin, spec.config, {
      key: spec.key,
      site: spec.site,
    })
    await this.kernel.whenSettled(fiber, this.settleMs)
    if (fiber.state === 'loading')
      await fiber.fail(
        new YokeError(
          'PLUGIN_TIMEOUT',
          { what: `the apply of ${fiber.label}`, ms: this.settleMs },
          { ...spec.site, instance: spec.key, plugin: fiber.plugin.name },
        ),
      )
    return fiber
  }

  /** Disposes every running instance, last first. */
  async dispose(): Promise<void> {
    this.running.clear()
    await this.kernel.dispose(this.removeMs)
  }
}

function rolledBack(spec: InstanceSpec, failed: Fiber): YokeError {
  return new YokeError(
    'RELOAD_ROLLED_BACK',
    { instance: spec.key, reason: failed.error?.message },
    { ...spec.site, cause: failed.error },
  )
}

/** What makes an instance "changed": its module's code and file, and its config as written. */
function signature(spec: InstanceSpec): string {
  return `${spec.module?.file}\0${spec.module?.version}\0${stableJson(spec.raw)}`
}

function stableJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  )
}
