/**
 * A rule that refuses a version everywhere (withdrawn, or pinned at what it no longer is) unloads
 * what it refuses, not only its tools: an MCP server is held (its process ends), an exec package is
 * held (its tools, hooks and servers go), a skill is held (out of the prompt and skills_list), and a
 * running dynamic plugin version is stopped. A rollout does not unload: other scopes use the version.
 *
 * Each kind is a child instance that waits for its provider's service and looks again whenever the
 * provider announces a change; its `Holder` keeps its holds, which last as long as the child does.
 * The next version of this instance takes its holds before this one lets go (holds are counted), so
 * nothing comes up in between. What a held server was is remembered across those reloads
 * (`Kept.held`): held, it has no tools, so its content hash cannot be computed again. The audit log
 * hears of each unload from the providers' own lists: what is held is `refused` there (identity.ts,
 * changes.ts). The decisions (`holdStep`, `toStop`) are pure functions.
 */
import {
  definePlugin,
  messageOf,
  toDisposer,
  YokeError,
  type Context,
  type Disposer,
  type Logger,
} from 'yoke'
import type { DynamicPluginInfo } from '../repository/api.ts'
import type { Capability } from './api.ts'
import { dynamicCapability } from './dynamic.ts'
import type { Governance, Refusal } from './governance.ts'
import type { Kept } from './kept.ts'

/** One thing a provider has now, as a capability. */
export interface Unloadable {
  /** what the provider's hold takes: a server's, package's or skill's name */
  key: string
  cap: Capability
  /** held, by anyone */
  held: boolean
  /** up, so what it is can be judged: a server connected (its handshake named its version) */
  ready: boolean
  /** what a hold lands on (a server's handle): a new one, after its instance reloaded, holds none */
  target?: object
}

export type UnloadKind = 'mcp' | 'exec' | 'skill'

const UNLOADS: Partial<Record<Refusal['code'], true>> = {
  CAPABILITY_WITHDRAWN: true,
  CAPABILITY_PIN_MISMATCH: true,
}

/** The refusal that unloads `cap`: a withdrawal or a pin, never a rollout (undefined: none). */
export function unloading(rules: Governance, cap: Capability): Refusal | undefined {
  const why = rules.refusal(cap, [], '')
  return why && UNLOADS[why.code] ? why : undefined
}

/** What a refusal says where the provider shows the hold: `CODE: message`. */
export const holdReason = (why: Refusal) => {
  const error = new YokeError(why.code, why.params)
  return `${error.code}: ${error.message}`
}

/** What a holder does with one item at one look. */
export type HoldStep =
  { kind: 'skip' } | { kind: 'release' } | { kind: 'hold'; cap: Capability; why: string }

/**
 * The decision for one item: `holding` (this holder holds it already), `remembered` (what a held
 * server was when it was held). One that is not up is judged only as remembered: a server between
 * connections has no version to show, and held it has no tools to hash.
 */
export function holdStep(
  item: Pick<Unloadable, 'cap' | 'ready'>,
  holding: boolean,
  remembered: Capability | undefined,
  rules: Governance,
): HoldStep {
  if (!item.ready && !remembered) return { kind: 'skip' }
  const cap = remembered ?? item.cap
  const why = unloading(rules, cap)
  if (!why) return holding ? { kind: 'release' } : { kind: 'skip' }
  return holding ? { kind: 'skip' } : { kind: 'hold', cap, why: holdReason(why) }
}

/**
 * The holds of one kind of provider: takes a hold on what is refused, and lets go of what no
 * longer is (a package edited to a version the rules allow).
 */
export class Holder {
  /** key → this holder's hold on it, and what the hold landed on */
  readonly #holds = new Map<string, { release: Disposer; target?: object }>()

  constructor(
    readonly kind: UnloadKind,
    private readonly items: () => Unloadable[],
    private readonly hold: (key: string, why: string) => Disposer | undefined,
    private readonly rules: Governance,
    private readonly kept: Pick<Kept, 'held'>,
    private readonly logger: Logger,
  ) {}

