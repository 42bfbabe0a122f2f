/**
 * One exec-tools instance as an object: its fields are its state (the roots, the packages read and
 * running, the holds, the queue of re-reads), its methods what it does. What to load is decided by
 * decide.ts's pure functions; this reads the packages, starts and stops their child instances
 * (package.ts), follows the watch and the skill filter, and answers the `execTools` service.
 */
import { join } from 'node:path'
import {
  bindToContext,
  defineHooks,
  messageOf,
  SyncHook,
  YokeError,
  type ChildHandle,
  type Disposer,
  type FiberInfo,
  type InjectedContext,
} from 'yoke'
import { defaultDirs } from '../skills/api.ts'
import type { ExecToolsApi, PackageInfo } from './api.ts'
import { classify, needsReading, restarts, type Gates, type ReadPackage } from './decide.ts'
import { changedIds } from './entries.ts'
import { PackageHolds } from './holds.ts'
import { loadPackage, type Package } from './load.ts'
import { packagePlugin } from './package.ts'
import { childrenOf, expandDir, packagesOf } from './roots.ts'

/** exec-tools' config, validated (index.ts holds the schema). */
export interface ExecToolsConfig {
  dirs?: string[]
  workDir: string
  maxStdoutBytes: number
  watch: boolean
  requireSigned: boolean
  network: boolean
}

type ExecContext = InjectedContext<['runtime', 'project']>

export class ExecTools {
  /** the configured package directories, highest priority first */
  readonly configured: string[]
  /** roots added through `addRoot` (an installer's), lowest priority, in the order added */
  readonly #added: Array<{ dir: string; source?: string }> = []
  /** where each package's work directory is made (`<workRoot>/<id>`) */
  readonly #workRoot: string
  /** the packages whose child instances run, by id */
  readonly #running = new Map<string, { pkg: Package; child: ChildHandle }>()
  /** list()'s entries as of the last reading */
  #infos: PackageInfo[] = []
  /** the re-reads, one after another: each waits for the one before */
  #queue = Promise.resolve()
  /** closed: the instance ends, nothing more is read or started */
  #closed = false
  readonly hooks = defineHooks('exec-tools', { change: new SyncHook<[ids: string[]]>(['ids']) })
  readonly #holds = new PackageHolds((id, held) => (held ? this.#unloadHeld(id) : this.enqueue([])))

