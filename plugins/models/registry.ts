/**
 * The registry of model providers behind the `models` service. A provider plugin's instance offers
 * its kind (`openai`, `anthropic`, `replay`, …) with a factory; whoever needs a model that is not
 * the main one (a sub-provider lane of the agent loop) asks the registry for one by kind, and so
 * never imports a provider's code. An offer is an effect of the instance that made it: it is
 * withdrawn when that instance unloads.
 */
import { toDisposer, YokeError, type Disposer } from 'yoke'
import type { LaneOptions, ModelClient } from './model.ts'
import './errors.ts'

/** What a provider plugin offers the registry: how to make a model of its kind. */
export interface ModelProvider {
  /** the kind a spec names in `provider`: `openai`, `anthropic`, `replay`, … */
  readonly kind: string
  /** the variable that holds the key when a spec names none; undefined: this kind takes no key */
  readonly defaultKeyEnv?: string
  /**
   * Makes a model from a spec (the registry has read the key: `apiKey`, absent for `none`).
   * `who` names the asker for errors, e.g. `lane "helper"`.
   */
  create(options: ProviderSpec, who: string): ModelClient
}

/** A model asked for by kind: the provider's options (model, baseUrl, apiKeyEnv, …). */
export interface ModelSpec extends LaneOptions {
  provider: string
}

/** What a provider's factory gets: the spec, with the key read from the environment. */
export interface ProviderSpec extends ModelSpec {
  apiKey?: string
}

/** The `models` service. */
export interface ModelRegistry {
  /**
   * Offers a provider kind. A kind offered by several instances (the `model` instance and another
   * one of the same plugin) is answered by the latest offer still standing.
   */
  register(provider: ModelProvider): Disposer
  /** the kinds offered now, sorted */
  kinds(): string[]
  /**
   * Makes a model of `spec.provider`. MODEL_FAILED when no instance offers that kind, or when the
   * key variable (`apiKeyEnv`, else the kind's default; `none`: no key) is not set.
   */
  create(spec: ModelSpec, who?: string): ModelClient
}

interface Offer {
  provider: ModelProvider
  owner: string
}

export class ProviderRegistry {
  readonly #offers: Offer[] = []

  register(provider: ModelProvider, owner: string): () => void {
    if (!provider || typeof provider.kind !== 'string' || typeof provider.create !== 'function')
      throw new TypeError(`${owner}: a model provider has a kind and a create function`)
    const offer: Offer = { provider, owner }
    this.#offers.push(offer)
    return () => {
      const i = this.#offers.indexOf(offer)
      if (i >= 0) this.#offers.splice(i, 1)
    }
  }

  kinds(): string[] {
    return [...new Set(this.#offers.map((o) => o.provider.kind))].sort()
  }

  create(spec: ModelSpec, who = 'a model'): ModelClient {
    const failed = (reason: string) =>
      new YokeError('MODEL_FAILED', { provider: spec.provider, model: spec.model, reason })
    const offer = this.#offers.findLast((o) => o.provider.kind === spec.provider)
    if (!offer) {
      const kinds = this.kinds()
      throw failed(
        `${who}: no instance offers the model provider "${spec.provider}" (offered: ${kinds.join(', ') || 'none'}); compose an instance of that provider plugin (with model: false it offers only the kind)`,
      )
    }
    const env = spec.apiKeyEnv ?? offer.provider.defaultKeyEnv
    const keyed = env !== undefined && env !== 'none'
    const apiKey = keyed ? process.env[env] : undefined
    if (keyed && !apiKey) throw failed(`${who}: the API key variable ${env} is not set`)
    return offer.provider.create({ ...spec, apiKey }, who)
  }

  /** A view whose offers are tracked by `track` (a consumer's effects, or plain disposers). */
  view(owner: string, track: (label: string, cleanup: () => void) => Disposer): ModelRegistry {
    return {
      register: (provider) =>
        track(`model provider ${provider?.kind}`, this.register(provider, owner)),
      kinds: () => this.kinds(),
      create: (spec, who) => this.create(spec, who),
    }
  }

  /** The host's view (the CLI, tests): offers are plain disposers. */
  hostView(): ModelRegistry {
    return this.view('host', (_label, cleanup) => toDisposer(cleanup))
  }
}
