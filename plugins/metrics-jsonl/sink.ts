/**
 * One running metrics-jsonl instance: the file, whether it may be appended to, and what it holds
 * of each row already, so each write appends only what was counted after the last one.
 */
import { messageOf } from 'yoke'
import { appendJsonLines, type CapabilitiesApi } from '../capabilities/api.ts'
import { compact, delta, keyOf, readState, type Counts } from './file.ts'

export interface SinkOptions {
  /** past this size the file is rewritten at start as one line per row */
  compactBytes: number
  /** a file larger than this is not read (nor appended to) */
  maxBytes: number
}

export class MetricsSink {
  /** false once the file could not be read or written: the metrics stay in memory, said once */
  #usable = true
  /** what the file holds of each row (by id, version and hash) as of the last write */
  readonly #written = new Map<string, Counts>()

  constructor(
    /** the file, resolved inside the project */
    readonly file: string,
    private readonly capabilities: CapabilitiesApi,
    private readonly options: SinkOptions,
    private readonly warn: (problem: string) => void,
  ) {}

  /** Reads the file (compacting it when it is large) and seeds the capabilities' rows with it. */
  start(): void {
    const { file, options, warn } = this
    const read = readState(file, options.maxBytes, warn)
    // a file not read (not a regular file, too large) is not appended to either: it is said once
    this.#usable = read.usable
    if (!read.usable)
      warn(`metrics are kept in memory only: ${file} is not appended to until it is fixed`)
    if (read.usable && read.size > options.compactBytes)
      try {
        compact(file, read, options.maxBytes, warn)
      } catch (err) {
        warn(`${file} was not compacted (it is read whole at each start): ${messageOf(err)}`)
      }
    this.capabilities.seed(read.rows)
    // this process's own rows: with a store, stats() are every replica's, merged
    for (const r of this.capabilities.local()) this.#written.set(keyOf(r), r)
  }

  /** Appends what each changed row counted since the last write. */
  write(): void {
    const lines: unknown[] = []
    const at = new Date().toISOString()
    for (const row of this.capabilities.drain()) {
      const k = keyOf(row)
      const add = delta(row, this.#written.get(k))
      this.#written.set(k, row)
      if (add) lines.push({ at, pid: process.pid, add })
    }
    if (!lines.length || !this.#usable) return
    try {
      // one write per line on an O_APPEND file: lines of two processes never interleave
      appendJsonLines(this.file, lines)
    } catch (err) {
      this.#usable = false
      this.warn(`metrics are kept in memory only from now: ${messageOf(err)}`)
    }
  }

  /** The last write. */
  close(): void {
    this.write()
  }
}
