/**
 * Metrics per capability id + version: offered, found, called, ok and each error code, and p50 /
 * p95 over the most recent latencies. A row is keyed by id, version and hash, so a new version
 * (or the same version with other content) starts its own row and never blurs the old one's.
 * While a store shares the metrics (shared.ts), each call's latency is also counted in a bucket
 * of `BOUNDS`, the histogram the replicas merge, and the rows changed since the last share are
 * marked for it.
 */
import type { MetricsRow } from './api.ts'

/** how many recent latencies a row keeps for its percentiles */
const SAMPLES = 256

/** the latency histogram's bucket upper bounds (ms) that replicas merge; the last bucket is +Inf */
export const BOUNDS: readonly number[] = [
  1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000,
]

export interface RowKey {
  id: string
  version?: string
  hash: string
  source: string
}

/** A row as counted: `lastAt` is kept as a number and written as a string only when read. */
export interface Row extends Omit<MetricsRow, 'lastAt'> {
  lastMs: number
  latencies: number[]
  /** calls per bucket of `BOUNDS` (+Inf last), counted while a store shares the metrics */
  buckets?: number[]
  /** the sum of those calls' latencies (ms) */
  sum?: number
  /** marked changed for the store since it last took the rows (one Set add per flush, not per call) */
  unshared?: boolean
}

export const keyOf = (key: { id: string; version?: string; hash: string }) =>
  `${key.id}@${key.version ?? ''}#${key.hash}`

export class MetricsStore {
  readonly #rows = new Map<string, Row>()
  readonly #dirty = new Set<string>()
  /** the row key of a RowKey object its caller keeps (one per tool registration) */
  readonly #keys = new WeakMap<RowKey, string>()
  /** rows changed since the store last took them (shared.ts); undefined: no store shares them */
  #unshared: Set<string> | undefined

  /** The row of `key`: counting is a lookup and a number, not a string per call. */
  #row(key: RowKey): Row {
    let k = this.#keys.get(key)
    if (k === undefined) this.#keys.set(key, (k = keyOf(key)))
    let row = this.#rows.get(k)
    const now = Date.now()
    if (!row) {
      row = {
        ...key,
        offered: 0,
        found: 0,
        called: 0,
        ok: 0,
        errors: {},
        firstAt: new Date(now).toISOString(),
        lastMs: now,
        latencies: [],
      }
      if (key.version === undefined) delete row.version
      if (this.#unshared) startBuckets(row)
      this.#rows.set(k, row)
    }
    row.lastMs = now
    this.#dirty.add(k)
    if (this.#unshared && !row.unshared) {
      row.unshared = true
      this.#unshared.add(k)
    }
    return row
  }

  offered(key: RowKey): void {
    this.#row(key).offered++
  }

  found(key: RowKey): void {
    this.#row(key).found++
  }

  called(key: RowKey, status: string, ms: number): void {
    const row = this.#row(key)
    row.called++
    if (status === 'ok') row.ok++
    else row.errors[status] = (row.errors[status] ?? 0) + 1
    row.latencies.push(ms)
    if (this.#unshared) {
      let i = 0
      while (i < BOUNDS.length && ms > BOUNDS[i]!) i++
      row.buckets![i]!++
      row.sum! += ms
    }
    // trimmed now and then, not per call: readers take the last SAMPLES
    if (row.latencies.length >= 2 * SAMPLES) row.latencies.splice(0, row.latencies.length - SAMPLES)
  }

  /** The rows, most called first, each with its percentiles. */
  rows(): MetricsRow[] {
    return [...this.#rows.values()]
      .map(summary)
      .sort((a, b) => b.called - a.called || b.offered - a.offered || a.id.localeCompare(b.id))
  }

  /**
   * Starts marking changed rows and counting latency buckets for a store (once; later calls are
   * no-ops). Every row counted so far is marked: what this process counted before the store came
   * up is shared too (shared.ts decides for what was seeded from a file).
   */
  share(): void {
    if (this.#unshared) return
    this.#unshared = new Set(this.#rows.keys())
    for (const row of this.#rows.values()) startBuckets(row)
  }

  /** Marks a row changed for the store (a seeded row the memory engine is to be given). */
  mark(k: string): void {
    const row = this.#rows.get(k)
    if (!this.#unshared || !row || row.unshared) return
    row.unshared = true
    this.#unshared.add(k)
  }

  /** The rows changed since the last call, as counted (the caller copies what it keeps). */
  takeUnshared(): Array<[string, Row]> {
    const out = [...(this.#unshared ?? [])].map((k): [string, Row] => {
      const row = this.#rows.get(k)!
      row.unshared = false
      return [k, row]
    })
    this.#unshared?.clear()
    return out
  }

  /** Every row as counted, by row key (read-only). */
  get counted(): ReadonlyMap<string, Readonly<Row>> {
    return this.#rows
  }

  /** Rows changed since the last drain, with their latencies (what a sink persists). */
  drain(): Array<MetricsRow & { latencies: number[] }> {
    const out = [...this.#dirty].map((k) => {
      const row = this.#rows.get(k)!
      return { ...summary(row), latencies: row.latencies.slice(-SAMPLES) }
    })
    this.#dirty.clear()
    return out
  }

  /** Persisted rows for keys this process has not counted yet (its own counts win). */
  seed(rows: Array<MetricsRow & { latencies?: number[] }>): void {
    for (const r of rows) {
      const k = keyOf(r)
      if (this.#rows.has(k)) continue
      const { p50: _p50, p95: _p95, latencies, lastAt, ...counts } = r
      this.#rows.set(k, {
        ...counts,
        lastMs: Date.parse(lastAt) || 0,
        errors: { ...r.errors },
        latencies: latencies?.slice(-SAMPLES) ?? [],
      })
      if (this.#unshared) startBuckets(this.#rows.get(k)!)
      this.onSeed?.(k, this.#rows.get(k)!)
    }
  }

  /** told of each seeded row: its counts are history, which shared.ts adds or not by the engine */
  onSeed: ((key: string, row: Readonly<Row>) => void) | undefined
}

/** A row's histogram, from its next call on (what it counted before has no latency bucket). */
function startBuckets(row: Row): void {
  row.buckets ??= new Array<number>(BOUNDS.length + 1).fill(0)
  row.sum ??= 0
}

function summary({
  latencies,
  lastMs,
  buckets: _b,
  sum: _s,
  unshared: _u,
  ...counts
}: Row): MetricsRow {
  const row = { ...counts, lastAt: new Date(lastMs).toISOString() }
  const p = latencyPercentiles(latencies)
  return p ? { ...row, ...p } : row
}

/** p50 and p95 over a row's most recent latencies (undefined: none yet). */
export function latencyPercentiles(latencies: readonly number[]) {
  if (!latencies.length) return undefined
  const sorted = latencies.slice(-SAMPLES).sort((a, b) => a - b)
  return { p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95) }
}

/** The nearest-rank percentile of sorted values. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!
}
