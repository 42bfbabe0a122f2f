/**
 * @module config/yaml
 * Reads one YAML (or JSON) config file defensively: size and encoding checked before parsing,
 * duplicate keys refused, alias expansion and nesting bounded. Every node's position is kept,
 * keyed by its path, so any later error can name file:line:col.
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs'
import {
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  visit,
  type Alias,
  type Document,
  type Node,
} from 'yaml'
import { YokeError, type ErrorCode } from '../errors.ts'

export const LIMITS = { bytes: 1024 * 1024, depth: 32, aliases: 100 }

export type Path = ReadonlyArray<string | number>
export interface Position {
  file: string
  line: number
  col: number
}

/** The parsed file: its plain value and where each path sits in the text. */
export interface ParsedFile {
  file: string
  value: unknown
  /** where each path's value is (a collection: where its key is) */
  positions: Map<string, Position>
  /** where each mapping key is written */
  keys: Map<string, Position>
}

export const pathKey = (path: Path) => path.join('\u001f')

export const readConfigFile = (file: string): ParsedFile =>
  parseConfigText(readConfigText(file), file)

/**
 * A config file's text: a regular file (a link to one is followed), at most 1 MiB, UTF-8 without
 * NUL; else the catalogue's error. The checks come before any byte is read: a FIFO, a device
 * (/dev/zero) or a directory is refused by its type without being opened, and the file is opened
 * non-blocking and checked again through its descriptor, so one swapped in meanwhile cannot make
 * the read block or run past the cap.
 */
export function readConfigText(file: string): string {
  const bytes = readBounded(file)
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw new YokeError(
      'CONFIG_NOT_TEXT',
      { file, reason: 'invalid UTF-8' },
      { file, line: 1, col: 1 },
    )
  }
  const nul = text.indexOf('\u0000')
  if (nul >= 0)
    throw new YokeError(
      'CONFIG_NOT_TEXT',
      { file, reason: 'it contains NUL bytes' },
      { file, ...lineCol(text, nul) },
    )
  return text
}

const KINDS = {
  FIFO: 'a FIFO',
  CharacterDevice: 'a character device',
  BlockDevice: 'a block device',
  Socket: 'a socket',
  Directory: 'a directory',
} as const

