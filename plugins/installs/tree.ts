/**
 * The hash of an installed tree, the same on every machine: each entry's relative path (with `/`,
 * sorted by code unit), its type, for a file its executable bit and the sha256 of its bytes, for a
 * symlink the sha256 of its target text (installs never hold one: a link that appears later makes
 * the hash differ instead of being followed). Empty directories count too.
 *
 * What it covers is what the author shipped: run-time caches a plugin's own code writes into its
 * folder are left out (`isCache`: Python's `__pycache__/*.pyc`, `node_modules/.cache/`, macOS's
 * `.DS_Store`), and `yoke add` does not copy them. Anything else that appears, changes or goes,
 * a new script included, makes the hash differ.
 *
 * Files are hashed as streams, never read whole, and the work is bounded: a tree past
 * `TREE_LIMITS` (more bytes or entries than an install can hold) is not hashed at all, it is
 * refused as changed, saying why (`TreeTooLarge`).
 */
import { createHash } from 'node:crypto'
import { constants, lstatSync, readdirSync, readlinkSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'

/** One entry of a tree: `f` file (`x` when executable), `d` directory, `l` symlink. */
export interface TreeEntry {
  path: string
  type: 'f' | 'x' | 'd' | 'l'
  sha256: string
}

/**
 * The bounds of one tree's hash. `yoke add` copies at most 500 MB (copy.ts) plus one downloaded
 * executable of at most 200 MB (download.ts), and a tarball unpacks to at most 20,000 entries:
 * an installed tree past these was not made by `yoke add`.
 */
export const TREE_LIMITS = { bytes: 1024 * 1024 * 1024, entries: 100_000 }

/** A tree past TREE_LIMITS: not hashed, its message says what is too large. */
export class TreeTooLarge extends Error {}

const sha = (data: string | Buffer) => createHash('sha256').update(data).digest('hex')

/**
 * Whether a path of an installed tree (relative, `/`-separated) is a run-time cache, left out of
 * its hash and of `yoke add`'s copy. Short on purpose; each is written by the plugin's own runtime,
 * not by its author:
 * - `__pycache__/NAME.pyc` (and the folder): CPython's bytecode cache (PEP 3147), written beside
 *   each imported module, so a plugin whose hooks run Python writes it on first use. Only `.pyc`
 *   files in it are left out: anything else in `__pycache__` counts.
 * - `node_modules/.cache/`: where Node tools (babel, eslint, find-cache-dir) keep their caches.
 * - `.DS_Store`: written by macOS Finder into any folder it shows.
 */
export function isCache(path: string, dir: boolean): boolean {
  const parts = path.split('/')
  const name = parts[parts.length - 1]!
  const parent = parts[parts.length - 2]
  if (dir) return name === '__pycache__' || (name === '.cache' && parent === 'node_modules')
  return name === '.DS_Store' || (parent === '__pycache__' && /\.py[co]$/.test(name))
}

/** Whether the path lies inside a cache folder (`a/__pycache__/x.pyc`, `node_modules/.cache/x`). */
function inCacheFolder(path: string): boolean {
  const parts = path.split('/')
  for (let i = 1; i < parts.length; i++)
    if (parts[i] === '.cache' && parts[i - 1] === 'node_modules') return true
  return false
}

/**
 * The sha256 of a file's bytes, streamed. Opened non-blocking and checked through its descriptor
 * (a FIFO swapped in is not read); `size`, when given, is what lstat said: a file that grew or
 * shrank meanwhile gives a different hash (the tree changed), and no more than size + 1 bytes
 * are read.
 */
export async function sha256File(file: string, size?: number): Promise<string> {
  const handle = await open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0))
  try {
    const stat = await handle.stat()
    if (!stat.isFile()) return sha(`not a file ${stat.mode}`)
    const hash = createHash('sha256')
    let read = 0
    const stream = handle.createReadStream({
      autoClose: false,
      ...(size !== undefined && { end: size }),
    })
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      read += chunk.length
      hash.update(chunk)
    }
    const digest = hash.digest('hex')
    return size !== undefined && read !== size ? sha(`changed while read ${digest}`) : digest
  } finally {
    await handle.close()
  }
}

interface Walked {
  path: string
  abs: string
  type: TreeEntry['type']
  size: number
  link?: string
  special?: number
}

/** Every entry under `root` (caches left out), sorted by path; files hashed one at a time. */
export async function listTree(root: string, limits = TREE_LIMITS): Promise<TreeEntry[]> {
  const walked: Walked[] = []
  let bytes = 0
  let biggest: Walked | undefined
  const walk = (dir: string, prefix: string) => {
    for (const name of readdirSync(dir)) {
      const abs = join(dir, name)
      const path = prefix ? `${prefix}/${name}` : name
      const stat = lstatSync(abs)
      if (walked.length >= limits.entries)
        throw new TreeTooLarge(`it holds more than ${limits.entries} files and folders`)
      if (stat.isDirectory()) {
        if (!isCache(path, true) && !inCacheFolder(path))
          walked.push({ path, abs, type: 'd', size: 0 })
        walk(abs, path)
      } else if (isCache(path, false) || inCacheFolder(path)) continue
      else if (stat.isSymbolicLink())
        walked.push({ path, abs, type: 'l', size: 0, link: readlinkSync(abs) })
      else if (stat.isFile()) {
        const entry: Walked = { path, abs, type: stat.mode & 0o111 ? 'x' : 'f', size: stat.size }
        walked.push(entry)
        bytes += stat.size
        if (!biggest || stat.size > biggest.size) biggest = entry
        if (bytes > limits.bytes)
          throw new TreeTooLarge(
            `it holds more than ${limits.bytes} bytes (${biggest.path} alone is ${biggest.size}), more than an install can`,
          )
      } else walked.push({ path, abs, type: 'l', size: 0, special: stat.mode })
    }
  }
  walk(root, '')
  const out: TreeEntry[] = []
  for (const w of walked)
    out.push({
      path: w.path,
      type: w.type,
      sha256:
        w.type === 'd'
          ? ''
          : w.link !== undefined
            ? sha(w.link)
            : w.special !== undefined
              ? sha(`special file ${w.special}`)
              : await sha256File(w.abs, w.size).catch((err: NodeJS.ErrnoException) =>
                  sha(`unreadable ${err.code ?? err.message}`),
                ),
    })
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/** The tree's hash (hex). */
export function hashTree(entries: TreeEntry[]): string {
  const hash = createHash('sha256')
  for (const e of entries) hash.update(`${e.type} ${e.sha256} ${e.path}\n`)
  return hash.digest('hex')
}

export interface TreeDiff {
  added: string[]
  changed: string[]
  removed: string[]
}

/** The files (not directories) added, changed (content or executable bit) and removed. */
export function diffTrees(before: TreeEntry[], after: TreeEntry[]): TreeDiff {
  const files = (list: TreeEntry[]) =>
    new Map(list.filter((e) => e.type !== 'd').map((e) => [e.path, e]))
  const a = files(before)
  const b = files(after)
  return {
    added: [...b.keys()].filter((p) => !a.has(p)),
    changed: [...b.keys()].filter(
      (p) =>
        a.has(p) && (a.get(p)!.sha256 !== b.get(p)!.sha256 || a.get(p)!.type !== b.get(p)!.type),
    ),
    removed: [...a.keys()].filter((p) => !b.has(p)),
  }
}
