/**
 * @module config/composer
 * A Composition is a running harness: the kernel, the instances of the effective config, and
 * (when watching) the transactional hot reload of DESIGN §5. Reloads run one at a time; edits that
 * arrive during one are coalesced into the next, so a burst ends in the final state.
 */
import { statSync } from 'node:fs'
import { SyncHook } from 'tapable'
import { messageOf, YokeError } from '../errors.ts'
import { settledWithin } from '../kernel/disposer.ts'
import { defineHooks } from '../kernel/hooks.ts'
import type { Fiber } from '../kernel/fiber.ts'
import { Kernel, type RunMode } from '../kernel/kernel.ts'
import { toPlugin, type Plugin } from '../kernel/plugin.ts'
import { runtimePlugin } from '../runtime/index.ts'
import { runtimeSettings, type ToolRuntime } from '../runtime/runtime.ts'
import { DebouncedWatcher } from '../kernel/watch.ts'
import { resolve } from 'node:path'
import type { Context } from '../kernel/context.ts'
import type { CacheImpact, PlannedChange } from '../kernel/gates.ts'
import type { ServiceName, ServiceOf } from '../kernel/types.ts'
import { explainConfig, type ExplainedConfig } from './explain.ts'
import { yokeHome, type LoadOptions } from './layers.ts'
import { ModuleLoader } from './modules.ts'
import { Reconciler, type ReloadReport } from './reconcile.ts'
import { resolveConfig, type ResolvedConfig } from './resolve.ts'
import { trustTracker, type TrustVerdict } from './trust.ts'

/** The `project` service: the project's directory and $YOKE_HOME, for plugins that find files. */
export interface ProjectInfo {
  dir: string
  home: string
  /** whether the project's own code may run, as of now (src/config/trust.ts): true, or why not */
  trusted?(): TrustVerdict
  /** the config applied last, as `yoke config print --explain` shows it (values from env redacted) */
  config?(): ExplainedConfig | undefined
}

declare module '../kernel/services.ts' {
  interface Services {
    project: ProjectInfo
  }
}

export interface ComposeOptions extends LoadOptions {
  /** quiet time after a file change before reloading (default 15 ms; see WatchOptions.debounceMs) */
  debounceMs?: number
  /** how long one instance's apply may take before it fails with PLUGIN_TIMEOUT (30 s) */
  settleMs?: number
  /** how long a plugin module's import may take before it fails with PLUGIN_TIMEOUT (30 s) */
  importTimeoutMs?: number
  /** `serve` (default) until closed, or `once` for one command: see RunMode */
  runMode?: RunMode
  /** the CLI command composing it (`dev`, …), for plugins: see Context.command */
  command?: string
}

const READY_MS = 5000

export interface ReloadEvent extends ReloadReport {
  type: 'loaded' | 'reload'
  /** the files whose change started this reload */
  trigger: string[]
  /**
   * `holdOnCacheImpact`: nothing was applied yet, because it would alter the model's cached
   * prompt while a turn is in flight; it applies when the turn ends (another event says so)
   */
  held?: boolean
  /** what would alter the cached prompt (held) or did (applied after a hold) */
  cacheImpact?: CacheImpact[]
  /** what a held reload waits for, or a refused one was refused for */
  busy?: string[]
}

/**
 * How one reload goes (Claude Code SDK's `reloadPlugins` options). Left out, `holdOnCacheImpact`
 * and `refuseIfBusy` take the config's default (a reload gate's, e.g. turn-guard's).
 */
export interface ReloadOptions {
  /**
   * hold a change that would alter the model's cached prompt (the tools offered, the system
   * prompt, the skills catalog) until the turns in flight end, then apply it; a later reload
   * folds into a held one
   */
  holdOnCacheImpact?: boolean
  /** refuse (RELOAD_BUSY, naming what is busy) while a turn is in flight */
  refuseIfBusy?: boolean
  /**
   * instances the caller adds, by key (`{ notes: { use: './notes.mjs' } }`): a layer on top of
   * every other from this reload on, as `--set plugins.<key>=…`
   */
  addPlugins?: Readonly<Record<string, Readonly<Record<string, unknown>>>>
}

