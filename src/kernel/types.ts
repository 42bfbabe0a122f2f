/**
 * @module kernel/types
 * The kernel's contracts in one leaf module, so the files that implement them import this one and
 * never each other in a circle: a fiber talks to a narrow `FiberHost`, not to the Kernel class.
 */
import type { SyncHook } from 'tapable'
import type { ErrorSite, YokeError } from '../errors.ts'
import type { Cleanup, Disposer, EffectNode } from './disposer.ts'
import type { AnyHook, TapFn, TapOptions } from './hooks.ts'
import type { WatchHandler, WatchOptions } from './watch.ts'
import type { ReloadGate, ReloadGates } from './gates.ts'

// ---- services ------------------------------------------------------------------------------------

/**
 * The services plugins provide, typed by declaration merging:
 * ```ts
 * declare module 'yoke' { interface Services { weather: WeatherService } }
 * ```
 */
export interface Services {}

export type ServiceName = keyof Services extends never ? string : keyof Services | (string & {})

/** The value type of a service name: its declared type, or unknown for an undeclared name. */
export type ServiceOf<K> = K extends keyof Services ? Services[K] : unknown

export interface Provision {
  name: string
  value: unknown
  /** the fiber that provides it; the provision counts only while that fiber is active */
  owner: FiberInfo
  /** serial number of this provision: a replacement gets a new one */
  id: number
}

// ---- plugins -------------------------------------------------------------------------------------

/** The part of the Standard Schema interface yoke uses (zod 4, valibot and arktype implement it). */
export interface ConfigSchema<Output = unknown> {
  readonly '~standard': {
    validate(value: unknown): StandardResult<Output> | Promise<StandardResult<Output>>
    // `| undefined` as the Standard Schema spec writes it: a consumer with exactOptionalPropertyTypes
    readonly types?: { readonly output: Output } | undefined
  }
}
type StandardResult<O> =
  | { value: O; issues?: undefined }
  | {
      issues: ReadonlyArray<{
        message: string
        path?: ReadonlyArray<PropertyKey | { key: PropertyKey }> | undefined
      }>
    }

type ConfigOf<S> = S extends ConfigSchema<infer O> ? O : Record<string, unknown>

/** The services an instance injected, typed; other services are read with `ctx.get()`. */
export type InjectedContext<I extends readonly string[]> = Context & {
  readonly [K in I[number]]: ServiceOf<K>
}

export type ApplyResult = void | Cleanup | Promise<void | Cleanup>

export interface PluginDefinition<
  I extends readonly ServiceName[] = [],
  S extends ConfigSchema | undefined = undefined,
> {
  /** the plugin's name; its instances are keyed in the preset */
  name: string
  /** services that must exist before apply runs; the instance restarts when one is replaced */
  inject?: I
  /** services this plugin provides: lets `yoke inspect` say who would satisfy a waiting instance */
  provides?: readonly string[]
  /**
   * built-in plugins it runs as children by name (`ctx.plugin('mcp-client', …)`): their modules are
   * imported with this one's, so a plugin never imports another's code to compose it
   */
  uses?: readonly string[]
  /** validates and defaults the instance's `config` */
  config?: S
  /**
   * Its instances hold something only one can hold at a time (a listening port): a reload disposes
   * the old version before it starts the new one, instead of starting the new one beside it.
   */
  exclusive?: boolean
  /**
   * Its instances (or those with this config) run code the project brings: programs, hooks, a
   * stdio server. One from the project's own config waits until the project is trusted.
   */
  runsProjectCode?: boolean | ((config: ConfigOf<S>) => boolean)
  /**
   * The config paths (dotted, under `config`) that decide which secret it reads from the user's
   * environment by itself, where it sends it (a model provider's `apiKeyEnv` and `baseUrl`), or
   * who may reach what it serves (a gateway's token and host). When the project's own files set
   * one of them, the instance waits until the project is trusted.
   */
  sendsSecrets?: (config: ConfigOf<S>) => readonly string[]
  /**
   * The config paths an untrusted project may not set, because they loosen what guards the user
   * (a policy's `allow`): the project's values there are left out until it is trusted, and the
   * instance runs without them meanwhile.
   */
  ignoredUntilTrusted?: (config: ConfigOf<S>) => readonly string[]
  apply(ctx: InjectedContext<I>, config: ConfigOf<S>): ApplyResult
}

