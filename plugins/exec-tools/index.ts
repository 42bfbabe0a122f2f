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
import { definePlugin, YokeError, type ChildHandle } from 'yoke'
import { defaultDirs } from '../skills/api.ts'
import type { PackageInfo } from './api.ts'
import type { ManifestProblem } from './manifest.ts'
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
  })
  .strict()

export default definePlugin({
  name: 'exec-tools',
  inject: ['runtime', 'project'],
  provides: ['execTools'],
  config,
  async apply(ctx, cfg) {
    const expand = (d: string) =>
      resolve(ctx.project.dir, d.startsWith('~/') ? join(homedir(), d.slice(2)) : d)
    const roots = [
      ...new Set(
        (cfg.dirs ?? [...defaultDirs(ctx.project), join(ctx.project.home, 'packages')]).map(expand),
      ),
    ]
    const workRoot = expand(cfg.workDir)
    const running = new Map<string, { pkg: Package; child: ChildHandle }>()
    let infos: PackageInfo[] = []
    let queue = Promise.resolve()

    /** Every package directory, highest-priority root first. */
    const scan = () =>
      roots.flatMap((root) =>
        existsSync(root)
          ? readdirSync(root, { withFileTypes: true })
              .filter((e) => e.isDirectory() && existsSync(join(root, e.name, 'manifest.json')))
              .map((e) => join(root, e.name))
          : [],
      )

    /** Re-reads every package (or the ones under `touched`) and restarts those that changed. */
    async function sync(touched?: string[]) {
      const filter = ctx.get('skillFilter')
      const loaded = new Map<string, Package | PackageFailure>()
      for (const dir of scan()) {
        const previous = [...running.values()].find((r) => r.pkg.dir === dir)?.pkg
        const stale =
          !touched || touched.some((p) => p === dir || p.startsWith(dir + sep)) || !previous
        loaded.set(dir, stale ? await loadPackage(dir, cfg.requireSigned) : previous!)
      }
      const next = new Map<string, Package>()
      infos = []
      for (const [dir, result] of loaded) {
        if (!('manifest' in result)) {
          infos.push(info(basename(dir), dir, 'failed', undefined, result.errors))
          continue
        }
        const { id } = result.manifest
        const state = next.has(id)
          ? 'shadowed'
          : filter && !filter.allows(id)
            ? 'filtered'
            : 'loaded'
        infos.push(info(id, dir, state, result, []))
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
      for (const [id, pkg] of next) {
        if (running.has(id) || ctx.signal.aborted) continue
        running.set(id, {
          pkg,
          child: ctx.plugin(
            packagePlugin,
            { pkg, workRoot, maxStdoutBytes: cfg.maxStdoutBytes },
            { key: id },
          ),
        })
      }
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
    ctx.provide('execTools', { roots, list })
    await (queue = sync())
    if (cfg.watch) {
      ctx.watch(roots, (changes) => {
        const touched = changes.map((c) => c.path)
        queue = queue
          .then(() => sync(touched))
          .catch((err) =>
            ctx.logger.error(`re-reading packages failed: ${(err as Error).message}`, err),
          )
        return queue
      })
    }
  },
})

function info(
  id: string,
  dir: string,
  state: PackageInfo['state'],
  pkg: Package | undefined,
  errors: ManifestProblem[],
): PackageInfo {
  const m = pkg?.manifest
  return {
    id,
    dir,
    state,
    version: m?.version,
    tools: m?.tools.map((t) => t.name) ?? [],
    executable: pkg?.exe?.path,
    sha256: pkg?.exe?.sha256,
    signed: Boolean(m?.sha256),
    extras: {
      prompts: m?.promptsInclude.length ?? 0,
      mcpServers: m?.mcpServers.length ?? 0,
      hooks: m?.hooks.length ?? 0,
    },
    errors,
    warnings: pkg?.warnings ?? [],
  }
}
