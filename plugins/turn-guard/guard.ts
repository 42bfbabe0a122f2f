/**
 * The reload gate of an agent loop's turns. A run is in flight from its start (runStart, or its
 * first model request when it has none: a fork) to its end (runEnd; with a loop that has no
 * runEnd, each turn's end). A reload asks it what is busy, waits for it to be idle, and which of
 * its planned changes would alter the model's cached prompt:
 *   - an instance going or restarting that has tools now (the tools offered change);
 *   - one that uses a cache service other than the runtime (the prompt's sections, the skills
 *     catalog: `cacheServices`), whatever it does with it;
 *   - one coming that uses the runtime (it may register tools; what it will register is not
 *     known before it runs, so it counts).
 */
import { YokeError, type Context } from 'yoke'
import type { TurnGuardStatus } from './api.ts'
import type { TurnGuardConfig } from './config.ts'

type Gate = Parameters<Context['reloadGate']>[0]
type PlannedChange = Parameters<Gate['impact']>[0][number]
type CacheImpact = ReturnType<Gate['impact']>[number]

/** What outlives a version of the instance (ctx.keep): a run begun under the old one still counts. */
export interface TurnState {
  /** runId → what the run is, in what a reload says */
  runs: Map<string, string>
  /** the reload held until the runs end, as its event said */
  held?: TurnGuardStatus['held']
}

export class TurnGuard implements Gate {
  #waiters: Array<() => void> = []
  readonly runs: Map<string, string>

  constructor(
    readonly name: string,
    private readonly cfg: TurnGuardConfig,
    private readonly state: TurnState,
  ) {
    this.runs = state.runs
  }

  begin(runId: string, what: string): void {
    if (!this.runs.has(runId)) this.runs.set(runId, what)
  }

  end(runId: string): void {
    if (this.runs.delete(runId) && !this.runs.size) this.#wake()
  }

  /** Going away: no reload waits on this version (the next one, if any, answers from the same runs). */
  close(): void {
    this.#wake()
  }

  busy(): string[] {
    return [...this.runs.values()]
  }

  refusal(busy: string[]): YokeError {
    return new YokeError('RELOAD_BUSY', { what: busy.join(', ') })
  }

  idle(): Promise<void> {
    return this.runs.size
      ? new Promise((resolve) => this.#waiters.push(resolve))
      : Promise.resolve()
  }

  impact(changes: readonly PlannedChange[]): CacheImpact[] {
    return changes.flatMap((c) => {
      const why = this.#why(c)
      return why ? [{ instance: c.instance, change: c.change, why }] : []
    })
  }

  defaults() {
    return { holdOnCacheImpact: this.cfg.holdOnCacheImpact, refuseIfBusy: this.cfg.refuseIfBusy }
  }

  /** A reload's event: a held one is remembered (for doctor) until one applies. */
  noticed(event: { ok: boolean; held?: boolean; cacheImpact?: CacheImpact[] }): void {
    const { state } = this
    if (event.held) state.held ??= { since: new Date().toISOString(), cacheImpact: [] }
    if (event.held) state.held!.cacheImpact = event.cacheImpact ?? []
    else if (event.ok) state.held = undefined
  }

  status(): TurnGuardStatus {
    return { inFlight: this.busy(), ...(this.state.held && { held: this.state.held }) }
  }

  #wake() {
    const waiters = this.#waiters
    this.#waiters = []
    for (const wake of waiters) wake()
  }

  #why(c: PlannedChange): string | undefined {
    const verb = c.change === 'removed' ? 'go' : 'change'
    if (c.tools.length)
      return `its tools would ${verb} (${c.tools.slice(0, 3).join(', ')}${c.tools.length > 3 ? ', …' : ''})`
    const used = c.inject.filter((s) => s !== 'runtime' && this.cfg.cacheServices.includes(s))
    if (used.length) return `it uses the ${used.join(' and ')} service${used.length > 1 ? 's' : ''}`
    if (
      c.change === 'added' &&
      c.inject.includes('runtime') &&
      this.cfg.cacheServices.includes('runtime')
    )
      return 'it may register tools'
    return undefined
  }
}
