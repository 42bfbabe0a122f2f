/**
 * @module cli/discover
 * Finds the commands plugins contribute, without composing anything: a plugin's commands module
 * exports `commands` (a list of defineCommand objects). Where that module is:
 * - a built-in plugin, or a local plugin whose entry is a folder's index file: `commands.ts`
 *   (or .mts, .js, .mjs) in that folder;
 * - an npm package: the file `package.json#yoke.commands` names.
 * A commands module should be light: it imports what a command needs inside `run`.
 */
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { BUILTIN_PLUGINS, builtinNames } from '../config/modules.ts'
import { messageOf } from '../errors.ts'
import type { Command, CommandContext } from './command.ts'

export interface Contributed {
  command: Command
  /** who contributes it: a built-in plugin's name, or the instance key that configures it */
  owner: string
}

const EXTENSIONS = ['.ts', '.mts', '.js', '.mjs']

/** The commands every built-in plugin contributes, in name order. */
export async function builtinCommands(): Promise<Contributed[]> {
  const found = await Promise.all(
    builtinNames().map((name) => commandsIn(join(BUILTIN_PLUGINS, name, 'commands'), name)),
  )
  return found.flat()
}

/** The commands of the project's configured plugins (local folders and npm packages). */
export async function projectCommands(cli: CommandContext): Promise<Contributed[]> {
  let instances: Awaited<ReturnType<CommandContext['instances']>>
  try {
    instances = await cli.instances()
  } catch {
    return [] // a config that does not load is reported by the command that composes it
  }
  const found = await Promise.all(
    instances
      .filter((i) => i.enabled && i.file && !i.file.startsWith(BUILTIN_PLUGINS))
      .map((i) => {
        const module = commandsModuleOf(i.file!, cli.options.cwd)
        return module ? commandsIn(module, `instance "${i.key}"`) : []
      }),
  )
  return found.flat()
}

function commandsModuleOf(entry: string, projectDir: string): string | undefined {
  if (/^index\.(ts|mts|js|mjs)$/.test(basename(entry))) return join(dirname(entry), 'commands')
  if (existsSync(entry)) return undefined // a single-file local plugin has no commands module
  try {
    const manifest = createRequire(join(projectDir, 'noop.js')).resolve(`${entry}/package.json`)
    const named = JSON.parse(readFileSync(manifest, 'utf8'))?.yoke?.commands
    return typeof named === 'string' ? join(dirname(manifest), named) : undefined
  } catch {
    return undefined // a package that does not export its package.json declares no commands
  }
}

/**
 * Imports `base` (with or without an extension) and reads its `commands` export. A module that
 * fails is that plugin's problem: it is reported, and every other command still works.
 */
async function commandsIn(base: string, owner: string): Promise<Contributed[]> {
  const file = [base, ...EXTENSIONS.map((ext) => base + ext)].find(
    (f) => existsSync(f) && /\.[cm]?[jt]s$/.test(f),
  )
  if (!file) return []
  try {
    const module = await import(pathToFileURL(file).href)
    const list: unknown = module.commands ?? module.default
    if (!Array.isArray(list)) throw new Error('it exports no `commands` list')
    return list.flatMap((command) => {
      if (isCommand(command)) return [{ command, owner }]
      warn(owner, file, `an entry is not a command (it needs name, summary and run)`)
      return []
    })
  } catch (err) {
    warn(owner, file, messageOf(err))
    return []
  }
}

function isCommand(value: unknown): value is Command {
  const c = value as Partial<Command> | null
  return (
    typeof c?.name === 'string' &&
    /^[a-z][a-z0-9-]*( [a-z][a-z0-9-]*)?$/.test(c.name) &&
    typeof c.summary === 'string' &&
    typeof c.run === 'function'
  )
}

function warn(owner: string, file: string, message: string) {
  process.stderr.write(`warning: the commands of ${owner} (${file}): ${message}\n`)
}
