/**
 * @module config/reconcile
 * Moves the running instances to a new resolved config, per instance key:
 *   added → spawn; removed or disabled → dispose; changed (use, config, enabled, module code)
 *   → dispose the old, spawn the new, and if the new one fails, restore the old;
 *   unchanged → untouched (same fiber, same connections).
 * A config with errors changes nothing; a module that fails to import keeps its old version.
 */
import { YokeError } from '../errors.ts'
import type { Fiber } from '../kernel/fiber.ts'
import type { Kernel } from '../kernel/kernel.ts'
import type { InstanceSpec, ResolvedConfig } from './resolve.ts'

export interface Running {
  spec: InstanceSpec
  fiber?: Fiber
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

/** How long a reload waits for applies to finish before reporting (slow plugins keep loading). */
const SETTLE_MS = 30_000

export class Reconciler {
  readonly running = new Map<string, Running>()

  constructor(private readonly kernel: Kernel) {}

  async apply(next: ResolvedConfig): Promise<ReloadReport> {
    const started = performance.now()
    const report: ReloadReport = { ok: !next.errors.length, added: [], removed: [], restarted: [], unchanged: [], failed: [], errors: next.errors, durationMs: 0 }
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
        await this.kernel.remove(old.fiber)
        report.removed.push(key)
      }
      if (spec) this.running.set(key, { spec })
      else this.running.delete(key)
    }
    for (const spec of next.instances) {
      if (!spec.enabled) {
        this.running.set(spec.key, { spec })
        continue
      }
      const old = this.running.get(spec.key)
      if (spec.error) {
        // broken code: a running old version stays; otherwise the instance shows as failed
        report.failed.push({ instance: spec.key, error: spec.error })
        if (!old?.fiber) this.running.set(spec.key, { spec })
        continue
      }
      if (old?.fiber && signature(old.spec) === signature(spec)) {
        old.spec = spec // same code and config; positions may have moved
        report.unchanged.push(spec.key)
        continue
      }
      const oldWorked = old?.fiber && old.fiber.state !== 'failed'
      if (old?.fiber) await this.kernel.remove(old.fiber)
      const fiber = await this.#start(spec)
      if (fiber.state === 'failed' && oldWorked) {
        await this.kernel.remove(fiber)
        const restored = await this.#start(old!.spec)
        this.running.set(spec.key, { spec: old!.spec, fiber: restored })
        const error = new YokeError('RELOAD_ROLLED_BACK', { instance: spec.key, reason: fiber.error?.message }, { ...spec.site, cause: fiber.error })
        report.failed.push({ instance: spec.key, error })
        continue
      }
      this.running.set(spec.key, { spec, fiber })
      ;(old?.fiber ? report.restarted : report.added).push(spec.key)
      if (fiber.state === 'failed') report.failed.push({ instance: spec.key, error: fiber.error! })
    }
  }

  async #start(spec: InstanceSpec): Promise<Fiber> {
    const fiber = this.kernel.spawn(spec.module!.plugin, spec.config, { key: spec.key, site: spec.site })
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.kernel.settled(), new Promise((r) => (timer = setTimeout(r, SETTLE_MS)))])
    clearTimeout(timer)
    return fiber
  }

  /** Disposes every running instance, last first. */
  async dispose(): Promise<void> {
    this.running.clear()
    await this.kernel.dispose()
  }
}

/** What makes an instance "changed": its module's code and file, and its config as written. */
function signature(spec: InstanceSpec): string {
  return `${spec.module?.file}\0${spec.module?.version}\0${stableJson(spec.raw)}`
}

function stableJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))) : v,
  )
}