  /** Looks at every item its provider has now. */
  look(): void {
    for (const item of this.items()) {
      const memo = `${this.kind}:${item.key}`
      // its instance reloaded: the old hold went with the old one
      const mine = this.#holds.get(item.key)
      if (mine && item.target && mine.target !== item.target) this.#holds.delete(item.key)
      if (!item.held) this.kept.held.delete(memo) // up again: what it is now is what counts
      const remembered = this.kind === 'mcp' && item.held ? this.kept.held.get(memo) : undefined
      const step = holdStep(item, this.#holds.has(item.key), remembered, this.rules)
      if (step.kind === 'release') this.#letGo(item.key)
      else if (step.kind === 'hold') this.#take(item, memo, step.cap, step.why)
    }
  }

  /** Lets go of every hold. */
  close(): void {
    for (const key of [...this.#holds.keys()]) this.#letGo(key)
  }

  #take(item: Unloadable, memo: string, cap: Capability, why: string): void {
    // taken before the hold: the provider announces it at once, and this look runs again inside
    this.#holds.set(item.key, { release: toDisposer(() => {}), target: item.target })
    try {
      const release = this.hold(item.key, why)
      if (!release) return void this.#holds.delete(item.key)
      this.#holds.set(item.key, { release, target: item.target })
      if (this.kind === 'mcp') this.kept.held.set(memo, cap)
    } catch (err) {
      this.#holds.delete(item.key)
      this.logger.error(`could not unload ${cap.id}`, err)
    }
  }

  #letGo(key: string): void {
    this.#holds.get(key)?.release()
    this.#holds.delete(key)
  }
}

/** A running dynamic plugin version to stop, and why. */
export interface ToStop {
  session: string
  name: string
  version: number
  cap: Capability
  why: string
}

/** The running dynamic versions the rules refuse in their own session (not those `stopping` already). */
export function toStop(
  plugins: readonly DynamicPluginInfo[],
  rules: Governance,
  stopping: ReadonlySet<string>,
): ToStop[] {
  return plugins.flatMap((p) => {
    if (p.state !== 'running' || stopping.has(stopKey(p))) return []
    const version = p.versions.find((v) => v.version === p.current)
    if (!version) return []
    const cap = dynamicCapability(version, 'running')
    const why = rules.refusal(cap, [], p.session)
    if (!why) return []
    return [
      { session: p.session, name: p.name, version: version.version, cap, why: holdReason(why) },
    ]
  })
}

const stopKey = (p: { session: string; name: string }) => `${p.session}\u0000${p.name}`

/** Starts one child per kind of provider; nothing at all when there are no rules. */
export function unloadRefused(
  ctx: Context,
  rules: Governance,
  kept: Kept,
  items: Record<UnloadKind, () => Unloadable[]>,
): void {
  if (rules.empty) return
  const holder = (child: Context, kind: UnloadKind, hold: Holder['hold']) => {
    const holder = new Holder(kind, items[kind], hold, rules, kept, child.logger)
    child.effect(`capabilities: the ${kind} it holds`, () => holder.close())
    return () => void (child.signal.aborted || holder.look())
  }
  ctx.plugin(
    definePlugin({
      name: 'capabilities-unload-mcp',
      inject: ['mcp'],
      apply(child) {
        const look = holder(child, 'mcp', (name, why) => child.mcp.hold(name, why))
        child.tap(child.mcp.hooks.change, 'capabilities', () => look())
        child.tap(child.mcp.hooks.listChanged, 'capabilities', () => look())
        look()
      },
    }),
  )
  ctx.plugin(
    definePlugin({
      name: 'capabilities-unload-packages',
      inject: ['execTools'],
      apply(child) {
        const look = holder(child, 'exec', (id, why) => child.execTools.hold(id, why))
        child.tap(child.execTools.hooks.change, 'capabilities', () => look())
        look()
      },
    }),
  )
  ctx.plugin(
    definePlugin({
      name: 'capabilities-unload-skills',
      inject: ['skills'],
      apply(child) {
        const look = holder(child, 'skill', (name, why) => child.skills.hold(name, why))
        child.tap(child.skills.hooks.change, 'capabilities', () => look())
        look()
      },
    }),
  )
  ctx.plugin(stopRefusedDynamic(rules))
}

/** A running dynamic version is stopped, in its own session, by the rules as they apply there. */
function stopRefusedDynamic(rules: Governance) {
  return definePlugin({
    name: 'capabilities-unload-dynamic',
    inject: ['repository'],
    apply(child) {
      const repository = child.repository
      const stopping = new Set<string>()
      const look = () => {
        if (child.signal.aborted) return
        for (const s of toStop(repository.plugins(), rules, stopping)) {
          stopping.add(stopKey(s))
          repository
            .stop(s.session, s.name, s.why, 'capabilities', s.version)
            .catch((err: unknown) =>
              child.logger.warn(`could not stop ${s.cap.id}@${s.cap.version}: ${messageOf(err)}`),
            )
            .finally(() => stopping.delete(stopKey(s)))
        }
      }
      child.tap(repository.hooks.change, 'capabilities', () => void queueMicrotask(look))
      look()
    },
  })
}