/** What `reload(…, options)` understands; a caller tests these instead of a version. */
export const RELOAD_CAPABILITIES = Object.freeze([
  'hold-on-cache-impact',
  'refuse-if-busy',
  'add-plugins',
  'cache-impact-report',
] as const)

/** A reload that waits for the turns in flight: what it holds, and the options it folds. */
interface Held {
  trigger: Set<string>
  impact: CacheImpact[]
}

export class Composition {
  readonly kernel: Kernel
  readonly hooks = defineHooks('composition', {
    /** after the first load and after every reload, applied or rejected */
    reload: new SyncHook<[ReloadEvent]>(['event']),
  })
  readonly loader: ModuleLoader
  readonly reconciler: Reconciler
  /** the last config that was applied */
  current?: ResolvedConfig
  /** the last candidate, applied or not */
  candidate?: ResolvedConfig
  /** the options `reload(…, options)` understands: see RELOAD_CAPABILITIES */
  readonly reloadCapabilities = RELOAD_CAPABILITIES
  #queue: Promise<unknown> = Promise.resolve()
  /** coalesced reloads by their options: concurrent calls with the same options share one */
  #next = new Map<string, Promise<ReloadEvent>>()
  #triggers = new Map<string, Set<string>>()
  /** `--set` arguments callers added with `addPlugins` (kept for every later reload) */
  #added: string[] = []
  /** the reload held until the turns in flight end */
  #held?: Held
  #watcher?: DebouncedWatcher
  #watched = new Set<string>()
  #watching = false
  #closed = false
  readonly #core: Fiber
  readonly #trust: ReturnType<typeof trustTracker>
  #explained?: ToolRuntime

