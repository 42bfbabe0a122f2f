/**
 * Holds on packages, by package id. A package stays unloaded while any hold on it stands: holds
 * are counted, because a holder that reloads (the capabilities plugin) takes its new hold before
 * it lets go of the old one, and the package must not come up in between.
 */
import { toDisposer, type Disposer } from 'yoke'

export class PackageHolds {
  readonly #byId = new Map<string, Set<{ why: string }>>()

  /** `changed(id, held)` runs after every hold and release; `held` false: the last one went. */
  constructor(private readonly changed: (id: string, held: boolean) => void | Promise<void>) {}

  has(id: string): boolean {
    return this.#byId.has(id)
  }

  /** The reasons of the holds on `id`, oldest first, each once, joined by `; `. */
  why(id: string): string | undefined {
    const records = this.#byId.get(id)
    return records ? [...new Set([...records].map((r) => r.why))].join('; ') : undefined
  }

  /** One more hold on `id`; the disposer (idempotent) releases it. */
  add(id: string, why: string): Disposer {
    const record = { why }
    const records = this.#byId.get(id) ?? new Set()
    records.add(record)
    this.#byId.set(id, records)
    void this.changed(id, true)
    return toDisposer(async () => {
      records.delete(record)
      // a set replaced since (all released, then held again) is not this one's to remove
      if (!records.size && this.#byId.get(id) === records) this.#byId.delete(id)
      await this.changed(id, this.#byId.has(id))
    })
  }
}
