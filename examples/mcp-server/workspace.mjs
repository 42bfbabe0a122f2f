// The read-only view of one directory tree that the workspace MCP server serves. Every path a client
// names is relative to the root and checked twice: lexically (no absolute paths, no `..` out of the
// root) and on disk (its real path, symlinks resolved, must still be inside the root). `.git` is
// never served (remote URLs can hold tokens); node_modules and the other SKIPPED_DIRS are skipped
// when walking but can be named directly. Every answer is bounded (LIMITS).
import { lstat, open, opendir, realpath, stat } from 'node:fs/promises'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { compileGlob, GlobError } from './glob.mjs'

const KiB = 1024
const MiB = 1024 * KiB

export const LIMITS = Object.freeze({
  /** read_file, search_text and file_info's line count: bigger files are refused or skipped */
  fileBytes: 16 * MiB,
  /** resources: binary files up to this are served as base64 blobs */
  blobBytes: 1 * MiB,
  /** the text of any one answer */
  outputChars: 64 * KiB,
  /** one line of read_file output (longer lines are cut, and say so) */
  lineChars: 2000,
  /** one line of search_text output (a window around the match) */
  matchChars: 240,
  /** directory entries one walk visits before it stops (and says so) */
  walkEntries: 50_000,
  /** bytes one search reads before it stops (and says so) */
  searchBytes: 256 * MiB,
  /** the deepest a walk goes */
  depth: 32,
})

/** Skipped when walking (list_files, search_text, resources); naming one as `path` still works. */
export const SKIPPED_DIRS = Object.freeze(['node_modules', '.git', '.hg', '.svn', '.yoke'])

/** A refusal the client should see as it is: the message says what to do instead. */
export class WorkspaceError extends Error {}

const toPosix = (p) => (sep === '/' ? p : p.split(sep).join('/'))
const inside = (root, p) => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep)

export function formatBytes(n) {
  if (n < KiB) return `${n} B`
  if (n < MiB) return `${(n / KiB).toFixed(1)} KiB`
  return `${(n / MiB).toFixed(1)} MiB`
}

export class Workspace {
  /** @param {string} root an existing directory; symlinks in it are resolved */
  static async open(root) {
    const real = await realpath(root).catch(() => {
      throw new WorkspaceError(`the workspace root ${root} does not exist`)
    })
    if (!(await stat(real)).isDirectory())
      throw new WorkspaceError(`the workspace root ${root} is not a directory`)
    return new Workspace(real)
  }

  constructor(root) {
    this.root = root
  }

  /**
   * A client's path → { abs (the real path), rel (posix, as the client should write it) }.
   * Refuses absolute paths, escapes (`..`, or a symlink whose target is outside the root), `.git`.
   */
  async resolve(path = '.') {
    if (typeof path !== 'string') throw new WorkspaceError('path must be a string')
    if (path.includes('\0')) throw new WorkspaceError('path contains a NUL byte')
    if (isAbsolute(path) || /^[A-Za-z]:[\\/]/.test(path)) {
      throw new WorkspaceError(
        `"${path}" is an absolute path: paths are relative to the workspace root (${this.root}), e.g. "src/index.ts"`,
      )
    }
    const lexical = resolve(this.root, path)
    if (!inside(this.root, lexical))
      throw new WorkspaceError(
        `"${path}" is outside the workspace root: paths may not climb above it with ..`,
      )
    const rel = toPosix(relative(this.root, lexical)) || '.'
    this.#refuseGit(rel, path)
    let real
    try {
      real = await realpath(lexical)
    } catch (err) {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR')
        throw new WorkspaceError(`"${rel}" does not exist${await this.#missingHint(lexical)}`)
      if (err.code === 'ELOOP') throw new WorkspaceError(`"${rel}" is a symlink loop`)
      if (err.code === 'EACCES')
        throw new WorkspaceError(`"${rel}" is not readable (permission denied)`)
      throw err
    }
    if (!inside(this.root, real))
      throw new WorkspaceError(
        `"${rel}" is a symlink (or is under one) that points outside the workspace root; it is not served`,
      )
    this.#refuseGit(toPosix(relative(this.root, real)) || '.', path)
    return { abs: real, rel }
  }

