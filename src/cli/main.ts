/**
 * @module cli/main
 * `yoke`: finds the command from the leading words (the kernel's own, then those the built-in
 * plugins contribute, then those of the project's plugins), parses its flags, runs it, and turns
 * what it throws into an exit code (2 for usage and config errors, 1 otherwise).
 */
import { parseArgs } from 'node:util'
import { YokeError } from '../errors.ts'
import { guardProcess } from '../kernel/faults.ts'
import { COMMON_HELP, COMMON_OPTIONS, parseCommandArgs, type ParsedArgs } from './args.ts'
import type { Command, Flags } from './command.ts'
import { configPrint, configValidate } from './config.ts'
import { candidates, completion } from './completion.ts'
import { dev } from './dev.ts'
import { doctor, yokePackage } from './doctor.ts'
import { builtinCommands, projectCommands, type Contributed } from './discover.ts'
import { init } from './init.ts'
import { inspect } from './inspect.ts'
import { logs } from './logs.ts'
import { color, errorJson, formatError, printJson } from './output.ts'
import { suggest } from '../suggest.ts'
import { toolsCall, toolsList } from './tools.ts'
import { trust } from './trust.ts'
import { exitNow } from './signals.ts'

/** The kernel's own commands: the rest come from plugins. */
const KERNEL: Command[] = [
  dev,
  configPrint,
  configValidate,
  inspect,
  toolsList,
  toolsCall,
  completion,
  doctor,
  logs,
  init,
  trust,
]

function topHelp(commands: Contributed[]): string {
  const width = Math.max(...commands.map((c) => c.command.name.length)) + 2
  const line = ({ command, owner }: Contributed) =>
    `  ${command.name.padEnd(width)}${command.summary}${owner === 'yoke' ? '' : color.dim(` (${owner})`)}`
  return [
    'yoke — compose an agent harness from plugins, with hot reload',
    '',
    'Usage: yoke <command> [flags]',
    '',
    'Commands:',
    ...commands.filter((c) => c.owner === 'yoke').map(line),
    '',
    'Commands from plugins:',
    ...commands.filter((c) => c.owner !== 'yoke').map(line),
    '',
    COMMON_HELP,
    '',
    "Run `yoke <command> --help` for a command's own flags and examples.",
  ].join('\n')
}

function commandHelp({ command, owner }: Contributed): string {
  const examples = command.examples?.length
    ? ['', 'Examples:', ...command.examples.map((e) => `  ${e}`)]
    : []
  return [
    `yoke ${command.name} — ${command.summary}${owner === 'yoke' ? '' : ` (from ${owner})`}`,
    '',
    `Usage: ${command.usage}`,
    ...flagsHelp(command.flags ?? {}),
    ...examples,
    '',
    COMMON_HELP,
  ].join('\n')
}

/** The command's own flags, one line each: `--args JSON   the tool's arguments`. */
function flagsHelp(flags: Flags): string[] {
  const spelled = Object.entries(flags).map(([name, flag]) => {
    const short = flag.short ? `-${flag.short}, ` : ''
    const value = flag.type === 'string' ? ` ${flag.value ?? 'VALUE'}` : ''
    const repeat = flag.multiple ? ' (repeatable)' : ''
    return [`${short}--${name}${value}`, `${flag.description ?? ''}${repeat}`] as const
  })
  if (!spelled.length) return []
  const width = Math.max(...spelled.map(([left]) => left.length)) + 2
  return [
    '',
    'Flags:',
    ...spelled.map(([left, right]) => `  ${left.padEnd(width)}${right}`.trimEnd()),
  ]
}

/** Why the words name no command, with the nearest command when it looks like a typo. */
function unknownCommand(commands: Contributed[], words: string[]): string {
  const names = commands.map((c) => c.command.name)
  const group = names.filter((n) => n.startsWith(words[0] + ' '))
  if (words.length === 1 && group.length)
    return `yoke ${words[0]} needs a subcommand: ${group.map((n) => n.split(' ')[1]).join(', ')}`
  const spelled = words.slice(0, 2).join(' ')
  const guess =
    suggest(spelled, names) ?? suggest(words[0]!, new Set(names.map((n) => n.split(' ')[0]!)))
  return `unknown command "${words.join(' ')}"${guess ? ` (did you mean "yoke ${guess}"?)` : ''}`
}

