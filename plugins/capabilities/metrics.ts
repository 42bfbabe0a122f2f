/**
 * Metrics per capability id + version: offered, found, called, ok and each error code, and p50 /
 * p95 over the most recent latencies. A row is keyed by id, version and hash, so a new version
 * (or the same version with other content) starts its own row and never blurs the old one's.
 */
import type { MetricsRow } from './api.ts'

/** how many recent latencies a row keeps for its percentiles */
const SAMPLES = 256

export interface RowKey {
  id: string
  version?: string
  hash: string
  source: string
}

/** A row as counted: `lastAt` is kept as a number and written as a string only when read. */
interface Row extends Omit<MetricsRow, 'lastAt'> {
  lastMs: number
  latencies: number[]
}

const keyOf = (key: RowKey) => `${key.id}@${key.version ?? ''}#${key.hash}`

export class MetricsStore {
  readonly #rows = new Map<string, Row>()
  readonly #dirty = new Set<string>()
  /** the row key of a RowKey object its caller keeps (one per tool registration) */
  readonly #keys = new WeakMap<RowKey, string>()

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
      this.#rows.set(k, row)
    }
    row.lastMs = now
    this.#dirty.add(k)
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
    // trimmed now and then, not per call: readers take the last SAMPLES
    if (row.latencies.length >= 2 * SAMPLES) row.latencies.splice(0, row.latencies.length - SAMPLES)
  }

  /** The rows, most called first, each with its percentiles. */
  rows(): MetricsRow[] {
    return [...this.#rows.values()]
      .map(summary)
      .sort((a, b) => b.called - a.called || b.offered - a.offered || a.id.localeCompare(b.id))
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
    }
  }
}

function summary({ latencies, lastMs, ...counts }: Row): MetricsRow {
  const row = { ...counts, lastAt: new Date(lastMs).toISOString() }
  if (!latencies.length) return row
  const sorted = latencies.slice(-SAMPLES).sort((a, b) => a - b)
  return { ...row, p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95) }
}

/** The nearest-rank percentile of sorted values. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!
}
