/**
 * @module cli/main
 * `yoke`: finds the command from the leading words, parses its flags, runs it, and turns what
 * it throws into an exit code (2 for usage and config errors, 1 otherwise).
 */
import { readFileSync } from 'node:fs'
import { YokeError } from '../errors.ts'
import { COMMON_HELP, parseCommandArgs, type Command } from './args.ts'
import { configPrint, configValidate } from './config.ts'
import { agentChat, agentRun } from './agent.ts'
import { dev } from './dev.ts'
import { inspect } from './inspect.ts'
import { mcpAdd, mcpImport, mcpList, mcpRemove, mcpRestart } from './mcp.ts'
import { pluginsCheck, pluginsList } from './plugins.ts'
import { runsList, runsShow } from './runs.ts'
import { serve } from './serve.ts'
import { skillsCheck, skillsList, skillsShow } from './skills.ts'
import { toolsCall, toolsList } from './tools.ts'
import { errorJson, formatError, printJson } from './output.ts'

const COMMANDS: Command[] = [
  dev,
  configPrint,
  configValidate,
  inspect,
  toolsList,
  toolsCall,
  skillsList,
  skillsShow,
  skillsCheck,
  mcpList,
  mcpRestart,
  mcpAdd,
  mcpRemove,
  mcpImport,
  pluginsList,
  pluginsCheck,
  agentRun,
  agentChat,
  runsList,
  runsShow,
  serve,
]

function topHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2
  return [
    'yoke — compose an agent harness from plugins, with hot reload',
    '',
    'Usage: yoke <command> [flags]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
    COMMON_HELP,
    '',
    "Run `yoke <command> --help` for a command's own flags.",
  ].join('\n')
}

function commandHelp(command: Command): string {
  return [
    `yoke ${command.name} — ${command.summary}`,
    '',
    `Usage: ${command.usage}`,
    '',
    COMMON_HELP,
  ].join('\n')
}

export async function main(argv: string[]): Promise<number> {
  const words: string[] = []
  for (const arg of argv) {
    if (arg.startsWith('-')) break
    words.push(arg)
  }
  const command = [...COMMANDS]
    .sort((a, b) => b.name.length - a.name.length)
    .find((c) => c.name.split(' ').every((w, i) => words[i] === w))
  const json = argv.includes('--json')
  try {
    if (!command) {
      if (argv.includes('--version') || argv.includes('-v')) return version()
      const group = words.length ? COMMANDS.filter((c) => c.name.startsWith(words[0] + ' ')) : []
      const helpText = group.length ? group.map(commandHelp).join('\n\n') : topHelp()
      if (argv.includes('--help') || argv.includes('-h') || (!words.length && !argv.length)) {
        process.stdout.write(helpText + '\n')
        return argv.length ? 0 : 2
      }
      throw new YokeError('USAGE', {
        reason: words.length
          ? `unknown command "${words.join(' ')}"`
          : `unexpected argument ${argv[0]}`,
      })
    }
    const rest = argv.slice(command.name.split(' ').length)
    const { values, positionals } = parseCommandArgs(rest, command.options)
    if (values.help) {
      process.stdout.write(commandHelp(command) + '\n')
      return 0
    }
    if (positionals.length > (command.positionals ?? 0)) {
      throw new YokeError('USAGE', {
        reason: `unexpected argument "${positionals[command.positionals ?? 0]}" for yoke ${command.name}`,
      })
    }
    return await command.run(values, positionals)
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

/** 2 for usage and config errors, 1 for everything else. */
export function exitCodeOf(err: unknown): number {
  if (!(err instanceof YokeError)) return 1
  return err.code === 'USAGE' || err.code.startsWith('CONFIG_') || err.code.startsWith('PLUGIN_')
    ? 2
    : 1
}

function version(): number {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))
  process.stdout.write(`yoke ${pkg.version}\n`)
  return 0
}
