/**
 * @module kernel/fiber
 * A fiber is one running instance of a plugin. States: pending → loading → active, failed,
 * disposed. Each activation gets a fresh EffectScope and AbortSignal; ending the activation
 * disposes the scope, so everything the plugin registered goes with it.
 */
import { asYokeError, YokeError, type ErrorSite } from '../errors.ts'
import { EffectScope, type EffectNode } from './disposer.ts'
import { createContext } from './context.ts'
import { faultContext } from './faults.ts'
import type { FiberHost, FiberInfo, FiberState, Plugin } from './types.ts'

export type { FiberState } from './types.ts'

let nextId = 0
/** One shared abort reason: building a DOMException per disposal costs more than the rest of it */
const ENDED = new DOMException('the plugin instance ended', 'AbortError')

export class Fiber implements FiberInfo {
  readonly id = ++nextId
  state: FiberState = 'pending'
  /** why the fiber failed (state failed) or the last disposal error */
  error?: YokeError
  /** the provision ids of the injected services at the last activation */
  epoch?: string
  #scope?: EffectScope
  #abort?: AbortController
  #transition?: Promise<void>

  constructor(
    readonly host: FiberHost,
    readonly key: string,
    readonly plugin: Plugin,
    readonly config: unknown,
    /** where the instance is declared, for errors */
    readonly site: ErrorSite = {},
    readonly parent?: FiberInfo,
  ) {}

  /** `instance "key" (plugin name)`: how messages name this fiber */
  get label() {
    return `instance "${this.key}" (plugin ${this.plugin.name})`
  }

  /** pending because apply said it must wait (PLUGIN_WAITING), not for a service: it retries when its services change */
  get waiting() {
    return this.error?.code === 'PLUGIN_WAITING'
  }

  get busy() {
    return this.#transition !== undefined
  }

  /** Resolves when the fiber is not in the middle of loading or unloading. */
  async settled(): Promise<void> {
    while (this.#transition) await this.#transition
  }

  effects(): EffectNode[] {
    return this.#scope?.tree() ?? []
  }

  /** Applies the plugin; a throwing apply undoes its own effects and leaves only this fiber failed. */
  load(epoch: string): Promise<void> {
    return this.#run(async () => {
      if (this.state === 'disposed') return
      const scope = new EffectScope((what) => this.#late(what))
      const abort = new AbortController()
      this.#scope = scope
      this.#abort = abort
      this.epoch = epoch
      this.error = undefined
      this.#setState('loading')
      try {
        // apply, and all it starts, runs in a context that names this fiber (kernel/faults)
        const cleanup = await faultContext.run({ fiber: this, host: this.host }, () =>
          this.plugin.apply(createContext(this, this.host, scope, abort.signal), this.config),
        )
        if (typeof cleanup === 'function') scope.add('apply cleanup', cleanup)
        if (this.state !== 'loading') return // disposed while apply ran: unload undoes its effects next
        this.#setState('active')
      } catch (err) {
        // PLUGIN_WAITING: the plugin cannot run yet (a key is not set): pending with the reason, not failed
        this.error =
          err instanceof YokeError && err.code === 'PLUGIN_WAITING'
            ? err
            : asYokeError(
                err,
                'PLUGIN_APPLY_FAILED',
                { instance: this.key, plugin: this.plugin.name },
                this.#errorSite(),
              )
        await this.#close(scope, abort)
        if (this.state === 'loading') this.#setState(this.waiting ? 'pending' : 'failed')
      }
    })
  }

  /**
   * Ends the activation as failed with `error`: something it started threw after apply, or its
   * apply did not finish in time. At once, without waiting for a hung apply: its effects are
   * disposed, what it registers later is disposed as it arrives, and the rest of the kernel runs on.
   */
  async fail(error: YokeError): Promise<void> {
    if (this.state === 'disposed' || this.state === 'failed') return
    this.error = error
    const scope = this.#scope
    const abort = this.#abort
    this.#setState('failed')
    if (!scope || !abort || scope.closed) return
    await this.host.releaseDependents(this)
    await this.#close(scope, abort)
  }

  /** Ends the current activation: `pending` waits for services again, `disposed` is final. */
  unload(next: 'pending' | 'disposed'): Promise<void> {
    if (next === 'disposed' && this.state !== 'disposed') this.#setState('disposed') // at once: nothing may reload it while its effects unwind
    // an apply still running is told at once: unload waits for it, so it must not wait for us
    if (next === 'disposed' || this.state === 'loading') this.#abort?.abort(ENDED)
    return this.#run(async () => {
      const scope = this.#scope
      if (next === 'pending' && this.state !== 'disposed') this.#setState('pending')
      if (!scope || scope.closed) return
      await this.host.releaseDependents(this) // they may still call our services while they unwind
      await this.#close(scope, this.#abort!)
    })
  }

  async #close(scope: EffectScope, abort: AbortController) {
    abort.abort(ENDED)
    try {
      await scope.dispose(this.label)
    } catch (err) {
      this.host.log({ level: 'error', fiber: this, message: (err as Error).message, error: err })
    }
  }

  #errorSite(): ErrorSite {
    return { ...this.site, instance: this.key, plugin: this.plugin.name }
  }

  #late(what: string) {
    const warning = new YokeError(
      'EFFECT_AFTER_DISPOSE',
      { what, instance: this.key },
      this.#errorSite(),
    )
    this.host.log({ level: 'warn', fiber: this, message: warning.message, error: warning })
  }

  #setState(state: FiberState) {
    if (this.state === state) return
    this.state = state
    this.host.onState(this)
  }

  /** Transitions of one fiber run one at a time (a dispose during apply waits its turn). */
  #run(step: () => Promise<void>): Promise<void> {
    const previous = this.#transition ?? Promise.resolve()
    const next = previous.then(step).finally(() => {
      if (this.#transition === next) this.#transition = undefined
      this.host.schedule(this)
    })
    this.#transition = next
    return next
  }
}
