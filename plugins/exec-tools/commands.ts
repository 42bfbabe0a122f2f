/**
 * @module exec-tools/commands
 * `yoke plugins list` (the packages of the exec-tools plugin: loaded, failed and why, shadowed,
 * filtered, held and why; while an exec-tools instance waits — for `yoke trust`, a variable — its
 * packages read from their manifest.json files, nothing run, each marked as waiting) and `yoke plugins check DIR` (a package, or a directory of packages: manifest,
 * executable, integrity, schemas, extras; exit 1 on errors).
 */
import { existsSync, readdirSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { color, defineCommand, displayPath, messageOf, printJson, YokeError } from 'yoke/cli'
import type { Composition } from 'yoke'
import type { PackageInfo } from './api.ts'
import type { ManifestProblem } from './manifest.ts'
import { childrenOf, expandDir } from './roots.ts'
// exec-tools' error codes join the catalogue on the CLI path too (this module loads alone)
import './errors.ts'

const pluginsList = defineCommand({
  name: 'plugins list',
  summary:
    'plugin executable packages: loaded (tools, extras, integrity), failed and why, shadowed, filtered, held and why',
  usage: 'yoke plugins list [--json] [common flags]',
  examples: ['yoke plugins list --config config/yoke.yaml', 'yoke plugins list --json'],
  run: (args, _, cli) =>
    cli.compose(
      async (composition) => {
        const api = composition.get('execTools')
        const waiting = waitingOf(composition)
        // an instance that waits (for `yoke trust`, a variable) runs no package, but its packages
        // are listed from their manifests (reading one runs nothing), each marked as waiting
        const held = heldInstances(composition)
        if (!api && !held.length)
          throw new YokeError('USAGE', {
            reason:
              'no exec-tools instance is running: add `packages: { use: exec-tools }` to the preset',
          })
        const unloaded = held.length ? await waitingPackages(held, composition.project) : []
        const packages: Listed[] = [...(api?.list() ?? []), ...unloaded.flatMap((u) => u.packages)]
        const roots = [...new Set([...(api?.roots ?? []), ...unloaded.flatMap((u) => u.roots)])]
        const why = waiting.map(({ what, reason, trust }) => ({ what, reason, trust }))
        if (args.json) printJson({ ok: true, roots, packages, waiting: why })
        else {
          const cwd = args.cwd ?? process.cwd()
          print(packages, cwd, api ? [] : unloaded.flatMap((u) => u.roots))
          for (const w of why)
            process.stdout.write(`${w.what}  ${color.yellow('waits')}\n  ${w.reason}\n`)
        }
        return 0
      },
      { quiet: true },
    ),
})

const pluginsCheck = defineCommand({
  name: 'plugins check',
  summary:
    'check a package (or a directory of packages): manifest, executable, integrity, schemas; exit 1 on errors',
  usage: 'yoke plugins check DIR [--json] [common flags]',
  examples: ['yoke plugins check examples/packages', 'yoke plugins check ./my-package --json'],
  positionals: 1,
  async run(args, [dir]) {
    if (!dir)
      throw new YokeError('USAGE', {
        reason: 'yoke plugins check needs a package directory (or a directory of packages)',
      })
    const root = resolve(args.cwd ?? process.cwd(), dir)
    if (!existsSync(root))
      throw new YokeError('CONFIG_NOT_FOUND', { kind: 'directory', name: root })
    const dirs = existsSync(join(root, 'manifest.json'))
      ? [root]
      : readdirSync(root, { withFileTypes: true })
          .filter((e) => e.isDirectory() && existsSync(join(root, e.name, 'manifest.json')))
          .map((e) => join(root, e.name))
    // the loader brings the MCP client and the hook runner, the schema checks ajv: imported only
    // when a check runs (`yoke --help` imports this module)
    const { loadPackage } = await import('./package.ts')
    const { checkSchema, riskyPattern } = await import('yoke')
    const results = []
    for (const d of dirs) {
      const pkg = await loadPackage(d)
      const errors = 'errors' in pkg ? [...pkg.errors] : []
      const warnings = 'manifest' in pkg ? [...pkg.warnings] : []
      if ('manifest' in pkg) {
        const file = join(d, 'manifest.json')
        for (const tool of pkg.manifest.tools) {
          const problem = checkSchema(tool.inputSchema) ?? riskyPattern(tool.inputSchema)
          if (problem)
            errors.push({
              file,
              line: 1,
              col: 1,
              tool: tool.name,
              message: `tool ${tool.name}: ${problem}`,
            })
        }
        if (!pkg.manifest.sha256 && pkg.exe)
          warnings.push({
            file,
            line: 1,
            col: 1,
            message: `unsigned: add "sha256": "${pkg.exe.sha256}" to pin the executable`,
          })
      }
      results.push({
        dir: d,
        id: 'manifest' in pkg ? pkg.manifest.id : undefined,
        tools: 'manifest' in pkg ? pkg.manifest.tools.map((t) => t.name) : [],
        errors,
        warnings,
      })
    }
    const failed = results.some((r) => r.errors.length) || !results.length
    if (args.json) printJson({ ok: !failed, packages: results })
    else {
      if (!results.length)
        process.stdout.write(
          color.yellow(`no package (a directory with manifest.json) in ${root}\n`),
        )
      const cwd = args.cwd ?? process.cwd()
      for (const r of results) {
        process.stdout.write(
          `${r.errors.length ? color.red('✗') : color.green('✓')} ${r.id ?? displayPath(r.dir, cwd)}${r.tools.length ? color.dim(` · ${r.tools.join(', ')}`) : ''}\n`,
        )
        for (const e of r.errors)
          process.stdout.write(
            `  ${color.red('error')} ${displayPath(e.file, cwd)}:${e.line}:${e.col}: ${e.message}\n`,
          )
        for (const w of r.warnings)
          process.stdout.write(
            `  ${color.yellow('warning')} ${displayPath(w.file, cwd)}:${w.line}:${w.col}: ${w.message}\n`,
          )
      }
    }
    return failed ? 1 : 0
  },
})

/**
 * What would give packages but waits: exec-tools instances pending with PLUGIN_WAITING (a project
 * not trusted yet, an unset variable), and the project's installed packages that wait for trust.
 */
function waitingOf(composition: Composition) {
  const instances = heldInstances(composition).map(({ key, error, trust }) => ({
    what: `instance "${key}"`,
    reason: `${error.message}${error.location ? ` (at ${error.location})` : ''}`,
    trust,
  }))
  const installs = (composition.get('installs')?.list() ?? [])
    .filter((s) => s.state === 'waiting' && s.entry.kind === 'exec-package')
    .map((s) => ({ what: `install ${s.entry.name}`, reason: s.why ?? 'it waits', trust: true }))
  return [...instances, ...installs]
}

/** An exec-tools instance that waits with PLUGIN_WAITING, with the config it would run with. */
interface HeldInstance {
  key: string
  /** its fix is `yoke trust` (the words src/config/trust.ts gives its hint) */
  trust: boolean
  error: YokeError
  config: unknown
}

function heldInstances(composition: Composition): HeldInstance[] {
  return [...composition.reconciler.running.values()].flatMap(({ spec, fiber }) =>
    spec.enabled &&
    spec.module?.plugin.name === 'exec-tools' &&
    fiber?.state === 'pending' &&
    fiber.error?.code === 'PLUGIN_WAITING'
      ? [
          {
            key: spec.key,
            trust: spec.untrusted === true || fiber.error.hint.includes('`yoke trust`'),
            error: fiber.error,
            // a variable not set leaves the config unvalidated: read what is there
            config: spec.config ?? spec.raw,
          },
        ]
      : [],
  )
}

/** A package of a waiting instance, read from its manifest.json only (nothing of it runs). */
interface WaitingPackage {
  id: string
  dir: string
  /** the exec-tools instance whose directories hold it */
  instance: string
  /** waiting: it loads when its instance starts; failed: its manifest is unusable; shadowed: a package with the same id in a higher directory comes first */
  state: 'waiting' | 'failed' | 'shadowed'
  /** why it does not run: `waits for trust`, the instance's other wait, the shadowing directory */
  why: string
  version?: string
  tools: string[]
  signed: boolean
  extras: { prompts: number; mcpServers: number; hooks: number }
  errors: ManifestProblem[]
  warnings: ManifestProblem[]
}

type Listed = PackageInfo | WaitingPackage

/**
 * The packages of each waiting instance: its package directories found as exec-tools finds them
 * (`dirs`, else the skills directories then $YOKE_HOME/packages; `~/` and relative paths
 * expanded), each child folder with a manifest.json read and parsed, never loaded.
 */
async function waitingPackages(held: HeldInstance[], project: { dir: string; home: string }) {
  // the parser brings yaml and zod: imported only when listing (`yoke --help` imports this module)
  const { parseManifest, readManifestText } = await import('./manifest.ts')
  const { defaultDirs } = await import('../skills/api.ts')
  return held.map((instance) => {
    const config = instance.config as { dirs?: unknown } | undefined
    const dirs =
      Array.isArray(config?.dirs) && config.dirs.every((d) => typeof d === 'string' && d)
        ? (config.dirs as string[])
        : [...defaultDirs(project), join(project.home, 'packages')]
    const roots = [...new Set(dirs.map((d) => expandDir(project.dir, d)))]
    const seen = new Map<string, string>()
    const packages: WaitingPackage[] = []
    const waits = instance.trust ? 'waits for trust' : `waits: ${instance.error.message}`
    for (const dir of new Set(roots.flatMap(childrenOf))) {
      const file = join(dir, 'manifest.json')
      let parsed: ReturnType<typeof parseManifest>
      try {
        parsed = parseManifest(readManifestText(file), file)
      } catch (err) {
        const message = `cannot read manifest.json: ${messageOf(err)}`
        parsed = { errors: [{ file, line: 1, col: 1, message }], warnings: [] }
      }
      const m = parsed.manifest
      const id = m?.id ?? basename(dir)
      const first = m ? seen.get(id) : undefined
      if (m && !first) seen.set(id, dir)
      packages.push({
        id,
        dir,
        instance: instance.key,
        state: !m ? 'failed' : first ? 'shadowed' : 'waiting',
        why: !m ? 'its manifest is unusable' : first ? `shadowed by ${first}` : waits,
        version: m?.version,
        tools: m?.tools.map((t) => t.name) ?? [],
        signed: Boolean(m?.sha256),
        extras: {
          prompts: m?.promptsInclude.length ?? 0,
          mcpServers: m?.mcpServers.length ?? 0,
          hooks: m?.hooks.length ?? 0,
        },
        errors: parsed.errors,
        warnings: parsed.warnings,
      })
    }
    return { instance: instance.key, roots, packages }
  })
}

function print(packages: Listed[], cwd: string, waitingRoots: string[]) {
  if (!packages.length)
    process.stdout.write(
      color.dim(
        waitingRoots.length
          ? `no packages in the package directories of the instance that waits: ${waitingRoots.map((r) => displayPath(r, cwd)).join(', ')}\n`
          : 'no packages: put a directory with manifest.json in one of the package directories\n',
      ),
    )
  for (const p of packages) {
    const waits = 'instance' in p
    const state =
      p.state === 'loaded'
        ? color.green('loaded')
        : p.state === 'failed'
          ? color.red('failed')
          : waits && p.state === 'waiting'
            ? color.yellow(p.why)
            : color.yellow(p.state)
    const extras = [
      p.extras.prompts && `${p.extras.prompts} prompt globs`,
      p.extras.mcpServers && `${p.extras.mcpServers} MCP servers`,
      p.extras.hooks && `${p.extras.hooks} hooks`,
    ].filter(Boolean)
    const from = waits ? ` (instance "${p.instance}")` : p.source ? ` (from ${p.source})` : ''
    process.stdout.write(
      `${p.id}${p.version ? ` ${p.version}` : ''}  ${state}${p.signed ? color.dim(' · signed') : ''}\n  ${color.dim(`${displayPath(p.dir, cwd)}${from}`)}\n`,
    )
    if ((p.state === 'held' || p.state === 'shadowed') && p.why)
      process.stdout.write(`  ${p.state}: ${p.why}\n`)
    if (p.tools.length) process.stdout.write(`  tools: ${p.tools.join(', ')}\n`)
    if (extras.length) process.stdout.write(`  extras: ${extras.join(', ')}\n`)
    for (const e of p.errors)
      process.stdout.write(
        `  ${color.red('error')} ${displayPath(e.file, cwd)}:${e.line}:${e.col}: ${e.message}\n`,
      )
  }
}

export const commands = [pluginsList, pluginsCheck]
