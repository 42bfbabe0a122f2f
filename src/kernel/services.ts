/**
 * @module kernel/services
 * Named services in an awilix container. Each provision records its owner and a serial id, so
 * dependents can tell "the same service" from "a replacement". awilix cannot unregister, so a
 * withdrawn name is re-registered as a tombstone that throws SERVICE_UNAVAILABLE when resolved.
 */
import { asFunction, asValue, createContainer, type AwilixContainer } from 'awilix'
import { YokeError } from '../errors.ts'
import type { FiberInfo, Provision } from './types.ts'

export type { Provision, ServiceName, Services } from './types.ts'

/**
 * A service may implement this to hand each consuming instance its own view, so that what the
 * instance registers through the service becomes one of its effects (see ToolRuntime).
 */
export const bindToContext = Symbol.for('yoke.bindToContext')
export interface ContextBound {
  [bindToContext](ctx: {
    key: string
    effect(label: string, cleanup: () => void | Promise<void>): unknown
  }): unknown
}

let serial = 0

export class ServiceRegistry {
  readonly container: AwilixContainer = createContainer({ strict: true })
  #provisions = new Map<string, Provision>()
  #byOwner = new Map<FiberInfo, Set<string>>()

  constructor(private readonly onChange: (name: string) => void) {}

  /** Adds a service; throws SERVICE_CONFLICT naming the current owner when the name is taken. */
  provide(name: string, value: unknown, owner: FiberInfo): () => void {
    const current = this.#provisions.get(name)
    if (current) throw new YokeError('SERVICE_CONFLICT', { name, owner: current.owner.label })
    const provision: Provision = { name, value, owner, id: ++serial }
    this.#provisions.set(name, provision)
    this.#byOwner.set(owner, (this.#byOwner.get(owner) ?? new Set()).add(name))
    this.container.register(name, asValue(value))
    this.onChange(name)
    return () => {
      if (this.#provisions.get(name) !== provision) return
      this.#provisions.delete(name)
      const owned = this.#byOwner.get(owner)
      owned?.delete(name)
      if (!owned?.size) this.#byOwner.delete(owner)
      this.container.register(
        name,
        asFunction(() => withdrawn(name)),
      )
      this.onChange(name)
    }
  }

  /** The provision of `name` if it exists and its provider is active. */
  get(name: string): Provision | undefined {
    const provision = this.#provisions.get(name)
    return provision?.owner.state === 'active' ? provision : undefined
  }

  /** The names `owner` provides. */
  namesOf(owner: FiberInfo): string[] {
    return [...(this.#byOwner.get(owner) ?? [])]
  }

  /** Every provision, ready or not. */
  list(): Provision[] {
    return [...this.#provisions.values()]
  }
}

function withdrawn(name: string): never {
  throw new YokeError('SERVICE_UNAVAILABLE', {
    name,
    who: 'the container (its provider was disposed)',
  })
}
