/**
 * @module cli/logs
 * The dev's log file and `yoke logs`. `yoke dev` appends every record, debug included, as a JSON
 * line to `.yoke/logs/dev.log` in the project (the terminal shows only what --log-level lets
 * through); past 10 MiB the file moves to dev.log.1 and a new one starts. `yoke logs` prints the
 * last records, and with -f follows the file as the dev writes it.
 */
import {
  appendFileSync,
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  watch,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { messageOf, YokeError } from '../errors.ts'
import type { LogLevel, LogRecord } from '../kernel/types.ts'
import { composeOptions } from './args.ts'
import { defineCommand } from './command.ts'
import { color } from './output.ts'
import { stopSignal } from './signals.ts'

const MAX_BYTES = 10 * 1024 * 1024
export const LEVELS: LogLevel[] = ['debug', 'info', 'warn', 'error']

export const logFileOf = (projectDir: string) => join(projectDir, '.yoke', 'logs', 'dev.log')

/** Whether a record of `level` passes `threshold`. */
export const passes = (level: LogLevel, threshold: LogLevel) =>
  LEVELS.indexOf(level) >= LEVELS.indexOf(threshold)

/** --log-level, checked: a level name, or USAGE naming the ones there are. */
export function logLevelOf(value: unknown, fallback: LogLevel): LogLevel {
  if (value === undefined) return fallback
  if (LEVELS.includes(value as LogLevel)) return value as LogLevel
  throw new YokeError('USAGE', {
    reason: `--log-level takes ${LEVELS.join(', ')}, not "${String(value)}"`,
  })
}

/** Appends records to the dev's log file; a file that cannot be written stops the writing, not the dev. */
/**
 * A URL's `token=` value, masked: the terminal shows the web console's launch URL whole (that is
 * how it is opened), but a log file keeps every record for as long as it lives.
 */
export const unsecret = (text: string) => text.replace(/([?&#]token=)[^\s&#"']+/g, '$1…')

export function logWriter(fileOf: () => string, warn: (message: string) => void) {
  let broken = false
  return (record: LogRecord) => {
    if (broken) return
    const file = fileOf()
    const line = JSON.stringify({
      at: new Date().toISOString(),
      level: record.level,
      instance: record.fiber?.key,
      message: unsecret(record.message),
      error: record.error ? unsecret(messageOf(record.error)) : undefined,
    })
    try {
      mkdirSync(dirname(file), { recursive: true })
      if ((statSync(file, { throwIfNoEntry: false })?.size ?? 0) > MAX_BYTES)
        renameSync(file, `${file}.1`)
      appendFileSync(file, line + '\n')
    } catch (err) {
      broken = true
      warn(`the log file ${file} cannot be written (${messageOf(err)}); logging to it stops`)
    }
  }
}

function format(line: string): string | undefined {
  let r: { at?: string; level?: LogLevel; instance?: string; message?: string; error?: string }
  try {
    r = JSON.parse(line)
  } catch {
    return undefined // a torn last line
  }
  const level =
    r.level === 'error'
      ? color.red('error')
      : r.level === 'warn'
        ? color.yellow('warn')
        : r.level === 'debug'
          ? color.dim('debug')
          : (r.level ?? '')
  const time = color.dim(r.at?.slice(11, 19) ?? '')
  return `${time} ${level} ${r.instance ? `${r.instance}: ` : ''}${r.message ?? ''}${r.error && r.error !== r.message ? ` (${r.error})` : ''}`
}

export const logs = defineCommand({
  name: 'logs',
  summary: "the running (or last) yoke dev's log: the last records, or -f to follow",
  usage: 'yoke logs [-f] [--lines N] [--log-level LEVEL] [common flags]',
  flags: {
    follow: { type: 'boolean', short: 'f', description: 'keep printing records as they come' },
    lines: { type: 'string', value: 'N', description: 'how many of the last records (default 50)' },
  },
  examples: ['yoke logs -f', 'yoke logs --lines 200 --log-level debug'],
  async run(args) {
    const threshold = logLevelOf(args['log-level'], 'info')
    const count = Number(args.lines ?? 50)
    if (!Number.isSafeInteger(count) || count < 0)
      throw new YokeError('USAGE', { reason: `--lines takes a whole number, not "${args.lines}"` })
    const { loadLayers } = await import('../config/layers.ts')
    const file = logFileOf((await loadLayers(composeOptions(args))).projectDir)
    const shown = (line: string) => {
      const level = /"level":"(\w+)"/.exec(line)?.[1] as LogLevel | undefined
      return !level || passes(level, threshold)
    }
    const print = (lines: string[]) => {
      for (const line of lines.filter(shown)) {
        const text = args.json ? line : format(line)
        if (text) process.stdout.write(text + '\n')
      }
    }
    let offset = 0
    try {
      const text = readFileSync(file, 'utf8')
      offset = Buffer.byteLength(text)
      print(
        text
          .split('\n')
          .filter(Boolean)
          .filter(shown)
          .slice(-count || Infinity),
      )
    } catch {
      if (!args.follow) {
        process.stderr.write(`no log yet: ${file} is written by yoke dev\n`)
        return 0
      }
    }
    if (!args.follow) return 0
    return follow(file, offset, print)
  },
})

/** Prints what is appended to `file` from `offset` on, until Ctrl-C; a rotation starts it over. */
async function follow(file: string, offset: number, print: (lines: string[]) => void) {
  mkdirSync(dirname(file), { recursive: true })
  let partial = ''
  const read = () => {
    const size = statSync(file, { throwIfNoEntry: false })?.size
    if (size === undefined) return // not there yet
    if (size < offset) offset = 0 // rotated: a new file
    if (size === offset) return
    const fresh = Buffer.alloc(size - offset)
    const fd = openSync(file, 'r')
    try {
      readSync(fd, fresh, 0, fresh.length, offset)
    } finally {
      closeSync(fd)
    }
    offset = size
    const lines = (partial + fresh.toString('utf8')).split('\n')
    partial = lines.pop() ?? ''
    print(lines.filter(Boolean))
  }
  const watcher = watch(dirname(file), () => read())
  process.stderr.write(color.dim(`following ${file} (Ctrl-C to stop)\n`, process.stderr))
  const signal = stopSignal()
  await signal.stopped
  signal.dispose()
  watcher.close()
  return 130
}
