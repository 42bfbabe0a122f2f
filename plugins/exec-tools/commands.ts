/**
 * @module exec-tools/commands
 * `yoke plugins list` (the packages of the exec-tools plugin: loaded, failed and why, shadowed,
 * filtered, held and why) and `yoke plugins check DIR` (a package, or a directory of packages: manifest,
 * executable, integrity, schemas, extras; exit 1 on errors).
 */
import { existsSync, readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { color, defineCommand, displayPath, printJson, YokeError } from 'yoke/cli'
import type { Composition } from 'yoke'
import type { PackageInfo } from './api.ts'
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
        // an instance that only waits (for `yoke trust`, a variable) says so, at its `use:` line
        if (!api && waiting[0]?.error) throw waiting[0].error
        if (!api)
          throw new YokeError('USAGE', {
            reason:
              'no exec-tools instance is running: add `packages: { use: exec-tools }` to the preset',
          })
        const packages = api.list()
        const why = waiting.map(({ what, reason }) => ({ what, reason }))
        if (args.json) printJson({ ok: true, roots: api.roots, packages, waiting: why })
        else {
          print(packages, args.cwd ?? process.cwd())
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
  const instances = [...composition.reconciler.running.values()].flatMap(({ spec, fiber }) =>
    spec.enabled &&
    spec.module?.plugin.name === 'exec-tools' &&
    fiber?.error?.code === 'PLUGIN_WAITING'
      ? [{ what: `instance "${spec.key}"`, reason: fiber.error.message, error: fiber.error }]
      : [],
  )
  const installs = (composition.get('installs')?.list() ?? [])
    .filter((s) => s.state === 'waiting' && s.entry.kind === 'exec-package')
    .map((s) => ({
      what: `install ${s.entry.name}`,
      reason: s.why ?? 'it waits',
      error: undefined,
    }))
  return [...instances, ...installs]
}

function print(packages: PackageInfo[], cwd: string) {
  if (!packages.length)
    process.stdout.write(
      color.dim(
        'no packages: put a directory with manifest.json in one of the package directories\n',
      ),
    )
  for (const p of packages) {
    const state =
      p.state === 'loaded'
        ? color.green('loaded')
        : p.state === 'failed'
          ? color.red('failed')
          : color.yellow(p.state)
    const extras = [
      p.extras.prompts && `${p.extras.prompts} prompt globs`,
      p.extras.mcpServers && `${p.extras.mcpServers} MCP servers`,
      p.extras.hooks && `${p.extras.hooks} hooks`,
    ].filter(Boolean)
    process.stdout.write(
      `${p.id}${p.version ? ` ${p.version}` : ''}  ${state}${p.signed ? color.dim(' · signed') : ''}\n  ${color.dim(`${displayPath(p.dir, cwd)}${p.source ? ` (from ${p.source})` : ''}`)}\n`,
    )
    if (p.state === 'held') process.stdout.write(`  held: ${p.why}\n`)
    if (p.tools.length) process.stdout.write(`  tools: ${p.tools.join(', ')}\n`)
    if (extras.length) process.stdout.write(`  extras: ${extras.join(', ')}\n`)
    for (const e of p.errors)
      process.stdout.write(
        `  ${color.red('error')} ${displayPath(e.file, cwd)}:${e.line}:${e.col}: ${e.message}\n`,
      )
  }
}

export const commands = [pluginsList, pluginsCheck]
