/**
 * The holds on one server, reference-counted: it stays held while any stands (a holder that
 * reloads takes its new hold before it lets go of the old, and the server must not come up in
 * between). Each release is idempotent.
 */
import { toDisposer, type Disposer } from 'yoke'

export class Holds {
  readonly #standing = new Set<{ why: string }>()

  /** `changed` hears the whys after every take and release (none: the last was released) */
  constructor(private readonly changed: (whys: string[]) => void) {}

  get whys(): string[] {
    return [...this.#standing].map((hold) => hold.why)
  }

  take(why: string): Disposer {
    const hold = { why }
    this.#standing.add(hold)
    this.changed(this.whys)
    return toDisposer(() => {
      if (this.#standing.delete(hold)) this.changed(this.whys)
    })
  }
}