  constructor(
    private readonly ctx: ExecContext,
    private readonly cfg: ExecToolsConfig,
  ) {
    const dirs = cfg.dirs ?? [...defaultDirs(ctx.project), join(ctx.project.home, 'packages')]
    this.configured = [...new Set(dirs.map((d) => this.#expand(d)))]
    this.#workRoot = this.#expand(cfg.workDir)
  }

  /** The first reading (after a skills instance that is starting now decides the filter), then the watch. */
  async start(): Promise<void> {
    // a skills instance already starting decides the first load; one that waits is followed
    await Promise.all(
      this.ctx
        .instances()
        .filter((f) => f.plugin.provides.includes('skillFilter') && f.state === 'loading')
        .map((f) => f.settled()),
    )
    await this.enqueue()
    if (this.cfg.watch)
      this.ctx.watch(this.configured, (changes) => this.enqueue(changes.map((c) => c.path)))
  }

  close(): void {
    this.#closed = true
  }

  get #ended(): boolean {
    return this.#closed || this.ctx.signal.aborted
  }

  #expand(dir: string): string {
    return expandDir(this.ctx.project.dir, dir)
  }

  get roots(): string[] {
    return [...this.configured, ...this.#added.map((a) => a.dir)]
  }

  /** Re-reads every package (or the ones under `touched`) after the re-reads before it. */
  enqueue(touched?: string[]): Promise<void> {
    this.#queue = this.#queue
      .then(() => this.#sync(touched))
      .catch((err) => this.ctx.logger.error(`re-reading packages failed: ${messageOf(err)}`, err))
    return this.#queue
  }

  /** The holds and the skill filter as they stand, as decide.ts asks them. */
  #gates(): Gates {
    // read now, not at apply: the skills instance may start (or restart) after this one
    const filter = this.ctx.get('skillFilter')
    return {
      held: (id) => this.#holds.has(id),
      why: (id) => this.#holds.why(id),
      ...(filter && { allows: (id: string) => filter.allows(id) }),
    }
  }

  /** Reads the packages, decides their states, stops the ones that changed or went, starts the rest. */
  async #sync(touched?: string[]): Promise<void> {
    if (this.#ended) return
    const gates = this.#gates()
    const read = await this.#read(touched)
    const before = this.#infos
    const { infos, next } = classify(read, gates)
    this.#infos = infos
    this.#report(infos)
    const running = () => new Map([...this.#running].map(([id, r]) => [id, r.pkg]))
    for (const id of restarts(running(), next, gates).stop) {
      const run = this.#running.get(id)!
      this.#running.delete(id)
      await run.child()
    }
    // a filter that arrived during the loads above decides too
    for (const id of restarts(running(), next, this.#gates()).start) {
      if (this.#ended) break
      this.#startPackage(next.get(id)!)
    }
    this.#announce(changedIds(before, infos))
  }

  /** Every package directory, highest-priority root first; a package that runs unchanged is not read again. */
  async #read(touched?: string[]): Promise<ReadPackage[]> {
    const scanned = [
      ...this.configured.flatMap((root) =>
        childrenOf(root).map((dir) => ({ dir, source: undefined })),
      ),
      ...this.#added.flatMap(({ dir, source }) => packagesOf(dir).map((d) => ({ dir: d, source }))),
    ]
    const seen = new Set<string>()
    const read: ReadPackage[] = []
    for (const { dir, source } of scanned) {
      if (seen.has(dir)) continue // an added root that is also a configured one
      seen.add(dir)
      const previous = [...this.#running.values()].find((r) => r.pkg.dir === dir)?.pkg
      const result = needsReading(dir, touched, Boolean(previous))
        ? await loadPackage(dir, this.cfg.requireSigned, { network: this.cfg.network })
        : previous!
      read.push({ dir, result, ...(source !== undefined && { source }) })
    }
    return read
  }

  /** The loaded packages' warnings, then every failed directory's errors, in the log. */
  #report(infos: PackageInfo[]): void {
    for (const i of infos.filter((i) => i.state === 'loaded'))
      for (const w of i.warnings)
        this.ctx.logger.warn(`package ${i.id}: ${w.file}:${w.line}:${w.col}: ${w.message}`)
    for (const failure of infos.filter((i) => i.state === 'failed'))
      for (const e of failure.errors)
        this.ctx.logger.error(
          `package ${failure.id} is not loaded`,
          new YokeError(
            e.code ?? 'MANIFEST_INVALID',
            { reason: e.message },
            { file: e.file, line: e.line, col: e.col },
          ),
        )
  }

  #startPackage(pkg: Package): void {
    const settings = { pkg, workRoot: this.#workRoot, maxStdoutBytes: this.cfg.maxStdoutBytes }
    const child = this.ctx.plugin(packagePlugin, settings, { key: pkg.manifest.id })
    this.#running.set(pkg.manifest.id, { pkg, child })
  }

  /** Stops a running package's child without waiting (a hold, the filter); a failure is logged. */
  #unload(id: string): void {
    const run = this.#running.get(id)
    if (!run) return
    this.#running.delete(id)
    Promise.resolve(run.child()).catch((err: unknown) =>
      this.ctx.logger.error(`package ${id}: unloading it failed: ${messageOf(err)}`, err),
    )
  }

  /** Tells the followers which packages' entries in list() changed (after the caller's turn). */
  #announce(ids: string[]): void {
    if (!ids.length) return
    queueMicrotask(() => {
      try {
        this.hooks.change.call([...new Set(ids)])
      } catch (err) {
        this.ctx.logger.error(`a follower of package changes failed: ${messageOf(err)}`, err)
      }
    })
  }

  /** A hold came or went while others stand: the package is unloaded, its entry says why. */
  #unloadHeld(id: string): void {
    if (this.#ended) return
    this.#infos = this.#infos.map((i) =>
      i.id === id && (i.state === 'loaded' || i.state === 'held')
        ? { ...i, state: 'held' as const, why: this.#holds.why(id) }
        : i,
    )
    this.#announce([id])
    this.#unload(id)
  }

  /** Holds a loaded (or held) package: see ExecToolsApi.hold. */
  hold(id: string, why: string): Disposer | undefined {
    const there = this.#infos.some(
      (i) => i.id === id && (i.state === 'loaded' || i.state === 'held'),
    )
    return there && !this.#ended ? this.#holds.add(id, why) : undefined
  }

  /** list()'s entries; a package whose child failed to apply shows as failed, with why. */
  list(): PackageInfo[] {
    return this.#infos.map((i) => {
      const fiber = i.state === 'loaded' ? this.#running.get(i.id)?.child.fiber : undefined
      if (fiber?.state !== 'failed') return i
      const message = fiber.error?.message ?? 'it failed to start'
      const at = { file: join(i.dir, 'manifest.json'), line: 1, col: 1, message }
      return { ...i, state: 'failed' as const, errors: [...i.errors, at] }
    })
  }

