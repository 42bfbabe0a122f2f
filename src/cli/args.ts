/**
 * @module cli/args
 * The flags every command takes, parsed with node:util's parseArgs, and the command table
 * that `yoke --help` prints.
 */
import { statSync } from 'node:fs'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { YokeError } from '../errors.ts'
import type { ComposeOptions } from '../config/composer.ts'
import type { Flags, ParsedArgs } from './command.ts'
import { didYouMean } from '../suggest.ts'

export const COMMON_OPTIONS = {
  cwd: { type: 'string' },
  preset: { type: 'string' },
  config: { type: 'string' },
  patch: { type: 'string', multiple: true },
  set: { type: 'string', multiple: true },
  json: { type: 'boolean' },
  'log-level': { type: 'string' },
  trust: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options']

export const COMMON_HELP = `Common flags:
  --cwd DIR           run as if started in DIR
  --preset NAME|PATH  the preset (default: the project config's preset:, else base)
  --config FILE       the project config file (default: found by search from --cwd)
  --patch FILE        a patch layer on top (repeatable, applied in order)
  --set PATH=VALUE    one value on top of everything (repeatable), e.g. --set plugins.agent.enabled=true
  --json              machine-readable output on stdout
  --log-level LEVEL   the least log level on stderr: debug, info, warn, error (dev: info, others: warn)
  --trust             run the project's own code this once without asking (CI; or YOKE_TRUST=1)
  -h, --help          this help

Exit codes: 0 done, 1 the operation failed, 2 usage or config error.`

export type { ParsedArgs } from './command.ts'

export function parseCommandArgs(argv: string[], options: Flags = {}) {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...COMMON_OPTIONS, ...options },
      allowPositionals: true,
      strict: true,
    })
    return { values: values as ParsedArgs, positionals }
  } catch (err) {
    throw new YokeError('USAGE', { reason: usageReason(err, { ...COMMON_OPTIONS, ...options }) })
  }
}

/** parseArgs' complaint in yoke's words: the flag, and the nearest known one. */
function usageReason(err: unknown, options: Flags): string {
  const { code, message } = err as NodeJS.ErrnoException
  const flag = /'(-{1,2}[^']*)'/.exec(message)?.[1]
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && flag) {
    const name = flag.replace(/^-+/, '').split('=')[0]!
    return `unknown flag ${flag}${didYouMean(name, Object.keys(options), (g) => `--${g}`)}`
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && flag) return message.replace(/\.$/, '')
  return message
}

export function composeOptions(args: ParsedArgs): ComposeOptions {
  if (args.cwd && !statSync(args.cwd, { throwIfNoEntry: false })?.isDirectory()) {
    throw new YokeError('USAGE', { reason: `--cwd ${args.cwd} is not a directory` })
  }
  return {
    cwd: args.cwd ?? process.cwd(),
    preset: args.preset,
    configFile: args.config,
    patches: args.patch ?? [],
    sets: args.set ?? [],
    ...(args.trust && { trust: true }),
  }
}
