/**
 * @module cli/discover
 * Finds the commands plugins contribute, without composing anything: a plugin's commands module
 * exports `commands` (a list of defineCommand objects). Where that module is:
 * - a built-in plugin, or a local plugin whose entry is a folder's index file: `commands.ts`
 *   (or .mts, .js, .mjs) in that folder;
 * - an npm package: the file `package.json#yoke.commands` names.
 * A commands module should be light: it imports what a command needs inside `run`.
 */
import { existsSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { BUILTIN_PLUGINS, builtinNames } from '../roots.ts'
import { loadTypeScript } from '../config/typescript.ts'
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
  const { readConfigText } = await import('../config/yaml.ts') // the defensive reader
  const found = await Promise.all(
    instances
      .filter((i) => i.enabled && i.file && !i.file.startsWith(BUILTIN_PLUGINS))
      .map((i) => {
        const module = commandsModuleOf(i.file!, cli.options.cwd, readConfigText)
        // importing it would run the project's code: not before the project is trusted
        const file = module && i.untrusted && commandsFile(module)
        if (file) warn(`instance "${i.key}"`, file, UNTRUSTED)
        return module && !i.untrusted ? commandsIn(module, `instance "${i.key}"`) : []
      }),
  )
  return found.flat()
}

type ReadText = (file: string) => string

function commandsModuleOf(entry: string, projectDir: string, read: ReadText): string | undefined {
  if (/^index\.(ts|mts|js|mjs)$/.test(basename(entry))) return join(dirname(entry), 'commands')
  if (existsSync(entry)) return undefined // a single-file local plugin has no commands module
  const manifest = packageJsonOf(entry, projectDir, read)
  if (!manifest) return undefined
  try {
    const named = JSON.parse(read(manifest))?.yoke?.commands
    return typeof named === 'string' ? join(dirname(manifest), named) : undefined
  } catch (err) {
    warn(`package ${entry}`, manifest, messageOf(err))
    return undefined
  }
}

/** A package's package.json: exported, or found above its resolved entry (when `exports` hides it). */
function packageJsonOf(name: string, projectDir: string, read: ReadText): string | undefined {
  const require = createRequire(join(projectDir, 'noop.js'))
  try {
    return require.resolve(`${name}/package.json`)
  } catch {
    try {
      for (let dir = dirname(require.resolve(name)); dir !== dirname(dir); dir = dirname(dir)) {
        const file = join(dir, 'package.json')
        if (isFile(file) && JSON.parse(read(file))?.name === name) return file
      }
    } catch {
      return undefined // not resolvable as CommonJS either: composing reports it
    }
    return undefined
  }
}

const isFile = (file: string) => statSync(file, { throwIfNoEntry: false })?.isFile() === true

/** A commands module gets this long to import: `yoke --help` never hangs on one. */
const IMPORT_MS = 5000

const UNTRUSTED =
  'not loaded: the project is not trusted yet (review its config, then `yoke trust`; --trust trusts one run)'

/** The commands module's file: a regular file only (a FIFO named commands.ts would hang the import). */
const commandsFile = (base: string) =>
  [base, ...EXTENSIONS.map((ext) => base + ext)].find((f) => /\.[cm]?[jt]s$/.test(f) && isFile(f))

/**
 * Imports `base` (with or without an extension) and reads its `commands` export. A module that
 * fails is that plugin's problem: it is reported, and every other command still works.
 */
async function commandsIn(base: string, owner: string): Promise<Contributed[]> {
  const file = commandsFile(base)
  if (!file) return []
  let timer: NodeJS.Timeout | undefined
  try {
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`it did not load within ${IMPORT_MS} ms`)),
        IMPORT_MS,
      )
    })
    if (!file.startsWith(BUILTIN_PLUGINS) && /\.[cm]?ts$/.test(file)) await loadTypeScript()
    // the plugin's error codes beside it (errors.ts), so a command's error is printed with its hint
    const errors = commandsFile(join(dirname(file), 'errors'))
    const [module] = await Promise.race([
      Promise.all([import(pathToFileURL(file).href), errors && import(pathToFileURL(errors).href)]),
      late,
    ])
    const list: unknown = module.commands ?? module.default
    if (!Array.isArray(list)) throw new Error('it exports no `commands` list')
    return list.flatMap((command, i) => {
      const problem = commandProblem(command)
      if (!problem) return [{ command: withDefaults(command as Command), owner }]
      const name =
        typeof (command as Command)?.name === 'string'
          ? `"${(command as Command).name}"`
          : `#${i + 1}`
      warn(owner, file, `entry ${name} is not a command: ${problem}`)
      return []
    })
  } catch (err) {
    warn(owner, file, messageOf(err))
    return []
  } finally {
    clearTimeout(timer)
  }
}

/** Why `value` is not a command, or undefined when it is one. */
function commandProblem(value: unknown): string | undefined {
  const c = value as Partial<Command> | null
  if (typeof c !== 'object' || c === null) return 'it is not an object'
  if (typeof c.name !== 'string' || !/^[a-z][a-z0-9-]*( [a-z][a-z0-9-]*)?$/.test(c.name))
    return 'its name is one or two lower-case words'
  if (typeof c.summary !== 'string' || !c.summary) return 'it has no summary'
  if (typeof c.run !== 'function') return 'it has no run function'
  if (c.usage !== undefined && typeof c.usage !== 'string') return 'usage is not a string'
  if (
    c.examples !== undefined &&
    !(Array.isArray(c.examples) && c.examples.every((e) => typeof e === 'string'))
  )
    return 'examples is not a list of strings'
  if (c.positionals !== undefined && !(Number.isInteger(c.positionals) && c.positionals >= 0))
    return 'positionals is not a whole number'
  if (c.flags !== undefined && (typeof c.flags !== 'object' || c.flags === null))
    return 'flags is not an object of parseArgs options'
  return undefined
}

function withDefaults(command: Command): Command {
  return command.usage ? command : { ...command, usage: `yoke ${command.name} [common flags]` }
}

function warn(owner: string, file: string, message: string) {
  process.stderr.write(`warning: the commands of ${owner} (${file}): ${message}\n`)
}
