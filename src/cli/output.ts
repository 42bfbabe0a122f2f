/**
 * @module cli/output
 * Printing for humans and machines: colour only on a TTY and never with NO_COLOR; errors as
 * "CODE message / at file:line:col / hint"; JSON as one object per line.
 */
import { homedir } from 'node:os'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { YOKE_ROOT } from '../roots.ts'
import { YokeError, messageOf } from '../errors.ts'
import type { LogRecord } from '../kernel/types.ts'

const useColor = (stream: NodeJS.WriteStream) =>
  Boolean(stream.isTTY) && !('NO_COLOR' in process.env) && process.env.TERM !== 'dumb'

const paint =
  (open: number, close: number) =>
  (text: string, stream: NodeJS.WriteStream = process.stdout) =>
    useColor(stream) ? `\u001b[${open}m${text}\u001b[${close}m` : text

export const color = {
  bold: paint(1, 22),
  dim: paint(2, 22),
  red: paint(31, 39),
  green: paint(32, 39),
  yellow: paint(33, 39),
  blue: paint(34, 39),
  cyan: paint(36, 39),
}

/** `fn(stream)` paints for that stream: errors go to stderr, so they are coloured by stderr's TTY. */
export const on = (stream: NodeJS.WriteStream) => ({
  red: (t: string) => color.red(t, stream),
  yellow: (t: string) => color.yellow(t, stream),
  dim: (t: string) => color.dim(t, stream),
  bold: (t: string) => color.bold(t, stream),
  green: (t: string) => color.green(t, stream),
  cyan: (t: string) => color.cyan(t, stream),
})

export function errorJson(err: unknown) {
  if (err instanceof YokeError) {
    const frame = codeFrame(err)
    return { ...err.toJSON(), ...(frame && { frame }) }
  }
  return { code: 'INTERNAL', message: messageOf(err) }
}

/** Three lines at most: what, where, what to do. */
export function formatError(err: unknown, stream: NodeJS.WriteStream = process.stderr): string {
  const c = on(stream)
  if (!(err instanceof YokeError)) return `${c.red('error')} ${messageOf(err)}`
  const who = [
    err.site.instance && `instance "${err.site.instance}"`,
    err.site.plugin && `plugin ${err.site.plugin}`,
    err.site.hook && `hook ${err.site.hook}`,
  ]
    .filter(Boolean)
    .join(', ')
  const lines = [`${c.red(err.code)} ${err.message}`]
  // the config's line says which instance; the frame, where in its own code it threw
  const frame = codeFrame(err)
  const thrown = frame && `${c.dim('· thrown at')} ${frame}`
  if (err.location || who || thrown)
    lines.push(
      `  ${c.dim('at')} ${[err.location, who && `(${who})`, thrown].filter(Boolean).join(' ')}`,
    )
  const cause =
    err.cause instanceof Error && !err.message.includes(err.cause.message)
      ? err.cause.message
      : undefined
  if (cause) lines.push(`  ${c.dim('cause')} ${cause.split('\n')[0]}`)
  lines.push(`  ${c.dim('hint')} ${err.hint}`)
  return lines.join('\n')
}

/** yoke's own code: a frame there is the machinery that ran the plugin, not the plugin */
const OWN = [join(YOKE_ROOT, 'src') + sep, join(YOKE_ROOT, 'dist', 'src') + sep]

/**
 * Where in the plugin's own code an error was thrown: the first frame of its cause's stack (a
 * cause's cause too) outside yoke's kernel, Node's internals and node_modules, as `file:line:col`.
 * The config's line says which instance failed; this says where in its code (`apply` threw in a
 * helper, a timer's callback threw). A built-in plugin's frames count: they are plugin code.
 */
export function codeFrame(err: unknown): string | undefined {
  for (let cause = (err as Error | undefined)?.cause, depth = 0; depth < 5; depth++) {
    if (!(cause instanceof Error)) return undefined
    for (const line of (cause.stack ?? '').split('\n').slice(1)) {
      const at = /^\s*at (?:.*? \()?(.+?):(\d+):(\d+)\)?$/.exec(line)
      if (!at) continue
      let file = at[1]!
      if (file.startsWith('file://')) {
        try {
          file = fileURLToPath(file)
        } catch {
          continue
        }
      }
      if (!isAbsolute(file) || file.includes(`${sep}node_modules${sep}`)) continue
      if (OWN.some((dir) => file.startsWith(dir))) continue
      return `${file}:${at[2]}:${at[3]}`
    }
    cause = cause.cause
  }
  return undefined
}

/** A log record as one stderr line: `warn notes: the file is gone`. */
export function logLine(record: LogRecord): string {
  return `${record.level} ${record.fiber ? `${record.fiber.key}: ` : ''}${record.message}\n`
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + '\n')
}

/** A progress line on stderr for long work; silent when stderr is not a terminal. */
export function progress(message: string): void {
  if (process.stderr.isTTY) process.stderr.write(`${color.dim(message, process.stderr)}\n`)
}

/** A path for people: relative to cwd, or `yoke:presets/base.yaml` for yoke's own files. */
export function displayPath(file: string, cwd: string): string {
  if (file.startsWith(YOKE_ROOT) && !resolve(cwd).concat(sep).startsWith(YOKE_ROOT))
    return `yoke:${file.slice(YOKE_ROOT.length)}`
  const near = relative(cwd, file) || file
  // a file in the home directory, seen from outside it, reads better as ~/… than as ../../root/…
  const home = homedir()
  if (near.startsWith('..') && file.startsWith(home + sep)) return `~${file.slice(home.length)}`
  return near
}
