/**
 * @module kernel/gates
 * What a reload asks before it applies: gates that plugins feed (an agent loop's turns in flight,
 * which changes would alter the model's cached prompt). The kernel knows no agent loop: it only
 * adds up what the gates say. See Context.reloadGate.
 */
import type { YokeError } from '../errors.ts'

/** One instance a reload would change, as its plan says before anything is applied. */
export interface PlannedChange {
  instance: string
  change: 'added' | 'removed' | 'restarted'
  /** the plugin of the version that would run (the running one, for a removal) */
  plugin: string
  /** the services that plugin, and the plugins it composes by name, inject */
  inject: readonly string[]
  /** the tools it and its children have registered now (none for an addition) */
  tools: readonly string[]
}

/** A change that would alter what the model's prompt cache holds, and why. */
export interface CacheImpact {
  instance: string
  change: PlannedChange['change']
  why: string
}

/** The options a reload takes (ReloadOptions of the composition); a gate may give defaults. */
export interface ReloadDefaults {
  holdOnCacheImpact?: boolean
  refuseIfBusy?: boolean
}

export interface ReloadGate {
  /** who answers (a plugin instance), in what the reload says */
  readonly name: string
  /** what a reload would disturb now (a turn in flight), one line each; empty when idle */
  busy(): string[]
  /** the error that refuses a `refuseIfBusy` reload while `busy` is in flight (its own code) */
  refusal(busy: string[]): YokeError
  /** resolves when nothing is in flight */
  idle(): Promise<void>
  /** of the planned changes, those that would alter the model's cached prompt */
  impact(changes: readonly PlannedChange[]): CacheImpact[]
  /** the options of a reload that names none (the config's default) */
  defaults?(): ReloadDefaults
}

export class ReloadGates {
  readonly #gates = new Set<ReloadGate>()

  add(gate: ReloadGate): () => void {
    this.#gates.add(gate)
    return () => void this.#gates.delete(gate)
  }

  busy(): string[] {
    return [...this.#gates].flatMap((g) => g.busy())
  }

  /** the first busy gate's refusal */
  refusal(): YokeError | undefined {
    for (const gate of this.#gates) {
      const busy = gate.busy()
      if (busy.length) return gate.refusal(busy)
    }
    return undefined
  }

  /** resolves once every gate is idle at the same moment */
  async idle(): Promise<void> {
    while (this.busy().length) await Promise.all([...this.#gates].map((g) => g.idle()))
  }

  impact(changes: readonly PlannedChange[]): CacheImpact[] {
    return changes.length ? [...this.#gates].flatMap((g) => g.impact(changes)) : []
  }

  defaults(): ReloadDefaults {
    return Object.assign({}, ...[...this.#gates].map((g) => g.defaults?.() ?? {}))
  }
}
