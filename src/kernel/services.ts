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
    /** the consuming instance's fiber: a reload's new version has another */
    fiberId: number
    effect(label: string, cleanup: () => void | Promise<void>): unknown
  }): unknown
}

let serial = 0

/**
 * The same instance key may provide a name twice at once: while a changed instance's new version
 * starts beside the old one (a seamless reload), both are kept, the newer first, and readers get
 * the newest whose provider is active. Any other owner is SERVICE_CONFLICT.
 */
export class ServiceRegistry {
  readonly container: AwilixContainer = createContainer({ strict: true })
  /** name → its provisions, newest first */
  #provisions = new Map<string, Provision[]>()
  #byOwner = new Map<FiberInfo, Set<string>>()

  constructor(private readonly onChange: (name: string) => void) {}

  /** Adds a service; throws SERVICE_CONFLICT naming the current owner when another owns the name. */
  provide(name: string, value: unknown, owner: FiberInfo): () => void {
    const stack = this.#provisions.get(name) ?? []
    const other = stack.find((p) => p.owner === owner || p.owner.key !== owner.key)
    if (other) throw new YokeError('SERVICE_CONFLICT', { name, owner: other.owner.label })
    const provision: Provision = { name, value, owner, id: ++serial }
    this.#provisions.set(name, [provision, ...stack])
    this.#byOwner.set(owner, (this.#byOwner.get(owner) ?? new Set()).add(name))
    this.container.register(name, asValue(value))
    this.onChange(name)
    return () => {
      const current = this.#provisions.get(name) ?? []
      if (!current.includes(provision)) return
      const rest = current.filter((p) => p !== provision)
      if (rest.length) this.#provisions.set(name, rest)
      else this.#provisions.delete(name)
      const owned = this.#byOwner.get(owner)
      owned?.delete(name)
      if (!owned?.size) this.#byOwner.delete(owner)
      this.container.register(
        name,
        rest.length ? asValue(rest[0]!.value) : asFunction(() => withdrawn(name)),
      )
      this.onChange(name)
    }
  }

  /** The newest provision of `name` whose provider is active. */
  get(name: string): Provision | undefined {
    return this.#provisions.get(name)?.find((p) => p.owner.state === 'active')
  }

  /** The names `owner` provides. */
  namesOf(owner: FiberInfo): string[] {
    return [...(this.#byOwner.get(owner) ?? [])]
  }

  /** The ids of the provisions `owner` holds now. */
  idsOf(owner: FiberInfo): number[] {
    return this.namesOf(owner).flatMap((name) =>
      (this.#provisions.get(name) ?? []).filter((p) => p.owner === owner).map((p) => p.id),
    )
  }

  /** Every provision, ready or not. */
  list(): Provision[] {
    return [...this.#provisions.values()].flat()
  }
}

function withdrawn(name: string): never {
  throw new YokeError('SERVICE_UNAVAILABLE', {
    name,
    who: 'the container (its provider was disposed)',
  })
}