/** The file's bytes: stat says it is a regular file under the cap before it is opened, fstat again after. */
function readBounded(file: string): Buffer {
  const check = (stat: Stats) => {
    if (!stat.isFile()) {
      const kind = Object.entries(KINDS).find(([k]) => stat[`is${k as keyof typeof KINDS}`]())
      const what = kind?.[1] ?? 'of another kind'
      throw Object.assign(new Error(`it is not a regular file (${what})`), { code: 'ENOTFILE' })
    }
    if (stat.size > LIMITS.bytes) tooLarge(stat.size)
  }
  const tooLarge = (size: number | string) => {
    throw new YokeError('CONFIG_TOO_LARGE', { file, size, limit: LIMITS.bytes }, { file })
  }
  let fd: number | undefined
  try {
    check(statSync(file)) // a FIFO or a device is refused without being opened
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0)) // never blocks
    check(fstatSync(fd)) // what was opened, in case the path was swapped meanwhile
    // read at most one byte past the cap: a file that grows while it is read is still bounded
    const buffer = Buffer.alloc(LIMITS.bytes + 1)
    let length = 0
    for (let n; (n = readSync(fd, buffer, length, buffer.length - length, null)) > 0;) {
      length += n
      if (length > LIMITS.bytes) tooLarge(`more than ${LIMITS.bytes}`)
    }
    return buffer.subarray(0, length)
  } catch (err) {
    if (err instanceof YokeError) throw err
    const code =
      (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'CONFIG_NOT_FOUND' : 'CONFIG_READ_FAILED'
    throw new YokeError(
      code,
      { kind: 'file', name: file, file, reason: (err as Error).message },
      { file, cause: err },
    )
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

export function parseConfigText(text: string, file: string): ParsedFile {
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, {
    lineCounter,
    uniqueKeys: true,
    merge: true,
    prettyErrors: false,
  })
  const at = (offset: number | undefined) => {
    const { line, col } = lineCounter.linePos(offset ?? 0)
    return { file, line, col }
  }
  const first = doc.errors[0]
  if (first) {
    const code: ErrorCode =
      first.code === 'DUPLICATE_KEY'
        ? 'CONFIG_DUPLICATE_KEY'
        : first.code === 'RESOURCE_EXHAUSTION'
          ? 'CONFIG_TOO_DEEP'
          : 'CONFIG_SYNTAX'
    const key =
      code === 'CONFIG_DUPLICATE_KEY'
        ? `"${text.slice(first.pos[0]).split(/[:\n]/)[0].trim()}"`
        : ''
    // an unclosed quote is reported at the end of the file; point at where it opened instead
    const quote =
      first.code === 'MISSING_CHAR' && /quote/.test(first.message)
        ? text.lastIndexOf(first.message.includes('"') ? '"' : "'", first.pos[0] - 1)
        : -1
    throw new YokeError(
      code,
      { reason: first.message, key, limit: LIMITS.depth },
      at(quote >= 0 ? quote : first.pos[0]),
    )
  }
  // an alias with no anchor before it: a syntax error at the alias, not a crash in toJS
  let unresolved: Alias | undefined
  visit(doc, {
    Alias(_, node) {
      if (node.resolve(doc)) return undefined
      unresolved = node
      return visit.BREAK
    },
  })
  if (unresolved)
    throw new YokeError(
      'CONFIG_SYNTAX',
      {
        reason: `the alias *${unresolved.source} has no anchor &${unresolved.source} before it`,
      },
      at(unresolved.range?.[0]),
    )
  let value: unknown
  try {
    value = doc.toJS({ maxAliasCount: LIMITS.aliases })
  } catch (err) {
    const msg = (err as Error).message
    const code: ErrorCode = /alias/i.test(msg) ? 'CONFIG_ALIAS_LIMIT' : 'CONFIG_TOO_DEEP'
    throw new YokeError(code, { reason: msg, limit: LIMITS.depth }, { ...at(0), cause: err })
  }
  const positions = new Map<string, Position>()
  const keys = new Map<string, Position>()
  if (doc.contents) walk(doc, doc.contents as Node, [], { positions, keys }, at, 0)
  return { file, value: value ?? {}, positions, keys }
}

/** Records the position of every node under `node`; aliases and merge keys are followed. */
type Out = { positions: Map<string, Position>; keys: Map<string, Position> }
function walk(
  doc: Document,
  node: Node,
  path: Path,
  out: Out,
  at: (o?: number) => Position,
  depth: number,
  keyPos?: Position,
) {
  if (depth > LIMITS.depth)
    throw new YokeError('CONFIG_TOO_DEEP', { limit: LIMITS.depth }, at(node.range?.[0]))
  out.positions.set(pathKey(path), keyPos ?? at(node.range?.[0]))
  if (isAlias(node)) {
    const target = node.resolve(doc)
    if (target && !isScalar(target))
      walk(doc, target as Node, path, out, at, depth + 1, at(node.range?.[0]))
  } else if (isMap(node)) {
    for (const pair of node.items) {
      if (!isPair(pair)) continue
      // the key as toJS names it; an alias or a collection as a key would hide what it names from
      // every check by path (trust, the schema's positions), so it is refused
      if (!isScalar(pair.key) && pair.key !== null)
        throw new YokeError(
          'CONFIG_SYNTAX',
          { reason: 'a key must be written out: an alias or a collection cannot be a key' },
          at((pair.key as Node).range?.[0]),
        )
      const key = pair.key?.value === null ? '' : String(pair.key?.value ?? '')
      const value = pair.value as Node | null
      const isMergeKey =
        isScalar(pair.key) && (pair.key.value === '<<' || typeof pair.key.value === 'symbol')
      if (isMergeKey && value) {
        const sources = isSeq(value) ? (value.items as Node[]) : [value]
        const own = out.positions.get(pathKey(path))
        for (const src of sources) walk(doc, src, path, out, at, depth + 1, own)
        out.positions.set(pathKey(path), own!) // the mapping stays where it is written
        continue
      }
      const keyAt = at((pair.key as Node | null)?.range?.[0])
      out.keys.set(pathKey([...path, key]), keyAt)
      // a collection is placed at its key, a scalar at its value
      const place = isMap(value) || isSeq(value) || !value?.range ? keyAt : at(value.range[0])
      if (value) walk(doc, value, [...path, key], out, at, depth + 1, place)
      else out.positions.set(pathKey([...path, key]), keyAt)
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => walk(doc, item as Node, [...path, i], out, at, depth + 1))
  }
}

function lineCol(text: string, offset: number) {
  const before = text.slice(0, offset).split('\n')
  return { line: before.length, col: before.at(-1)!.length + 1 }
}

/** The position of `path`, or of its nearest ancestor that has one. */
export function locate(positions: Map<string, Position>, path: Path): Position | undefined {
  for (let n = path.length; n >= 0; n--) {
    const pos = positions.get(pathKey(path.slice(0, n)))
    if (pos) return pos
  }
  return undefined
}
