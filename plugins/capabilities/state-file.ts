/**
 * The state files yoke appends to and reads back (the audit log; metrics-jsonl's file): JSON
 * lines, read the way config files are (src/config/yaml.ts, readConfigText). A regular file only:
 * a FIFO, a device or a directory is refused by stat before it is opened, and again by fstat
 * through a non-blocking descriptor, so one swapped in meanwhile cannot block the read; at most
 * `maxBytes` of it (the whole file, or its tail). Each line is checked against a schema: one that
 * is not an entry costs that line alone and is reported (file:line and why). Appends open the file
 * the same way, so a FIFO put in its place never blocks a write. No zod here (the schema is the
 * caller's): commands that list this module stay light.
 */
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readSync,
  statSync,
  writeSync,
  type Stats,
} from 'node:fs'
import { dirname } from 'node:path'
import { messageOf } from 'yoke/cli'

/** What a schema answers (zod's safeParse shape). */
export interface LineSchema<T> {
  safeParse(
    value: unknown,
  ):
    | { success: true; data: T }
    | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } }
}

export interface JsonLines<T> {
  /** the lines that are entries, oldest first */
  entries: T[]
  /** the file's size when it was read (0: there is none) */
  size: number
  /** the bytes read, from `from` (what a later read from `from + read` continues after) */
  read: number
  /** what was left out and why: `file:line: …` for a line, `file: …` for the whole file */
  problems: string[]
}

export interface ReadOptions {
  /** the most bytes read */
  maxBytes: number
  /** over maxBytes: read the last maxBytes (an append-only log) instead of refusing the file */
  tail?: boolean
  /** start here (bytes already read); lines are then named by byte offset */
  from?: number
}

const KINDS = {
  FIFO: 'a FIFO',
  CharacterDevice: 'a character device',
  BlockDevice: 'a block device',
  Socket: 'a socket',
  Directory: 'a directory',
} as const

