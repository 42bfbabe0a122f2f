/**
 * exec-tools: plugin executables (octos's protocol, hardened) from layered package directories.
 * A package is a directory with manifest.json; each runs as a child instance (its tools, prompt
 * files, MCP servers and shell hooks), so an edit to one package, or a replaced executable,
 * restarts that package only. Packages obey the skill filter, like the skills they sit beside.
 */
import { existsSync, readdirSync } from 'node:fs'
import { homedir } from 'node:os'
import { basename, join, resolve, sep } from 'node:path'
import { z } from 'zod'
import {
  bindToContext,
  defineHooks,
  definePlugin,
  SyncHook,
  YokeError,
  type ChildHandle,
  type Disposer,
} from 'yoke'
import { defaultDirs } from '../skills/api.ts'
import type { ExecToolsApi, PackageInfo } from './api.ts'
import { PackageHolds } from './holds.ts'
import { changedIds, info } from './entries.ts'
import { loadPackage, type Package, type PackageFailure } from './load.ts'
import { packagePlugin } from './package.ts'
import './errors.ts'

export type * from './api.ts'
export { loadPackage, promptFiles, type Package, type PackageFailure } from './load.ts'

const config = z
  .object({
    /** package directories, highest priority first; default: the skills directories, then $YOKE_HOME/packages */
    dirs: z.array(z.string().min(1)).optional(),
    /** each package's work directory is <workDir>/<id> (relative: to the project) */
    workDir: z.string().min(1).default('.yoke/work'),
    /** a tool that writes more than this to stdout is stopped */
    maxStdoutBytes: z
      .number()
      .int()
      .positive()
      .default(16 * 1024 * 1024),
    watch: z.boolean().default(true),
    /** only packages whose manifest pins the executable's sha256 load; extras-only packages (nothing to pin) are refused */
    requireSigned: z.boolean().default(false),
    /** false: this composition runs without network, so packages with `requires_network: true` are refused */
    network: z.boolean().default(true),
  })
  .strict()