  /** One more root, lowest priority, watched like the others; the disposer unloads its packages. */
  addRoot(dir: string, options: { source?: string } = {}): () => void {
    const entry = {
      dir: this.#expand(dir),
      ...(options.source !== undefined && { source: options.source }),
    }
    this.#added.push(entry)
    const unwatch: Disposer | undefined = this.cfg.watch
      ? this.ctx.watch([entry.dir], (changes) => this.enqueue(changes.map((c) => c.path)))
      : undefined
    void this.enqueue([entry.dir])
    let removed = false
    return () => {
      if (removed) return
      removed = true
      this.#added.splice(this.#added.indexOf(entry), 1)
      void unwatch?.()
      if (!this.#ended) void this.enqueue([])
    }
  }

  /** The queue as it stands (and what was enqueued meanwhile), then the packages' starts. */
  async settled(): Promise<void> {
    for (let q = this.#queue; ; q = this.#queue) {
      await q
      if (q === this.#queue) break
    }
    await Promise.all([...this.#running.values()].map((r) => r.child.fiber?.settled()))
  }

  /**
   * The skill filter's provider came, went or failed: what the filter now leaves out is unloaded
   * at once (so the composition settles without it), then every package is read again.
   */
  followFilter(fiber: FiberInfo): void {
    if (this.#ended || !fiber.plugin.provides.includes('skillFilter')) return
    if (!['active', 'disposed', 'failed'].includes(fiber.state)) return
    const filter = this.ctx.get('skillFilter')
    for (const id of [...this.#running.keys()]) if (filter && !filter.allows(id)) this.#unload(id)
    void this.enqueue([])
  }

  /**
   * The `execTools` service: the host (tests, the CLI) gets plain disposers; through a consuming
   * instance's context, its roots and holds are that instance's effects (they go when it does).
   */
  service(): ExecToolsApi {
    const roots = () => this.roots
    const api: ExecToolsApi = {
      get roots() {
        return roots()
      },
      hooks: this.hooks,
      list: () => this.list(),
      addRoot: (dir, options) => this.addRoot(dir, options),
      hold: (id, why) => this.hold(id, why),
      settled: () => this.settled(),
    }
    const bound = (c: {
      effect: (label: string, fn: () => void | Promise<void>) => Disposer
    }): ExecToolsApi => ({
      get roots() {
        return roots()
      },
      hooks: this.hooks,
      list: api.list,
      settled: api.settled,
      addRoot: (dir, options) => {
        const dispose = c.effect(`package root ${dir}`, this.addRoot(dir, options))
        return () => void dispose()
      },
      hold: (id, why) => {
        const release = this.hold(id, why)
        return release && c.effect(`hold on package ${id}`, release)
      },
    })
    return Object.assign(Object.create(api) as ExecToolsApi, { [bindToContext]: bound })
  }
}
