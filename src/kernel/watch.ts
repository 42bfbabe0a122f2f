/**
 * @module kernel/watch
 * Debounced file watching over chokidar. A burst of events becomes one handler call with the
 * distinct paths that changed; the handler never runs after the watcher is closed. A path that
 * does not exist yet is watched through its nearest existing directory: chokidar itself arms such
 * a watch only some milliseconds after 'ready' (and never when the parent is missing too).
 *
 * A changed file is handed over once it has settled: no event for the quiet time, and the same
 * (size, inode, mtime) as at its last event. A file seen still changing, or empty (truncated, its
 * write yet to come), waits the slow window instead, chokidar's former write-finish threshold. A
 * save the usual way (one write, or a temp file renamed over it) is whole at its first event, so
 * it costs only the quiet time; a writer pausing longer than the window between chunks is not
 * told apart from two saves (as with any stability window). fs.watch's raw events count too:
 * chokidar drops a change within 50 ms of the last one it reported, which would lose a quick
 * second save; a raw event alone is a change only if the file differs from what was handed over
 * (reading a file touches its atime, not its print).
 */
import { existsSync, statSync } from 'node:fs'
import { basename, dirname, join, resolve, sep } from 'node:path'
import { watch, type FSWatcher } from 'chokidar'

export interface FileChange {
  event: 'add' | 'change' | 'unlink' | 'addDir' | 'unlinkDir'
  path: string
}

export type WatchHandler = (changes: FileChange[]) => void | Promise<void>

export interface WatchOptions {
  /**
   * quiet time before the handler runs (default 15 ms): no event, and each changed file as it was
   * at its last event; a file seen changing meanwhile, or empty, waits 40 ms (or this, if longer)
   */
  debounceMs?: number
  /** paths for which this returns true are not watched */
  ignored?: (path: string) => boolean
}

export class DebouncedWatcher {
  readonly #watcher: FSWatcher
  readonly #ready: Promise<void>
  readonly #quietMs: number
  #pending = new Map<string, FileChange>()
  /** each path of this burst (chokidar's events and raw ones) with its print at its last sight */
  #prints = new Map<string, string>()
  /** each file's print as last handed over (or at start): what a raw event is compared with */
  #known = new Map<string, string>()
  #slow = false
  #timer: NodeJS.Timeout | undefined
  #closed = false
  readonly #handOver: (changes: FileChange[]) => void

  constructor(
    paths: string[],
    handler: WatchHandler,
    onError: (err: unknown) => void,
    options: WatchOptions = {},
  ) {
    this.#handOver = (changes) => void Promise.resolve(changes).then(handler).catch(onError)
    this.#quietMs = options.debounceMs ?? 15
    const requested = new Set(paths.map((p) => resolve(p)))
    // a missing path is watched from its nearest existing directory; on the way down only the
    // directories that lead to it count, so a sibling tree is never walked
    const roots = new Set([...requested].map((p) => (existsSync(p) ? p : nearestDir(p))))
    const ancestors = new Set([...requested].flatMap((p) => lineage(p)))
    const wanted = (p: string) =>
      requested.has(p) || [...requested].some((r) => p.startsWith(r + sep))
    const ignored = (p: string) => !(wanted(p) || ancestors.has(p)) || Boolean(options.ignored?.(p))
    for (const p of requested) if (!ignored(p) && print(p) !== '-') this.#known.set(p, print(p))
    this.#watcher = watch([...roots], {
      ignoreInitial: true,
      ignored,
      atomic: 50,
      ignorePermissionErrors: true,
    })
    this.#ready = new Promise((resolve) => this.#watcher.once('ready', () => resolve()))
    this.#watcher.on('all', (event, path) => {
      if (!wanted(path)) return // the parent directory itself
      this.#pending.set(path, { event: event as FileChange['event'], path })
      this.#seen(path)
    })
    this.#watcher.on('raw', (_event, name, details) => {
      const { watchedPath } = details as { watchedPath: string }
      const path = basename(watchedPath) === name ? watchedPath : join(watchedPath, name ?? '')
      if (this.#known.has(path) || this.#prints.has(path)) this.#seen(path)
    })
    this.#watcher.on('error', onError)
  }

  /** An event on `path`: the quiet time starts again; a file that moved since, or is empty, is slow. */
  #seen(path: string) {
    const now = print(path)
    if (now !== (this.#prints.get(path) ?? now) || now.startsWith('0:')) this.#slow = true
    this.#prints.set(path, now)
    clearTimeout(this.#timer)
    // the slow window: chokidar's former write-finish threshold
    const ms = this.#slow ? Math.max(40, this.#quietMs) : this.#quietMs
    this.#timer = setTimeout(() => this.#settle(), ms)
  }

  /** Hands the burst over if every file is as it was at its last sight; else waits again. */
  #settle() {
    const moved = [...this.#prints].find(([path, before]) => print(path) !== before)
    if (moved) return this.#seen(moved[0])
    const changes = [...this.#pending.values()]
    for (const [path, now] of this.#prints) {
      if (!this.#pending.has(path) && now !== '-' && now !== this.#known.get(path))
        changes.push({ event: 'change', path })
      this.#known.set(path, now)
    }
    this.#pending = new Map()
    this.#prints = new Map()
    this.#slow = false
    if (!this.#closed && changes.length) this.#handOver(changes)
  }

  /** Resolves when the initial scan is done: changes from then on are seen. */
  ready(): Promise<void> {
    return this.#ready
  }

  async close(): Promise<void> {
    this.#closed = true
    clearTimeout(this.#timer)
    await this.#watcher.close()
    this.#watcher.on('error', () => {}) // close() drops listeners; a scan still in flight may yet fail
  }
}

/** The nearest directory above `path` that exists. */
function nearestDir(path: string): string {
  let dir = dirname(path)
  while (!statSync(dir, { throwIfNoEntry: false })?.isDirectory() && dirname(dir) !== dir)
    dir = dirname(dir)
  return dir
}

/** size, inode and mtime ('-' when missing or not a file): a file's state, cheap to compare. */
function print(path: string): string {
  try {
    const stat = statSync(path, { throwIfNoEntry: false, bigint: true })
    return stat?.isFile() ? `${stat.size}:${stat.ino}:${stat.mtimeNs}` : '-'
  } catch {
    return '-' // e.g. ENOTDIR: a parent is a file, so this file cannot exist
  }
}

/** Every directory above `path`, up to the root. */
function lineage(path: string): string[] {
  const dirs: string[] = []
  for (let dir = dirname(path); dirs.at(-1) !== dir; dir = dirname(dir)) dirs.push(dir)
  return dirs
}
