/**
 * @module repository/commands
 * `yoke repository list` and `yoke repository export NAME[@N]`: dynamic plugins live in the process
 * whose session defined them, so both ask the running `yoke dev`. Export is the one way a dynamic
 * plugin outlives it: it writes the version into the project (never over a file, unless --force)
 * and prints the config entry to add, for the user to review; no config file is edited.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { defineCommand, printJson, YokeError } from 'yoke/cli'
import { stoppedBy } from './references.ts'
import './errors.ts'

const noDev = (name: string) =>
  new YokeError('REPOSITORY_EXPORT_FAILED', {
    name,
    reason:
      'no yoke dev answers in this project; a dynamic plugin lives only in the process that defined it',
  })

const list = defineCommand({
  name: 'repository list',
  summary: "the running yoke dev's dynamic plugins, by session: versions, state, tools",
  usage: 'yoke repository list [--json] [common flags]',
  examples: ['yoke repository list', 'yoke repository list --json'],
  async run(_args, _positionals, cli) {
    const plugins = await cli.live('repository/list')
    if (!plugins) {
      // nothing to list is not a failure: dynamic plugins live only in the process that defined them
      if (cli.json) printJson({ ok: true, live: false, plugins: [] })
      else process.stdout.write('no yoke dev answers in this project, so no dynamic plugins\n')
      return 0
    }
    if (cli.json) printJson({ ok: true, plugins })
    else if (!plugins.length) process.stdout.write('no dynamic plugins\n')
    else
      for (const p of plugins)
        process.stdout.write(
          `${p.name}  ${p.state}${p.current ? ` @${p.current}` : ''}${stoppedBy(p)}  session ${p.session}  ${p.versions.map((v) => `${v.id} ${v.hash.slice(0, 19)}`).join(', ')}\n  ${p.purpose}\n`,
        )
    return 0
  },
})

const exportCommand = defineCommand({
  name: 'repository export',
  summary:
    'write a dynamic plugin version of the running yoke dev into the project, to review and add',
  usage: 'yoke repository export NAME[@N] [--session KEY] [--out FILE] [--force] [common flags]',
  examples: [
    'yoke repository export greeter',
    'yoke repository export greeter@2 --out plugins/greeter.mjs',
  ],
  positionals: 1,
  flags: {
    session: {
      type: 'string',
      value: 'KEY',
      description: 'the session, when several have one of this name',
    },
    out: {
      type: 'string',
      value: 'FILE',
      description: 'where to write it (default plugins/NAME.mjs|.ts, or NAME.patch.yaml)',
    },
    force: { type: 'boolean', description: 'write over an existing file' },
  },
  async run(args, [spec], cli) {
    const match = /^([a-z][a-z0-9-]{0,31})(?:@(\d+))?$/.exec(spec ?? '')
    if (!match)
      throw new YokeError('USAGE', {
        reason: 'yoke repository export takes NAME or NAME@VERSION, e.g. greeter@2',
      })
    const [, name, wanted] = match as unknown as [string, string, string | undefined]
    const found = await cli.live('repository/source', {
      name,
      ...(typeof args.session === 'string' && args.session ? { session: args.session } : {}),
    })
    if (!found) throw noDev(name)
    if (found.length !== 1)
      throw new YokeError('REPOSITORY_EXPORT_FAILED', {
        name,
        reason: found.length
          ? `sessions ${found.map((p) => p.session).join(', ')} each have one: choose with --session`
          : 'the running yoke dev has no dynamic plugin of that name',
      })
    const plugin = found[0]!
    const n = wanted ? Number(wanted) : (plugin.current ?? plugin.versions.length)
    const version = plugin.versions[n - 1]
    if (!version)
      throw new YokeError('REPOSITORY_EXPORT_FAILED', {
        name,
        reason: `it has versions 1 to ${plugin.versions.length}`,
      })
    const project = await cli.projectDir()
    const ext =
      version.kind === 'fragment'
        ? '.patch.yaml'
        : version.language === 'typescript'
          ? '.ts'
          : '.mjs'
    const file = resolve(
      cli.cwd,
      (args.out as string | undefined) ??
        (version.kind === 'fragment' ? `${name}${ext}` : join('plugins', `${name}${ext}`)),
    )
    if (existsSync(file) && !args.force)
      throw new YokeError('REPOSITORY_EXPORT_FAILED', {
        name,
        reason: `${relative(cli.cwd, file)} exists (--force writes over it)`,
      })
    const comment = version.kind === 'fragment' ? '#' : '//'
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(
      file,
      `${comment} ${version.id} (${version.hash}): ${version.purpose}\n${comment} exported by yoke repository export; review it before you add it to the config\n${version.source}`,
    )
    const use = `./${relative(project, file)}`
    const entry =
      version.kind === 'fragment'
        ? `yoke dev --patch ${relative(cli.cwd, file)}   # or merge its plugins: into your project config`
        : `plugins:\n  ${name}:\n    use: ${use}\n${version.config && Object.keys(version.config).length ? `    config: ${JSON.stringify(version.config)}\n` : ''}`
    if (cli.json) printJson({ ok: true, file, id: version.id, hash: version.hash, entry })
    else
      process.stdout.write(
        `wrote ${relative(cli.cwd, file)} (${version.id})\n${version.kind === 'module' && /\bconfig\s*:/.test(version.source) ? 'its config schema is JSON Schema: wrap it in zod (or another Standard Schema) before yoke loads it as a project plugin\n' : ''}to use it, add:\n${entry}\n`,
      )
    return 0
  },
})

export const commands = [list, exportCommand]