/** Why `stat` is not a regular file (undefined: it is one). */
function notRegular(stat: Stats): string | undefined {
  if (stat.isFile()) return undefined
  const kind = Object.entries(KINDS).find(([k]) => stat[`is${k as keyof typeof KINDS}`]())
  return `it is not a regular file (${kind?.[1] ?? 'of another kind'})`
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(bytes < 1024 * 1024 ? 2 : 0)} MiB`

/** The JSON lines of `file` that `schema` accepts; a missing file has none. Never throws for the file's content. */
export function readJsonLines<T>(
  file: string,
  schema: LineSchema<T>,
  options: ReadOptions,
): JsonLines<T> {
  const out: JsonLines<T> = { entries: [], size: 0, read: 0, problems: [] }
  const bytes = readBytes(file, options)
  if (typeof bytes === 'string') {
    out.problems.push(
      `${file}: ${bytes}; it is not read (move it away or delete it: yoke starts a new one)`,
    )
    return out
  }
  if (!bytes) return out
  out.size = bytes.size
  out.read = bytes.read
  parseLines(file, bytes, schema, options, out)
  return out
}

/** What `readBytes` read: the text from `start`, the file's size, the bytes read from `from`. */
interface Bytes {
  text: string
  start: number
  size: number
  read: number
}

/**
 * The text of `file` (from `from`, at most `maxBytes`: the tail when `tail`), undefined when
 * there is none, or why it is refused.
 */
function readBytes(file: string, options: ReadOptions): Bytes | string | undefined {
  let fd: number | undefined
  try {
    const before = statSync(file, { throwIfNoEntry: false })
    if (!before) return undefined
    const kind = notRegular(before) // refused by its type, never opened
    if (kind) return kind
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0))
    const stat = fstatSync(fd) // what was opened, in case the path was swapped meanwhile
    const swapped = notRegular(stat)
    if (swapped) return swapped
    const from = Math.min(options.from ?? 0, stat.size)
    if (stat.size - from > options.maxBytes && !options.tail)
      return `it is ${mib(stat.size)}, over the ${mib(options.maxBytes)} yoke reads`
    const start = Math.max(from, stat.size - options.maxBytes)
    const buffer = Buffer.alloc(stat.size - start)
    let length = 0
    // a file that grows while it is read is read up to the size it had
    for (
      let n;
      length < buffer.length &&
      (n = readSync(fd, buffer, length, buffer.length - length, start + length)) > 0;
    )
      length += n
    const text = buffer.subarray(0, length).toString('utf8')
    return { text, start, size: stat.size, read: start + length - from }
  } catch (err) {
    return `it cannot be read (${messageOf(err)})`
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** Checks each line of `bytes` against `schema`: entries into `out.entries`, the rest said. */
function parseLines<T>(
  file: string,
  { text, start }: Bytes,
  schema: LineSchema<T>,
  options: ReadOptions,
  out: JsonLines<T>,
): void {
  const byOffset = start > 0
  let offset = start
  const lines = text.split('\n')
  if (byOffset && start > (options.from ?? 0)) {
    // the tail starts inside a line: that line is not whole
    const first = lines.shift() ?? ''
    offset += Buffer.byteLength(first) + 1
    if (!lines.length || (lines.length === 1 && !lines[0]))
      out.problems.push(
        `${file}: its last ${mib(options.maxBytes)} hold no whole line; nothing of it is read`,
      )
  }
  // the text after the last newline: a whole line without its newline, or one torn (or still
  // being written): then it is left for a later read, which starts at its beginning
  const last = lines.pop() ?? ''
  const tail = last.trim() ? entry(schema, last) : undefined
  if (tail && !('value' in tail)) out.read -= Buffer.byteLength(last)
  lines.forEach((line, i) => {
    const where = byOffset ? `${file} (the line at byte ${offset})` : `${file}:${i + 1}`
    offset += Buffer.byteLength(line) + 1
    if (!line.trim()) return
    const checked = entry(schema, line)
    if ('value' in checked) out.entries.push(checked.value)
    else out.problems.push(`${where}: ${checked.problem}; that line is skipped`)
  })
  if (tail && 'value' in tail) out.entries.push(tail.value)
  else if (tail)
    out.problems.push(
      `${byOffset ? `${file} (byte ${offset})` : `${file}:${lines.length + 1}`}: the last line is not whole (${tail.problem}: torn, or still being written); skipped`,
    )
}

/** One line as an entry, or what it is instead. */
function entry<T>(schema: LineSchema<T>, line: string): { value: T } | { problem: string } {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch (err) {
    return { problem: `not JSON (${messageOf(err)})` }
  }
  const checked = schema.safeParse(value)
  if (checked.success) return { value: checked.data }
  const issue = checked.error.issues[0]
  return {
    problem: `${issue?.path.map(String).join('.') || 'the line'}: ${issue?.message ?? 'not an entry'}`,
  }
}

/**
 * Appends one line per value, each one write on a file opened for appending (O_APPEND), so lines
 * of several processes never interleave. The file is created (0600) with its directory; one that
 * is not a regular file is refused, with an Error that says what it is.
 */
export function appendJsonLines(file: string, values: unknown[]): void {
  if (!values.length) return
  mkdirSync(dirname(file), { recursive: true })
  const refuse = (why: string) =>
    new Error(`${file}: ${why}; nothing was appended (move it away or delete it)`)
  const before = statSync(file, { throwIfNoEntry: false })
  const kind = before && notRegular(before)
  if (kind) throw refuse(kind)
  const flags =
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_NONBLOCK ?? 0)
  const fd = openSync(file, flags, 0o600)
  try {
    const swapped = notRegular(fstatSync(fd))
    if (swapped) throw refuse(swapped)
    for (const value of values) writeSync(fd, JSON.stringify(value) + '\n')
  } finally {
    closeSync(fd)
  }
}