/** A plugin after normalisation: what the kernel runs. */
export interface Plugin {
  name: string
  inject: readonly string[]
  provides: readonly string[]
  uses: readonly string[]
  config?: ConfigSchema
  exclusive: boolean
  runsProjectCode?: boolean | ((config: unknown) => boolean) | undefined
  sendsSecrets?: ((config: unknown) => readonly string[]) | undefined
  ignoredUntilTrusted?: ((config: unknown) => readonly string[]) | undefined
  apply(ctx: Context, config: unknown): ApplyResult
}

// ---- fibers --------------------------------------------------------------------------------------

export type FiberState = 'pending' | 'loading' | 'active' | 'failed' | 'disposed'

/** What anyone outside a fiber may read of it (the Fiber class implements it). */
export interface FiberInfo {
  readonly id: number
  readonly key: string
  readonly plugin: Plugin
  readonly config: unknown
  /** where the instance is declared, for errors */
  readonly site: ErrorSite
  /** `| undefined`: Fiber's optional constructor parameter is that type (exactOptionalPropertyTypes) */
  readonly parent?: FiberInfo | undefined
  readonly state: FiberState
  /** why the fiber failed (state failed), why it waits (PLUGIN_WAITING), or the last disposal error */
  readonly error?: YokeError
  /** `instance "key" (plugin name)`: how messages name this fiber */
  readonly label: string
  readonly busy: boolean
  effects(): EffectNode[]
  settled(): Promise<void>
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'
export type Logger = Record<LogLevel, (message: string, error?: unknown) => void>

export interface LogRecord {
  level: LogLevel
  message: string
  fiber?: FiberInfo
  error?: unknown
}

export interface KernelHooks {
  /** a fiber changed state */
  readonly state: SyncHook<[FiberInfo]>
  /** a log record from the kernel or a plugin */
  readonly log: SyncHook<[LogRecord]>
  /** the composition loaded or reloaded its config (applied or rejected) */
  readonly reload: SyncHook<[ReloadNotice]>
}

/** What a load or reload did, for plugins that report it (telemetry, a console). */
export interface ReloadNotice {
  type: 'loaded' | 'reload'
  /** false when the candidate config had errors and nothing was changed */
  ok: boolean
  /** the files whose change started it */
  trigger: string[]
  added: string[]
  removed: string[]
  restarted: string[]
  unchanged: string[]
  failed: Array<{ instance: string; error: Error }>
  errors: Error[]
  durationMs: number
}

/**
 * How the composition is run, so a plugin can fit in: `serve` runs until stopped (`yoke dev`,
 * `yoke serve`, an embedding application); `once` composes for one command and closes (`yoke tools
 * call`, `yoke run`): a plugin that listens on a port or starts background work skips it.
 */
export type RunMode = 'serve' | 'once'

// ---- controls ------------------------------------------------------------------------------------

/**
 * The controls plugins answer (a CLI command asking a running `yoke dev`), typed by declaration
 * merging beside `Services`; a name is `<plugin>/<verb>`:
 * ```ts
 * declare module 'yoke' {
 *   interface Controls { 'notes/count': { request: {}; answer: { count: number } } }
 * }
 * ```
 * Four verbs are contributions the CLI reads from every plugin that answers them: `summary` (a
 * section of the dev screen and `yoke doctor`), `inspect` (a section of `yoke inspect`),
 * `tool-columns` (columns of `yoke tools list`) and `doctor` (checks); see ContributedControls.
 */
export interface Controls {}

/** What every `<plugin>/summary`, `<plugin>/inspect` and `<plugin>/tool-columns` answers. */
export interface ContributedControls {
  summary: SummarySection | undefined
  inspect: InspectSection | undefined
  /** `yoke doctor`'s checks of this plugin */
  doctor: DoctorCheck[]
  /** column → tool name → the cell */
  'tool-columns': Record<string, Record<string, string>>
}

/** A section of `yoke inspect`, contributed as `<plugin>/inspect`: plain lines (no colours). */
export interface InspectSection {
  title: string
  /** after the title, dimmed */
  note?: string
  lines: string[]
  /** what `yoke inspect --json` shows under the title (default: the lines) */
  data?: unknown
}

/** One check of `yoke doctor`, contributed as `<plugin>/doctor` (a list of them). */
export interface DoctorCheck {
  level: 'ok' | 'warn' | 'error'
  message: string
  hint?: string
}

/** A section of `yoke dev`'s screen and `yoke doctor`, contributed as `<plugin>/summary`. */
export interface SummarySection {
  title: string
  /** after the title, dimmed */
  note?: string
  /** aligned `key  value` rows */
  rows?: Array<[string, string]>
  /** lines under the title (indented for you) */
  lines?: string[]
}

export type ControlName = keyof Controls extends never ? string : keyof Controls | (string & {})
type Verb<K> = K extends `${string}/${infer V}` ? V : never
type Entry<K> = K extends keyof Controls ? Controls[K] : never
/** The request a control takes: its declared one, or any object. */
export type ControlRequest<K> = Entry<K> extends { request: infer R } ? R : Record<string, unknown>
/** The answer a control gives: its declared one, a contribution's, or unknown. */
export type ControlAnswer<K> =
  Entry<K> extends { answer: infer A }
    ? A
    : Verb<K> extends keyof ContributedControls
      ? ContributedControls[Verb<K>]
      : unknown

/** Answers a control request (a CLI command acting on a running `yoke dev`), see `ctx.control`. */
export type ControlHandler<K = string> = (
  request: ControlRequest<K>,
) => ControlAnswer<K> | Promise<ControlAnswer<K>>

export interface SpawnOptions {
  key: string
  parent?: FiberInfo
  site?: ErrorSite
}

/** The part of the kernel a fiber and its context use. */
export interface FiberHost {
  readonly hooks: KernelHooks
  readonly runMode: RunMode
  readonly command: string | undefined
  /** where relative paths start (the project's directory) */
  baseDir(): string
  /** every fiber that is not disposed yet, in creation order */
  readonly fibers: readonly FiberInfo[]
  provide(name: string, value: unknown, owner: FiberInfo): () => void
  service(name: string): Provision | undefined
  control(name: string, handler: ControlHandler, owner: FiberInfo): () => void
  controls(): string[]
  ask(name: string, request?: Record<string, unknown>, timeoutMs?: number): Promise<unknown>
  /** the state `ctx.keep` hands from one version of an instance to the next */
  keep(owner: FiberInfo, name: string, init: () => unknown): unknown
  /** a built-in plugin by name, for `ctx.plugin('<name>')` (its module imported already) */
  pluginNamed(name: string): Plugin | undefined
  readonly gates: ReloadGates
  spawn(plugin: Plugin, config: unknown, options: SpawnOptions): FiberInfo
  remove(fiber: FiberInfo): Promise<void>
  log(record: LogRecord): void
  /** something `fiber` started threw after its apply: it fails alone (see kernel/faults) */
  fault(fiber: FiberInfo, err: unknown): void
  /** counts live resources by kind (taps, watchers, timers) and the hooks tapped */
  count(kind: string, delta: number, hook?: AnyHook): void
  /** a fiber changed state */
  onState(fiber: FiberInfo): void
  /** look at the fiber again after this microtask */
  schedule(fiber: FiberInfo): void
  /** unload the fibers that use a service of `provider`, before the provider unwinds */
  releaseDependents(provider: FiberInfo): Promise<void>
}

// ---- the plugin's context ------------------------------------------------------------------------

export interface ChildOptions {
  /** the child's key under its parent (default: the plugin's name) */
  key?: string
}

/** A child plugin's disposer, with the child's fiber for inspection and awaiting. */
export interface ChildHandle extends Disposer {
  readonly fiber: FiberInfo
}

export interface Context {
  /** the instance key from the preset */
  readonly key: string
  /**
   * this instance's fiber: a reload that starts a new version of the same key gets a new one
   * (registries let a new fiber take over its key's names while the old one still runs)
   */
  readonly fiberId: number
  /** aborted when this activation ends: long setup work should stop on it */
  readonly signal: AbortSignal
  readonly logger: Logger
  /** the kernel's hooks: `state` (a fiber changed state) and `log` */
  readonly hooks: KernelHooks
  /** how the composition runs: `serve` until stopped, or `once` for one command */
  readonly runMode: RunMode
  /**
   * the CLI command that composes this kernel, when it says (`dev`: a developer is watching, so
   * developer tools such as a web console may start); undefined when embedded
   */
  readonly command: string | undefined
  /** Provides a service under `name`; a second provider of the same name is SERVICE_CONFLICT. */
  provide<K extends ServiceName>(name: K, value: ServiceOf<K>): Disposer
  /** Optional read of any service: undefined when it is absent or its provider is not active. */
  get<K extends ServiceName>(name: K): ServiceOf<K> | undefined
  /** Taps a tapable hook; the disposer takes the tap out for good. */
  tap<H extends AnyHook>(hook: H, name: string, fn: TapFn<H>, options?: TapOptions): Disposer
  /** Records any cleanup as an effect. */
  effect(label: string, cleanup: Cleanup): Disposer
  /**
   * Watches files or directories (chokidar), calling `handler` with the debounced changes. A
   * relative path starts at the project's directory, not the shell's.
   */
  watch(paths: string | string[], handler: WatchHandler, options?: WatchOptions): Disposer
  setTimeout(fn: () => void, ms: number): Disposer
  setInterval(fn: () => void, ms: number): Disposer
  /** Every plugin instance in the kernel (read-only views), for plugins that report on others. */
  instances(): readonly FiberInfo[]
  /**
   * Runs a child plugin whose lifetime ends with this activation: any plugin shape, or the name of
   * a built-in plugin this one declares in `uses` (composed by name, never imported).
   */
  plugin(plugin: unknown, config?: unknown, options?: ChildOptions): ChildHandle
  /**
   * Answers `name` requests from CLI commands: a command asks the running `yoke dev` (or, with no
   * dev running, a composition of its own) and gets what `handler` returns. A second handler of the
   * same name is CONTROL_CONFLICT.
   * The name is `<plugin>/<verb>` (this plugin's name; CONTROL_NAME otherwise), typed by `Controls`.
   * @example ctx.control('notes/count', () => ({ count: notes.length }))
   */
  control<K extends ControlName>(name: K, handler: ControlHandler<K>): Disposer
  /** The controls active instances answer, sorted (a plugin that reports on others: a console). */
  controls(): string[]
  /** Asks control `name` as a CLI command would, bounded by `timeoutMs` (PLUGIN_TIMEOUT past it). */
  ask(name: string, request?: Record<string, unknown>, timeoutMs?: number): Promise<unknown>
  /**
   * State that outlives a reload: the first version of this instance gets `init()`, each next
   * version of the same instance (same key and plugin) gets the same value; it is dropped when the
   * instance is removed from the config. For what a restart should not lose (the port last bound,
   * counters, caches); never for what a version owns (connections, timers: effects close those).
   * @example const seen = ctx.keep('seen', () => new Map<string, number>())
   */
  keep<T>(name: string, init: () => T): T
  /**
   * Feeds what a reload asks before it applies: what is in flight (an agent's turn) and which
   * planned changes would alter the model's cached prompt. A reload with `refuseIfBusy` is refused
   * while a gate is busy; one with `holdOnCacheImpact` is held until every gate is idle.
   */
  reloadGate(gate: ReloadGate): Disposer
}