  #refuseGit(rel, path) {
    if (rel.split('/').some((part) => part.toLowerCase() === '.git'))
      throw new WorkspaceError(
        `"${path}" is inside .git, which this server does not serve (it can hold credentials)`,
      )
  }

  async #missingHint(lexical) {
    const parent = resolve(lexical, '..')
    const exists = await stat(parent).then(
      (s) => s.isDirectory(),
      () => false,
    )
    return exists && inside(this.root, parent)
      ? `; list_files "${toPosix(relative(this.root, parent)) || '.'}" shows what is there`
      : ''
  }

  /**
   * Walks `start` depth-first in name order, yielding { rel, abs, type } for each entry below it.
   * Symlinks are reported, never followed; SKIPPED_DIRS are noted in `stats.skipped`, not entered.
   */
  async *walk(start, { depth = LIMITS.depth, stats = newStats() } = {}) {
    const stack = [{ abs: start.abs, rel: start.rel === '.' ? '' : start.rel, level: 1 }]
    while (stack.length) {
      const dir = stack.pop()
      let entries
      try {
        entries = []
        for await (const e of await opendir(dir.abs)) {
          entries.push(e)
          if (++stats.visited > LIMITS.walkEntries) break
        }
      } catch {
        stats.unreadable++
        continue
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      const below = []
      for (const e of entries) {
        const rel = dir.rel ? `${dir.rel}/${e.name}` : e.name
        const abs = join(dir.abs, e.name)
        const type = e.isSymbolicLink()
          ? 'symlink'
          : e.isDirectory()
            ? 'directory'
            : e.isFile()
              ? 'file'
              : 'other'
        if (type === 'directory' && SKIPPED_DIRS.includes(e.name)) {
          stats.skipped.add(e.name)
          continue
        }
        yield { rel, abs, type }
        if (type === 'directory' && dir.level < depth)
          below.push({ abs, rel, level: dir.level + 1 })
      }
      if (stats.visited > LIMITS.walkEntries) {
        stats.stopped = `the walk stopped after ${LIMITS.walkEntries} entries`
        return
      }
      stack.push(...below.reverse())
    }
  }

  /** list_files */
  async list({ path = '.', glob, depth, limit = 200 }) {
    const start = await this.resolve(path)
    if (!(await stat(start.abs)).isDirectory())
      throw new WorkspaceError(
        `"${start.rel}" is a file, not a directory: file_info or read_file it`,
      )
    const match = glob ? compile(glob) : undefined
    const stats = newStats()
    const entries = []
    let more = false
    for await (const entry of this.walk(start, {
      depth: Math.min(depth ?? (glob ? LIMITS.depth : 1), LIMITS.depth),
      stats,
    })) {
      const relToStart = start.rel === '.' ? entry.rel : entry.rel.slice(start.rel.length + 1)
      if (match && !match(relToStart)) continue
      if (entries.length === limit) {
        more = true
        break
      }
      const info = await lstat(entry.abs).catch(() => undefined)
      entries.push({
        path: entry.rel,
        type: entry.type,
        ...(entry.type === 'file' && info && { size: info.size }),
      })
    }
    const lines = []
    let shown = 0
    let chars = 0
    for (const e of entries) {
      const line =
        e.type === 'directory'
          ? `${e.path}/`
          : e.type === 'file'
            ? `${e.path}  ${formatBytes(e.size ?? 0)}`
            : `${e.path}  (${e.type})`
      if (chars + line.length > LIMITS.outputChars) {
        more = true
        break
      }
      lines.push(line)
      chars += line.length + 1
      shown++
    }
    const notes = []
    if (!shown)
      notes.push(glob ? `nothing under "${start.rel}" matches ${glob}` : `"${start.rel}" is empty`)
    if (more)
      notes.push(
        `${shown} entries shown; there are more: narrow path or glob, or raise limit (at most 2000)`,
      )
    if (stats.stopped) notes.push(stats.stopped)
    if (stats.skipped.size)
      notes.push(`skipped ${[...stats.skipped].join(', ')} (name one as path to list it)`)
    if (stats.unreadable) notes.push(`${stats.unreadable} directories could not be read`)
    return {
      text: [...lines, ...notes.map((n) => `[${n}]`)].join('\n'),
      structured: {
        root: this.root,
        path: start.rel,
        entries: entries.slice(0, shown),
        truncated: more || Boolean(stats.stopped),
        skipped: [...stats.skipped],
      },
    }
  }

  /** read_file: numbered lines from `offset` (1-based), `limit` of them, within LIMITS.outputChars. */
  async read({ path, offset = 1, limit = 400 }) {
    const { abs, rel } = await this.resolve(path)
    const buffer = await this.#readText(abs, rel)
    const lines = buffer.toString('utf8').split(/\r?\n/)
    if (lines.at(-1) === '') lines.pop() // a final newline ends the last line; it does not start one
    if (!lines.length) return { text: `(${rel} is empty)`, structured: undefined }
    if (offset > lines.length)
      throw new WorkspaceError(
        `offset ${offset} is past the end of "${rel}", which has ${lines.length} lines`,
      )
    const out = []
    let chars = 0
    let last = offset - 1
    for (let n = offset; n < offset + limit && n <= lines.length; n++) {
      let line = lines[n - 1]
      if (line.length > LIMITS.lineChars)
        line = `${line.slice(0, LIMITS.lineChars)} … [line cut: ${line.length} characters]`
      const numbered = `${String(n).padStart(6)}\t${line}`
      if (chars + numbered.length > LIMITS.outputChars && out.length) break
      out.push(numbered)
      chars += numbered.length + 1
      last = n
    }
    const footer =
      last < lines.length
        ? `[lines ${offset}-${last} of ${lines.length}; read on with offset ${last + 1}]`
        : offset > 1
          ? `[lines ${offset}-${last} of ${lines.length}]`
          : undefined
    return { text: [...out, ...(footer ? [footer] : [])].join('\n') }
  }

  /** The bytes of a text file, or a clear refusal (a directory, too big, binary). */
  async #readText(abs, rel) {
    const info = await stat(abs)
    if (info.isDirectory()) throw new WorkspaceError(`"${rel}" is a directory: list_files it`)
    if (!info.isFile()) throw new WorkspaceError(`"${rel}" is not a regular file`)
    if (info.size > LIMITS.fileBytes) {
      throw new WorkspaceError(
        `"${rel}" is ${formatBytes(info.size)}, over the ${formatBytes(LIMITS.fileBytes)} this server reads: search_text cannot read it either; use another tool for large files`,
      )
    }
    const buffer = await readCapped(abs, LIMITS.fileBytes)
    if (isBinary(buffer))
      throw new WorkspaceError(
        `"${rel}" is a binary file (${formatBytes(info.size)}): read_file returns text only; file_info describes it`,
      )
    return buffer
  }

  /** file_info */
  async info({ path }) {
    const { abs, rel } = await this.resolve(path)
    const link = await lstat(resolve(this.root, rel))
    const info = await stat(abs)
    const type = info.isDirectory() ? 'directory' : info.isFile() ? 'file' : 'other'
    const out = { path: rel, type, size: info.size, modified: info.mtime.toISOString() }
    if (link.isSymbolicLink()) out.symlinkTo = toPosix(relative(this.root, abs)) || '.'
    if (type === 'directory') {
      let count = 0
      for await (const _ of await opendir(abs)) if (++count >= 10_000) break
      out.entries = count
    }
    if (type === 'file' && info.size <= LIMITS.fileBytes) {
      const buffer = await readCapped(abs, LIMITS.fileBytes)
      out.binary = isBinary(buffer)
      if (!out.binary) out.lines = countLines(buffer)
    }
    const text = [
      `${rel}: ${type}${out.symlinkTo ? ` (a symlink to ${out.symlinkTo})` : ''}`,
      type === 'file' &&
        `size ${formatBytes(info.size)}${out.binary ? ', binary' : out.lines !== undefined ? `, ${out.lines} lines of text` : ', too large to inspect'}`,
      type === 'directory' && `${out.entries}${out.entries >= 10_000 ? '+' : ''} entries`,
      `modified ${out.modified}`,
    ].filter(Boolean)
    return { text: text.join('\n'), structured: out }
  }

  /** A resource: text, or a base64 blob for binary files up to LIMITS.blobBytes. */
  async resource(rel) {
    const { abs, rel: clean } = await this.resolve(rel)
    const info = await stat(abs)
    if (!info.isFile()) throw new WorkspaceError(`"${clean}" is not a file`)
    const mimeType = mimeOf(clean)
    if (info.size <= LIMITS.fileBytes) {
      const buffer = await readCapped(abs, LIMITS.fileBytes)
      if (!isBinary(buffer))
        return { text: buffer.toString('utf8'), mimeType: mimeType ?? 'text/plain' }
      if (buffer.length <= LIMITS.blobBytes)
        return { blob: buffer.toString('base64'), mimeType: mimeType ?? 'application/octet-stream' }
    }
    throw new WorkspaceError(
      `"${clean}" is ${formatBytes(info.size)}: too large to serve as a resource`,
    )
  }
}