/** The command the leading words name, the longest name first (`mcp add` before `mcp`). */
function match(commands: Contributed[], words: string[]): Contributed | undefined {
  return [...commands]
    .sort((a, b) => b.command.name.length - a.command.name.length)
    .find((c) => c.command.name.split(' ').every((w, i) => words[i] === w))
}

/**
 * Adds `more` after `known`. A name another owner has is refused (the first owner keeps it), and
 * so is one that would shadow a group or be shadowed by it (`mcp` against `mcp list`, `serve stop`
 * against `serve`): every listed command can be reached by its words.
 */
function join(known: Contributed[], more: Contributed[]): Contributed[] {
  const all = [...known]
  const clash = (a: string, b: string) => a === b || a.startsWith(b + ' ') || b.startsWith(a + ' ')
  for (const c of more) {
    const taken = all.find((k) => clash(k.command.name, c.command.name))
    if (!taken) all.push(c)
    else
      process.stderr.write(
        `warning: yoke ${c.command.name} from ${c.owner} is ignored: it clashes with yoke ${taken.command.name} of ${taken.owner}\n`,
      )
  }
  return all
}

/** `yoke --cwd DIR tools list` as `yoke tools list --cwd DIR`: leading common flags move behind the words. */
function wordsFirst(argv: string[]): string[] {
  const leading: string[] = []
  let i = 0
  while (i < argv.length && argv[i]!.startsWith('--')) {
    const name = argv[i]!.slice(2).split('=')[0]!
    const option = (COMMON_OPTIONS as Record<string, { type: string }>)[name]
    if (!option || name === 'help') break
    const takesValue = option.type === 'string' && !argv[i]!.includes('=')
    leading.push(...argv.slice(i, i + (takesValue ? 2 : 1)))
    i += takesValue ? 2 : 1
  }
  if (!leading.length) return argv
  const rest = argv.slice(i)
  const words = rest.findIndex((a) => a.startsWith('-'))
  const cut = words < 0 ? rest.length : words
  return [...rest.slice(0, cut), ...leading, ...rest.slice(cut)]
}

/** The common flags alone, read leniently: enough to find the project before the command is known. */
function commonFlags(argv: string[]): ParsedArgs {
  const { values } = parseArgs({
    args: argv,
    options: COMMON_OPTIONS,
    strict: false,
    allowPositionals: true,
  })
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined)
  const list = (v: unknown) => (Array.isArray(v) ? v.filter((x) => typeof x === 'string') : [])
  return {
    cwd: text(values.cwd),
    preset: text(values.preset),
    config: text(values.config),
    patch: list(values.patch),
    set: list(values.set),
    trust: values.trust === true,
  }
}

export async function main(given: string[]): Promise<number> {
  exitQuietlyOnClosedPipe()
  const code = await runCommand(given)
  // a write that already failed for a closed pipe may not have been reported yet
  return (process.stdout.errored as NodeJS.ErrnoException | null)?.code === 'EPIPE' ? 141 : code
}

/** `yoke __complete -- WORDS… CURRENT`: the completion script's question; candidates one per line. */
async function complete(given: string[]): Promise<number> {
  const args = given[0] === '--' ? given.slice(1) : given
  const words = args.slice(0, -1)
  const commands = join(
    join(
      KERNEL.map((command) => ({ command, owner: 'yoke' })),
      await builtinCommands(),
    ),
    await projectCommands(await contextFor(commonFlags(words))),
  )
  const found = candidates(commands, words, args.at(-1) ?? '')
  if (found.length) process.stdout.write(found.join('\n') + '\n')
  return 0
}

