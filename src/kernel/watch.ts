/**
 * @module kernel/watch
 * Debounced file watching over chokidar. A burst of events becomes one handler call with the
 * distinct paths that changed; the handler never runs after the watcher is closed. Paths may
 * be files that do not exist yet: they are reported when they appear.
 */
import { watch, type FSWatcher } from 'chokidar'

export interface FileChange {
  event: 'add' | 'change' | 'unlink' | 'addDir' | 'unlinkDir'
  path: string
}

export type WatchHandler = (changes: FileChange[]) => void | Promise<void>

export interface WatchOptions {
  /** quiet time before the handler runs (default 50 ms) */
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

  constructor(paths: string[], handler: WatchHandler, onError: (err: unknown) => void, options: WatchOptions = {}) {
    this.#watcher = watch(paths, { ignoreInitial: true, ignored: options.ignored, atomic: 50 })
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
      this.#pending.set(path, { event: event as FileChange['event'], path })
      clearTimeout(this.#timer)
      this.#timer = setTimeout(flush, options.debounceMs ?? 50)
    })
    this.#watcher.on('error', onError)
  }

  /** Resolves when the initial scan is done: changes from then on are seen. */
  ready(): Promise<void> {
    return this.#ready
  }

  add(paths: string[]): void {
    if (paths.length) this.#watcher.add(paths)
  }

  unwatch(paths: string[]): void {
    if (paths.length) this.#watcher.unwatch(paths)
  }

  async close(): Promise<void> {
    this.#closed = true
    clearTimeout(this.#timer)
    await this.#watcher.close()
  }
}