export default definePlugin({
  name: 'exec-tools',
  inject: ['runtime', 'project'],
  provides: ['execTools'],
  config,
  runsProjectCode: true, // its packages' executables: from a project's config, after `yoke trust`
  async apply(ctx, cfg) {
    const expand = (d: string) =>
      resolve(ctx.project.dir, d.startsWith('~/') ? join(homedir(), d.slice(2)) : d)
    const configured = [
      ...new Set(
        (cfg.dirs ?? [...defaultDirs(ctx.project), join(ctx.project.home, 'packages')]).map(expand),
      ),
    ]
    /** roots added through `addRoot` (an installer's), lowest priority, in the order added */
    const added: Array<{ dir: string; source?: string }> = []
    const workRoot = expand(cfg.workDir)
    const running = new Map<string, { pkg: Package; child: ChildHandle }>()
    let infos: PackageInfo[] = []
    let queue = Promise.resolve()
    const hooks = defineHooks('exec-tools', { change: new SyncHook<[ids: string[]]>(['ids']) })
    /** Tells the followers which packages' entries in list() changed (after the caller's turn). */
    const announce = (ids: string[]) => {
      if (ids.length)
        queueMicrotask(() => {
          try {
            hooks.change.call([...new Set(ids)])
          } catch (err) {
            ctx.logger.error(`a follower of package changes failed: ${(err as Error).message}`, err)
          }
        })
    }
    const holds = new PackageHolds((id, held) => (held ? unloadHeld(id) : enqueue([])))
    const enqueue = (touched?: string[]) => {
      queue = queue
        .then(() => sync(touched))
        .catch((err) =>
          ctx.logger.error(`re-reading packages failed: ${(err as Error).message}`, err),
        )
      return queue
    }

    /** The package folders in a folder of packages. */
    const childrenOf = (root: string) => {
      try {
        return readdirSync(root, { withFileTypes: true })
          .filter((e) => e.isDirectory() && existsSync(join(root, e.name, 'manifest.json')))
          .map((e) => join(root, e.name))
      } catch {
        return [] // missing, a file (ENOTDIR) or unreadable: it holds no packages, the others load
      }
    }
    /** Every package directory, highest-priority root first, with the source of an added root. */
    const scan = () => [
      ...configured.flatMap((root) => childrenOf(root).map((dir) => ({ dir, source: undefined }))),
      // an added root may also be one package folder
      ...added.flatMap(({ dir: root, source }) =>
        (existsSync(join(root, 'manifest.json')) ? [root] : childrenOf(root)).map((dir) => ({
          dir,
          source,
        })),
      ),
    ]

    /** Re-reads every package (or the ones under `touched`) and restarts those that changed. */
    async function sync(touched?: string[]) {
      if (ctx.signal.aborted) return
      // read now, not at apply: the skills instance may start (or restart) after this one
      const filter = ctx.get('skillFilter')
      const loaded = new Map<string, Package | PackageFailure>()
      const sources = new Map<string, string | undefined>()
      for (const { dir, source } of scan()) {
        if (loaded.has(dir)) continue // an added root that is also a configured one
        sources.set(dir, source)
        const previous = [...running.values()].find((r) => r.pkg.dir === dir)?.pkg
        const stale =
          !touched || touched.some((p) => p === dir || p.startsWith(dir + sep)) || !previous
        loaded.set(
          dir,
          stale ? await loadPackage(dir, cfg.requireSigned, { network: cfg.network }) : previous!,
        )
      }
      const next = new Map<string, Package>()
      const before = infos
      const claimed = new Set<string>()
      infos = []
      for (const [dir, result] of loaded) {
        const source = sources.get(dir)
        if (!('manifest' in result)) {
          infos.push(info(basename(dir), dir, 'failed', undefined, result.errors, source))
          continue
        }
        const { id } = result.manifest
        // a held package keeps its identity in list(), whatever the filter says
        const state = claimed.has(id)
          ? 'shadowed'
          : holds.has(id)
            ? 'held'
            : filter && !filter.allows(id)
              ? 'filtered'
              : 'loaded'
        claimed.add(id)
        infos.push({
          ...info(id, dir, state, result, [], source),
          ...(state === 'held' && { why: holds.why(id) }),
        })
        if (state === 'loaded') next.set(id, result)
        if (state === 'loaded')
          for (const w of result.warnings)
            ctx.logger.warn(`package ${id}: ${w.file}:${w.line}:${w.col}: ${w.message}`)
      }
      for (const failure of infos.filter((i) => i.state === 'failed')) {
        for (const e of failure.errors)
          ctx.logger.error(
            `package ${failure.id} is not loaded`,
            new YokeError(
              e.code ?? 'MANIFEST_INVALID',
              { reason: e.message },
              { file: e.file, line: e.line, col: e.col },
            ),
          )
      }
      for (const [id, { pkg, child }] of running) {
        if (next.get(id)?.fingerprint === pkg.fingerprint && next.get(id)?.dir === pkg.dir) continue
        running.delete(id)
        await child()
      }
      const filterNow = ctx.get('skillFilter') // a filter that arrived during the loads above
      for (const [id, pkg] of next) {
        if (running.has(id) || ctx.signal.aborted || holds.has(id)) continue
        if (filterNow && !filterNow.allows(id)) continue
        running.set(id, {
          pkg,
          child: ctx.plugin(
            packagePlugin,
            { pkg, workRoot, maxStdoutBytes: cfg.maxStdoutBytes },
            { key: id },
          ),
        })
      }
      announce(changedIds(before, infos))
    }

    /** A hold came or went while others stand: the package is unloaded, its entry says why. */
    function unloadHeld(id: string) {
      if (ctx.signal.aborted) return
      infos = infos.map((i) =>
        i.id === id && (i.state === 'loaded' || i.state === 'held')
          ? { ...i, state: 'held' as const, why: holds.why(id) }
          : i,
      )
      announce([id])
      const run = running.get(id)
      if (!run) return
      running.delete(id)
      Promise.resolve(run.child()).catch((err: unknown) =>
        ctx.logger.error(`package ${id}: unloading it failed: ${(err as Error).message}`, err),
      )
    }

    /** Holds a loaded (or held) package: see ExecToolsApi.hold. */
    function hold(id: string, why: string): Disposer | undefined {
      const there = infos.some((i) => i.id === id && (i.state === 'loaded' || i.state === 'held'))
      return there && !ctx.signal.aborted ? holds.add(id, why) : undefined
    }

    // a package whose child failed to apply shows as failed, with why
    const list = () =>
      infos.map((i) => {
        const fiber = i.state === 'loaded' ? running.get(i.id)?.child.fiber : undefined
        return fiber?.state === 'failed'
          ? {
              ...i,
              state: 'failed' as const,
              errors: [
                ...i.errors,
                {
                  file: join(i.dir, 'manifest.json'),
                  line: 1,
                  col: 1,
                  message: fiber.error?.message ?? 'it failed to start',
                },
              ],
            }
          : i
      })
    /** One more root, lowest priority, watched like the others; the disposer unloads its packages. */
    function addRoot(dir: string, options: { source?: string } = {}): () => void {
      const entry = {
        dir: expand(dir),
        ...(options.source !== undefined && { source: options.source }),
      }
      added.push(entry)
      const unwatch: Disposer | undefined = cfg.watch
        ? ctx.watch([entry.dir], (changes) => enqueue(changes.map((c) => c.path)))
        : undefined
      void enqueue([entry.dir])
      let removed = false
      return () => {
        if (removed) return
        removed = true
        added.splice(added.indexOf(entry), 1)
        void unwatch?.()
        if (!ctx.signal.aborted) void enqueue([])
      }
    }

    /** The queue as it stands (and what was enqueued meanwhile), then the packages' starts. */
    async function settled(): Promise<void> {
      for (let q = queue; ; q = queue) {
        await q
        if (q === queue) break
      }
      await Promise.all([...running.values()].map((r) => r.child.fiber?.settled()))
    }

    const api: ExecToolsApi = {
      get roots() {
        return [...configured, ...added.map((a) => a.dir)]
      },
      hooks,
      list,
      addRoot,
      hold,
      settled,
    }
    // the host (tests, the CLI) gets plain disposers; a consuming instance's roots are its effects
    ctx.provide(
      'execTools',
      Object.assign(Object.create(api) as ExecToolsApi, {
        [bindToContext]: (c: {
          effect: (label: string, fn: () => void | Promise<void>) => Disposer
        }) => ({
          get roots() {
            return api.roots
          },
          hooks,
          list,
          settled,
          addRoot(dir: string, options?: { source?: string }) {
            const dispose = c.effect(`package root ${dir}`, addRoot(dir, options))
            return () => void dispose()
          },
          // a consumer's holds go when it does
          hold(id: string, why: string) {
            const release = hold(id, why)
            return release && c.effect(`hold on package ${id}`, release)
          },
        }),
      }),
    )
    // the skill filter decides which packages load: follow its provider's comings and goings. A
    // filter that arrives unloads what it leaves out at once, so the composition settles without it
    ctx.tap(ctx.hooks.state, `${ctx.key}: skill filter`, (fiber) => {
      if (ctx.signal.aborted || !fiber.plugin.provides.includes('skillFilter')) return
      if (!['active', 'disposed', 'failed'].includes(fiber.state)) return
      const filter = ctx.get('skillFilter')
      for (const [id, { child }] of running)
        if (filter && !filter.allows(id)) {
          running.delete(id)
          Promise.resolve(child()).catch((err: unknown) =>
            ctx.logger.error(`package ${id}: unloading it failed: ${(err as Error).message}`, err),
          )
        }
      void enqueue([])
    })
    // a skills instance already starting decides the first load; one that waits is followed above
    await Promise.all(
      ctx
        .instances()
        .filter((f) => f.plugin.provides.includes('skillFilter') && f.state === 'loading')
        .map((f) => f.settled()),
    )
    await enqueue()
    if (cfg.watch) ctx.watch(configured, (changes) => enqueue(changes.map((c) => c.path)))
  },
})