async function runCommand(given: string[]): Promise<number> {
  if (given[0] === '__complete') return complete(given.slice(1))
  // `yoke help tools list` is `yoke tools list --help`
  const argv = wordsFirst(given[0] === 'help' ? [...given.slice(1), '--help'] : given)
  // a plugin's stray error fails that plugin, and its process.exit() does not end yoke
  guardProcess((message) =>
    process.stderr.write(`${color.yellow('warn', process.stderr)} yoke: ${message}\n`),
  )
  const words: string[] = []
  for (const arg of argv) {
    if (arg.startsWith('-')) break
    words.push(arg)
  }
  const json = argv.includes('--json')
  const wantsHelp = argv.includes('--help') || argv.includes('-h')
  if (!words.length && (argv[0] === '--version' || argv[0] === '-v')) return version()
  try {
    // a kernel command runs without importing the plugins' commands modules
    let commands: Contributed[] = KERNEL.map((command) => ({ command, owner: 'yoke' }))
    let found = match(commands, words)
    if (!found) {
      commands = join(commands, await builtinCommands())
      found = match(commands, words)
    }
    if (!found || (!words.length && wantsHelp)) {
      commands = join(commands, await projectCommands(await contextFor(commonFlags(argv))))
      found = match(commands, words)
    }
    if (!found) {
      if (argv.includes('--version') || argv.includes('-v')) return version()
      const group = words.length
        ? commands.filter((c) => c.command.name.startsWith(words[0] + ' '))
        : []
      const helpText = group.length ? group.map(commandHelp).join('\n\n') : topHelp(commands)
      // help for no words or a group's word (`yoke mcp --help`); a mistyped command is an error
      const helpable = !words.length || (group.length > 0 && words.length === 1)
      if ((wantsHelp && helpable) || !argv.length) {
        process.stdout.write(helpText + '\n')
        return argv.length ? 0 : 2
      }
      throw new YokeError('USAGE', {
        reason: words.length ? unknownCommand(commands, words) : `unexpected argument ${argv[0]}`,
      })
    }
    const { command } = found
    const rest = argv.slice(command.name.split(' ').length)
    const { values, positionals } = parseCommandArgs(rest, command.flags)
    if (values.help) {
      process.stdout.write(commandHelp(found) + '\n')
      return 0
    }
    if (positionals.length > (command.positionals ?? 0)) {
      throw new YokeError('USAGE', {
        reason: `unexpected argument "${positionals[command.positionals ?? 0]}" for yoke ${command.name}`,
      })
    }
    return await command.run(values, positionals, await contextFor(values))
  } catch (err) {
    if (json) printJson({ ok: false, error: errorJson(err) })
    else
      process.stderr.write(
        formatError(err) +
          (err instanceof YokeError ? '' : `\n${(err as Error)?.stack ?? ''}`) +
          '\n',
      )
    return exitCodeOf(err)
  }
}

/** A command's context; its module (the config machinery) loads only when a command needs it. */
async function contextFor(args: ParsedArgs) {
  return (await import('./context.ts')).commandContext(args)
}

/** 2 for usage and config errors, 1 for everything else. */
export function exitCodeOf(err: unknown): number {
  if (!(err instanceof YokeError)) return 1
  return err.code === 'USAGE' || err.code.startsWith('CONFIG_') || err.code.startsWith('PLUGIN_')
    ? 2
    : 1
}

function version(): number {
  process.stdout.write(`yoke ${yokePackage().version}\n`)
  return 0
}

/** How long the output may make no progress before yoke ends anyway (a reader that never reads). */
const STALLED_MS = 30_000

/**
 * Resolves once stdout and stderr hold nothing unwritten: a pipe takes 64 KiB at a time, and
 * process.exit() drops the rest (`yoke skills list --json | wc -c` gave 131,072 of 398,028 bytes).
 * A reader that reads, however slowly, gets everything; one that takes nothing for `stalledMs`
 * lets the command end (a plugin's open handle never keeps it alive: the caller exits after this).
 */
export function drained(stalledMs = STALLED_MS): Promise<void> {
  const streams = [process.stdout, process.stderr]
  const pending = () => streams.reduce((n, s) => n + (s.destroyed ? 0 : s.writableLength), 0)
  return new Promise((resolve) => {
    let left = pending()
    if (!left) return resolve()
    let last = Date.now()
    const timer = setInterval(() => {
      const now = pending()
      if (now < left) [left, last] = [now, Date.now()]
      if (!now || Date.now() - last > stalledMs) finish()
    }, 100)
    let waiting = streams.length
    const finish = () => {
      clearInterval(timer)
      resolve()
    }
    // an empty write's callback runs once every write before it is flushed (or the stream failed)
    for (const s of streams) s.write('', () => --waiting || finish())
  })
}

/**
 * `yoke tools list | head`: once the reader has gone, the rest of the output has nowhere to go. A
 * Unix tool dies of SIGPIPE there (the shell sees 141); yoke ends the same way instead of throwing
 * EPIPE from a write. The exit is the frame's own: the failed write may have carried a plugin's
 * log line, and a plugin's process.exit() is refused — which once left a `yoke dev` whose reader
 * died failing, logging the failure, failing to write it, … at 95 % CPU.
 */
let pipeGuarded = false
function exitQuietlyOnClosedPipe() {
  if (pipeGuarded) return
  pipeGuarded = true
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') exitNow(141)
    })
}
