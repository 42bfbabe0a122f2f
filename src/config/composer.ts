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
  #queue: Promise<unknown> = Promise.resolve()
  #next?: Promise<ReloadEvent>
  #triggers = new Set<string>()
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

  /** Re-reads every layer and moves the running instances to it; concurrent calls coalesce. */
  reload(trigger: string[] = []): Promise<ReloadEvent> {
    if (this.#closed) return Promise.reject(new Error('this composition is closed'))
    for (const file of trigger) this.#triggers.add(file)
    this.#next ??= this.#enqueue(() => {
      this.#next = undefined
      const files = [...this.#triggers]
      this.#triggers.clear()
      return this.#run('reload', files)
    })
    return this.#next
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

  async #run(type: ReloadEvent['type'], trigger: string[]): Promise<ReloadEvent> {
    let report: ReloadReport
    const before = fingerprints(this.#watched)
    const debug = (message: string) =>
      this.kernel.log({ level: 'debug', message: `${type}: ${message}` })
    try {
      debug('resolving the config')
      const candidate = await resolveConfig(this.options, this.loader)
      this.candidate = candidate
      this.project.dir = candidate.stack.projectDir
      this.#trust.read(candidate.stack)
      debug(`applying (${candidate.errors.length} config errors)`)
      await this.kernel.whenSettled(this.#core, 10_000) // the core runtime is up before instances apply
      this.#explainMissing()
      if (!candidate.errors.length) this.runtime?.configure(candidate.runtime)
      report = await this.reconciler.apply(candidate)
      if (report.ok) this.current = candidate
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
      report = {
        ok: false,
        added: [],
        removed: [],
        restarted: [],
        unchanged: [],
        failed: [],
        errors: [error],
        durationMs: 0,
      }
    }
    const event: ReloadEvent = { type, trigger, ...report }
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