  constructor(readonly options: ComposeOptions) {
    this.kernel = new Kernel({
      runMode: options.runMode,
      command: options.command,
      baseDir: () => this.project.dir,
      pluginNamed: (name) => this.loader.builtin(name),
    })
    this.loader = new ModuleLoader(options.importTimeoutMs)
    this.reconciler = new Reconciler(this.kernel, options.settleMs)
    // the core runtime is there before any configured instance, under a key no preset can use
    this.#core = this.kernel.spawn(toPlugin(runtimePlugin) as Plugin, runtimeSettings.parse({}), {
      key: 'yoke:runtime',
    })
    const { verdict: trusted } = (this.#trust = trustTracker(options))
    const config = () => this.current && explainConfig(this.current)
    const dir = resolve(options.cwd)
    const project = (this.project = { dir, home: yokeHome(options), trusted, config })
    this.kernel.spawn(
      toPlugin({
        name: 'project',
        provides: ['project'],
        apply: (ctx: Context) => void ctx.provide('project', project),
      }) as Plugin,
      {},
      { key: 'yoke:project' },
    )
  }

  /** Taps the core runtime once: a call to a missing tool while instances wait says why. */
  #explainMissing() {
    const rt = this.runtime
    if (!rt || rt === this.#explained) return
    this.#explained = rt
    rt.hooks.unknownTool.tap('yoke:waiting', (name) => waitingFor(name, this.kernel.fibers))
  }

  /** Where the composition runs: the `project` service (dir follows the project config when found). */
  readonly project: ProjectInfo

  /** The core tool runtime (host view: registrations are plain disposers). */
  get runtime(): ToolRuntime | undefined {
    return this.kernel.services.get('runtime')?.value as ToolRuntime | undefined
  }

  /** Loads and applies the config for the first time. */
  /**
   * A service of the running composition, typed by the `Services` declaration merging; undefined
   * while it is absent or its provider is not active.
   * @example composition.get('skills')?.list()
   */
  get<K extends ServiceName>(name: K): ServiceOf<K> | undefined {
    return this.kernel.services.get(name)?.value as ServiceOf<K> | undefined
  }

  start(): Promise<ReloadEvent> {
    return this.#enqueue(() => this.#run('loaded', []))
  }

  /**
   * Re-reads every layer and moves the running instances to it; concurrent calls with the same
   * options coalesce. See ReloadOptions for holding and refusing while a turn is in flight.
   */
  reload(trigger: string[] = [], options: ReloadOptions = {}): Promise<ReloadEvent> {
    if (this.#closed) return Promise.reject(new Error('this composition is closed'))
    const id = JSON.stringify(options)
    const files = this.#triggers.get(id) ?? new Set<string>()
    this.#triggers.set(id, files)
    for (const file of trigger) files.add(file)
    const next =
      this.#next.get(id) ??
      this.#enqueue(() => {
        this.#next.delete(id)
        this.#triggers.delete(id)
        return this.#run('reload', [...files], options)
      })
    this.#next.set(id, next)
    return next
  }

  /** The reload held until the turns in flight end: what it would change, and why it waits. */
  get held(): { trigger: string[]; cacheImpact: CacheImpact[]; busy: string[] } | undefined {
    const held = this.#held
    if (!held) return undefined
    const busy = this.kernel.gates.busy()
    return { trigger: [...held.trigger], cacheImpact: held.impact, busy }
  }

  /** Watches every layer file and local plugin module (and files that may appear); a change reloads. */
  async watch(): Promise<void> {
    this.#watching = true
    await this.#rewatch()
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#watching = false
    await this.#watcher?.close()
    this.#watcher = undefined
    await this.#queue.catch(() => {})
    await this.reconciler.dispose()
  }

  #enqueue<T>(step: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(step, step)
    this.#queue = run.catch(() => {})
    return run
  }

  async #run(
    type: ReloadEvent['type'],
    trigger: string[],
    options: ReloadOptions = {},
  ): Promise<ReloadEvent> {
    let report: ReloadReport
    let gated: Partial<ReloadEvent> | undefined
    const before = fingerprints(this.#watched)
    const debug = (message: string) =>
      this.kernel.log({ level: 'debug', message: `${type}: ${message}` })
    try {
      debug('resolving the config')
      const added = [...this.#added, ...addedSets(options.addPlugins)]
      const sets = [...(this.options.sets ?? []), ...added]
      const candidate = await resolveConfig({ ...this.options, sets }, this.loader)
      this.candidate = candidate
      this.project.dir = candidate.stack.projectDir
      this.#trust.read(candidate.stack)
      gated =
        type === 'reload' && !candidate.errors.length
          ? this.#gate(candidate, options, trigger)
          : undefined
      // what a refused or broken reload would add is not kept
      if (!candidate.errors.length && !gated?.errors) this.#added = added
      if (gated) {
        report = { ...emptyReport(), ok: !gated.errors, errors: gated.errors ?? [] }
        await this.#updateWatch(candidate)
        return this.#emit({ type, trigger, ...report, ...gated }, before)
      }
      debug(`applying (${candidate.errors.length} config errors)`)
      await this.kernel.whenSettled(this.#core, 10_000) // the core runtime is up before instances apply
      this.#explainMissing()
      if (!candidate.errors.length) this.runtime?.configure(candidate.runtime)
      const impact = this.#held?.impact
      report = await this.reconciler.apply(candidate)
      if (report.ok) this.current = candidate
      // every layer was read again: what a held reload waited to apply is applied now
      if (report.ok && impact) gated = { cacheImpact: impact }
      if (report.ok) this.#held = undefined
      debug('updating the watched files')
      await this.#updateWatch(candidate)
    } catch (err) {
      // a bug or an unexpected failure: report it like a rejected config, keep what runs
      const error =
        err instanceof YokeError
          ? err
          : new YokeError(
              'CONFIG_READ_FAILED',
              { file: 'the config', reason: (err as Error)?.message },
              { cause: err },
            )
      report = { ...emptyReport(), ok: false, errors: [error] }
    }
    return this.#emit({ type, trigger, ...report, ...gated }, before)
  }

  /**
   * Refused (`refuseIfBusy` while a gate is busy) or held (`holdOnCacheImpact` while busy, and
   * the plan changes what the model's prompt cache holds): what the event says; else undefined.
   */
  #gate(
    candidate: ResolvedConfig,
    asked: ReloadOptions,
    trigger: string[],
  ): Partial<ReloadEvent> | undefined {
    const { gates } = this.kernel
    const options = { ...gates.defaults(), ...definedOf(asked) }
    const busy = gates.busy()
    if (!busy.length || (!options.refuseIfBusy && !options.holdOnCacheImpact)) return undefined
    const refusal = options.refuseIfBusy && gates.refusal()
    if (refusal) return { errors: [refusal], busy }
    const impact = gates.impact(this.#planned(candidate))
    if (!impact.length) return undefined
    // a later reload folds into the held one: one apply, when the turns end, of every layer
    if (!this.#held) void gates.idle().then(() => this.#applyHeld())
    const held = (this.#held ??= { trigger: new Set(), impact: [] })
    held.impact = impact
    for (const file of trigger) held.trigger.add(file)
    return { held: true, cacheImpact: impact, busy }
  }

  /** The turns ended: the held reload applies (reading every layer again), unless one did already. */
  #applyHeld() {
    const held = this.#held
    if (!held || this.#closed) return
    const trigger = [...held.trigger, '(held)']
    void this.reload(trigger, { holdOnCacheImpact: false, refuseIfBusy: false }).catch(() => {})
  }

  /** The reconciler's plan as gates read it: each change with its plugin's services and its tools. */
  #planned(candidate: ResolvedConfig): PlannedChange[] {
    const tools = this.runtime?.list() ?? []
    return this.reconciler.plan(candidate).map(({ key, change, spec }) => {
      const running = this.reconciler.running.get(key)
      const plugin = change === 'removed' ? running?.fiber?.plugin : spec.module?.plugin
      return {
        instance: key,
        change,
        plugin: plugin?.name ?? spec.use,
        inject: plugin ? injectsOf(plugin, (name) => this.loader.builtin(name)) : [],
        tools:
          change === 'added'
            ? []
            : tools
                .filter((t) => t.owner === key || t.owner.startsWith(`${key}/`))
                .map((t) => t.name),
      }
    })
  }

  #emit(event: ReloadEvent, before: Map<string, string>): ReloadEvent {
    this.hooks.reload.call(event)
    this.kernel.hooks.reload.call(event)
    // an edit made while this reload ran may have been read too early, or dropped with a replaced
    // watcher: compare what the files are now with what they were when it started
    const after = fingerprints(before.keys())
    const changed = this.#trust.relevant(
      [...before].filter(([file, print]) => after.get(file) !== print).map(([file]) => file),
    )
    if (changed.length && this.#watching) void this.reload(changed).catch(() => {})
    return event
  }

  /** Watches the candidate's files too: a file that broke the config must be seen when fixed. */
  async #updateWatch(candidate: ResolvedConfig) {
    const files = new Set<string>()
    for (const source of [this.current, candidate])
      for (const file of source?.stack.watchFiles ?? []) files.add(file)
    for (const file of this.#trust.watched()) files.add(file) // `yoke trust` starts what waited
    // the candidate's modules, and those still running (a broken new version keeps the old one)
    const specs = [
      ...(candidate.instances ?? []),
      ...[...this.reconciler.running.values()].map((r) => r.spec),
    ]
    for (const spec of specs) {
      if (spec.local && spec.file) files.add(spec.file)
      for (const dep of spec.module?.deps ?? []) files.add(dep)
    }
    const same = files.size === this.#watched.size && [...files].every((f) => this.#watched.has(f))
    this.#watched = files
    if (!same) await this.#rewatch()
  }

  /** A new watcher takes over once it is ready; the old one keeps watching until then. */
  async #rewatch() {
    if (!this.#watching) return
    const onError = (err: unknown) =>
      this.kernel.log({
        level: 'error',
        message: `watch: ${messageOf(err)}`,
        error: err,
      })
    const next = new DebouncedWatcher(
      [...this.#watched],
      (changes) => {
        const files = this.#trust.relevant(changes.map((c) => c.path))
        if (files.length) void this.reload(files).catch(() => {})
      },
      onError,
      {
        debounceMs: this.options.debounceMs,
      },
    )
    // bounded: a watcher that never reports ready must not stall every later reload
    if (!(await settledWithin(next.ready(), READY_MS)))
      this.kernel.log({
        level: 'warn',
        message: `the file watcher was not ready after ${READY_MS} ms; changes may be missed until it is`,
      })
    if (!this.#watching) return next.close() // closed while it got ready
    const previous = this.#watcher
    this.#watcher = next
    await previous?.close()
  }
}

function emptyReport(): ReloadReport {
  return {
    ok: true,
    added: [],
    removed: [],
    restarted: [],
    unchanged: [],
    failed: [],
    errors: [],
    durationMs: 0,
  }
}

/** `addPlugins` as `--set` arguments: `plugins.<key>=<JSON>` (JSON is YAML). */
function addedSets(add: ReloadOptions['addPlugins']): string[] {
  return Object.entries(add ?? {}).map(([key, entry]) => `plugins.${key}=${JSON.stringify(entry)}`)
}

/** The options given (a key left undefined takes the default). */
function definedOf(options: ReloadOptions): ReloadOptions {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined))
}

/** The services a plugin and those it composes by name inject, each once. */
function injectsOf(plugin: Plugin, named: (name: string) => Plugin | undefined): string[] {
  const seen = new Set<Plugin>()
  const visit = (p: Plugin | undefined): string[] =>
    !p || seen.has(p) ? [] : (seen.add(p), [...p.inject, ...p.uses.flatMap((u) => visit(named(u)))])
  return [...new Set(visit(plugin))]
}

/** mtime and size of each file ('-' when it does not exist): cheap evidence of a change. */
function fingerprints(files: Iterable<string>): Map<string, string> {
  const prints = new Map<string, string>()
  for (const file of files) {
    try {
      const stat = statSync(file, { throwIfNoEntry: false, bigint: true })
      prints.set(file, stat ? `${stat.mtimeNs}:${stat.size}` : '-')
    } catch {
      prints.set(file, '-') // e.g. ENOTDIR: a parent is a file, so this file cannot exist
    }
  }
  return prints
}

/**
 * PLUGIN_WAITING for a call to `name`, which no tool answers, while instances of the config wait
 * (for trust, a variable; else a service): the tool may be one of theirs, and the fix is theirs.
 * Children that wait for a service by design (a gateway's helpers without a gateway) are not named.
 */
function waitingFor(name: string, fibers: readonly Fiber[]): YokeError | undefined {
  const configured = fibers.filter((f) => f.state === 'pending' && !f.key.startsWith('yoke:'))
  const waiting = configured.filter((f) => f.waiting)
  const named = waiting.length ? waiting : configured.filter((f) => !f.parent)
  if (!named.length) return undefined
  const first = named[0]!
  const why = first.waiting
    ? first.error!.message.replace(/^instance "[^"]*" is waiting: /, '')
    : 'it waits for a service it injects'
  return new YokeError('PLUGIN_WAITING', {
    instance: named.map((f) => f.key).join('", "'),
    reason: `no tool "${name}" is registered, and it may be theirs: ${why}`,
    what: first.waiting
      ? first.error!.hint.replace(/^It stays pending until what it waits for is there; |\.$/g, '')
      : 'run `yoke inspect` to see what it waits for',
  })
}
