/**
 * @module kernel/watch
 * Debounced file watching over chokidar. A burst of events becomes one handler call with the
 * distinct paths that changed; the handler never runs after the watcher is closed. A path that
 * does not exist yet is watched through its nearest existing directory: chokidar itself arms such
 * a watch only some milliseconds after 'ready' (and never when the parent is missing too).
 */
import { existsSync, statSync } from 'node:fs'
import { dirname, resolve, sep } from 'node:path'
import { watch, type FSWatcher } from 'chokidar'

export interface FileChange {
  event: 'add' | 'change' | 'unlink' | 'addDir' | 'unlinkDir'
  path: string
}

export type WatchHandler = (changes: FileChange[]) => void | Promise<void>

export interface WatchOptions {
  /** quiet time before the handler runs (default 30 ms, after the file stopped changing for 40 ms) */
  debounceMs?: number
  /** paths for which this returns true are not watched */
  ignored?: (path: string) => boolean
}

export class DebouncedWatcher {
  readonly #watcher: FSWatcher
  readonly #ready: Promise<void>
  #pending = new Map<string, FileChange>()
  #timer: NodeJS.Timeout | undefined
  #closed = false

  constructor(
    paths: string[],
    handler: WatchHandler,
    onError: (err: unknown) => void,
    options: WatchOptions = {},
  ) {
    const requested = new Set(paths.map((p) => resolve(p)))
    // a missing path is watched from its nearest existing directory; on the way down only the
    // directories that lead to it count, so a sibling tree is never walked
    const roots = new Set([...requested].map((p) => (isDirOrFile(p) ? p : nearestDir(p))))
    const ancestors = new Set([...requested].flatMap((p) => lineage(p)))
    const wanted = (p: string) =>
      requested.has(p) || [...requested].some((r) => p.startsWith(r + sep))
    const ignored = (p: string) => !(wanted(p) || ancestors.has(p)) || Boolean(options.ignored?.(p))
    // awaitWriteFinish: a file written in place (truncate, then write) is reported once it stops
    // changing, so a half-written config is not read as an empty one
    this.#watcher = watch([...roots], {
      ignoreInitial: true,
      ignored,
      atomic: 50,
      ignorePermissionErrors: true,
      awaitWriteFinish: { stabilityThreshold: 40, pollInterval: 10 },
    })
    this.#ready = new Promise((resolve) => this.#watcher.once('ready', () => resolve()))
    const flush = () => {
      this.#timer = undefined
      const changes = [...this.#pending.values()]
      this.#pending = new Map()
      if (this.#closed || !changes.length) return
      Promise.resolve()
        .then(() => handler(changes))
        .catch(onError)
    }
    this.#watcher.on('all', (event, path) => {
      if (!wanted(path)) return // the parent directory itself
      this.#pending.set(path, { event: event as FileChange['event'], path })
      clearTimeout(this.#timer)
      this.#timer = setTimeout(flush, options.debounceMs ?? 30)
    })
    this.#watcher.on('error', onError)
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

function isDirOrFile(path: string): boolean {
  return existsSync(path)
}

/** The nearest directory above `path` that exists. */
function nearestDir(path: string): string {
  let dir = dirname(path)
  while (!isDirectory(dir) && dirname(dir) !== dir) dir = dirname(dir)
  return dir
}

function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false
}

/** Every directory above `path`, up to the root. */
function lineage(path: string): string[] {
  const dirs: string[] = []
  for (let dir = dirname(path); dirs.at(-1) !== dir; dir = dirname(dir)) dirs.push(dir)
  return dirs
}
