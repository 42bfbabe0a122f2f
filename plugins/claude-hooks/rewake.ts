/**
 * @module claude-hooks/rewake
 * `asyncRewake` handlers: they run in the background, and an exit 2 wakes the run they belong
 * to with their stderr (after `rewakeMessage`). yoke delivers it at the run's stop, which sends the
 * model on with it; the stop waits for a tool event's asyncRewake handlers still running (each
 * bounded by its timeout), so a review started by a call is not lost when the model stops.
 */
import { cap } from './handlers.ts'
import type { FiredEvent, HookEntry } from './format.ts'
import type { Reply } from './handlers.ts'

export class Rewakes {
  /** texts that woke each run, for its stop */
  readonly #texts = new Map<string, string[]>()
  /** each run's asyncRewake handlers still running (a tool event's) */
  readonly #running = new Map<string, Set<Promise<void>>>()

  constructor(
    /** whether the run is still going (a late wake is only logged) */
    private readonly live: (runId: string) => boolean,
    private readonly warn: (message: string) => void,
  ) {}

  /** A background handler of `event` for the run `runId` started; `running` is its reply. */
  started(event: FiredEvent, runId: string, running: Promise<{ entry: HookEntry; reply: Reply }>) {
    const done = running.then(({ entry, reply }) => this.#woke(runId, entry, reply))
    // a Stop hook's own rewake is not waited for: the stop it would hold is the one running it
    if (event === 'Stop' || event === 'SubagentStop') return
    const set = this.#running.get(runId) ?? new Set()
    this.#running.set(runId, set.add(done))
    void done.finally(() => {
      set.delete(done)
      if (!set.size) this.#running.delete(runId)
    })
  }

  /** Waits for the run's asyncRewake handlers that still run. */
  async settle(runId: string): Promise<void> {
    const pending = this.#running.get(runId)
    if (pending) await Promise.all([...pending])
  }

  /** The texts that woke the run (taken). */
  take(runId: string): string[] {
    const texts = this.#texts.get(runId) ?? []
    this.#texts.delete(runId)
    return texts
  }

  #woke(runId: string, entry: HookEntry, reply: Reply): void {
    const { handler } = entry
    if (handler.type !== 'command' || !handler.asyncRewake || reply.kind !== 'block') return
    if (!this.live(runId)) {
      this.warn(`hook ${entry.label} woke run ${runId}, which has ended: ${reply.reason}`)
      return
    }
    const lead = typeof handler.rewakeMessage === 'string' ? `${handler.rewakeMessage}\n\n` : ''
    this.#texts.set(runId, [...(this.#texts.get(runId) ?? []), cap(`${lead}${reply.reason}`)])
  }
}