export function newStats() {
  return { visited: 0, skipped: new Set(), unreadable: 0, stopped: undefined }
}

export function compile(glob) {
  try {
    return compileGlob(glob)
  } catch (err) {
    if (err instanceof GlobError) throw new WorkspaceError(`bad glob "${glob}": ${err.message}`)
    throw err
  }
}

/** Reads at most `max` bytes (the file may grow between stat and read). */
export async function readCapped(abs, max) {
  const handle = await open(abs, 'r')
  try {
    const buffer = Buffer.allocUnsafe(Math.min(max, (await handle.stat()).size))
    let filled = 0
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled)
      if (!bytesRead) break
      filled += bytesRead
    }
    return buffer.subarray(0, filled)
  } finally {
    await handle.close()
  }
}

/** Binary: a NUL byte in the first 8 KiB (what git and grep look at). */
export function isBinary(buffer) {
  return buffer.subarray(0, 8 * KiB).includes(0)
}

function countLines(buffer) {
  if (!buffer.length) return 0
  let n = 0
  for (let i = buffer.indexOf(10); i >= 0; i = buffer.indexOf(10, i + 1)) n++
  return buffer[buffer.length - 1] === 10 ? n : n + 1
}

const MIME = {
  md: 'text/markdown',
  json: 'application/json',
  js: 'text/javascript',
  mjs: 'text/javascript',
  ts: 'text/typescript',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  html: 'text/html',
  css: 'text/css',
  csv: 'text/csv',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  svg: 'image/svg+xml',
  pdf: 'application/pdf',
}

function mimeOf(rel) {
  return MIME[rel.slice(rel.lastIndexOf('.') + 1).toLowerCase()]
}
