/**
 * @module skills/holds
 * Holds on skills, by name: while any hold on a name stands, the skill of that name is out of use
 * (the capabilities plugin holds a withdrawn skill). Holds are counted, not flags: a caller that
 * reloads takes its new hold before it releases the old one, and the skill must stay out between.
 */

interface Hold {
  why: string
}

export class SkillHolds {
  /** name → the holds that stand on it, oldest first (a name is here only while one stands) */
  readonly #byName = new Map<string, Set<Hold>>()

  /**
   * Adds a hold on `name`. `flipped(true)` when it is the first, and the returned release (which
   * does its work once) calls `flipped(false)` when it was the last.
   */
  add(name: string, why: string, flipped: (held: boolean) => void): () => void {
    const hold: Hold = { why }
    const holds = this.#byName.get(name) ?? new Set<Hold>()
    this.#byName.set(name, holds.add(hold))
    if (holds.size === 1) flipped(true)
    let released = false
    return () => {
      if (released) return
      released = true
      holds.delete(hold)
      if (holds.size) return
      this.#byName.delete(name)
      flipped(false)
    }
  }

  isHeld(name: string): boolean {
    return this.#byName.has(name)
  }

  /** the reasons of the holds on `name`, oldest first (none: it is not held) */
  reasons(name: string): string[] {
    return [...(this.#byName.get(name) ?? [])].map((h) => h.why)
  }
}
