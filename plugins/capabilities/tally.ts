/**
 * A metrics row's counts as numbers that add and subtract (a `Tally`), and the same as the fields
 * of a store's merged counters: `offered`, `found`, `called`, `ok`, `error:<code>`, and the latency
 * histogram as `count`, `sum` and `le:<bound>` (store/api.ts `histogramDeltas`/`histogramOf`).
 * Replicas add their deltas to one set of counters; p50 / p95 are read back from the merged
 * buckets, as estimates (linear within the bucket the rank falls in).
 */
import { histogramOf } from '../store/api.ts'
import { BOUNDS, type Row } from './metrics.ts'

export interface Tally {
  offered: number
  found: number
  called: number
  ok: number
  errors: Record<string, number>
  /** calls per bucket of `BOUNDS`, +Inf last */
  buckets: number[]
  /** the sum of their latencies (ms) */
  sum: number
}

export const zeroTally = (): Tally => ({
  offered: 0,
  found: 0,
  called: 0,
  ok: 0,
  errors: {},
  buckets: new Array<number>(BOUNDS.length + 1).fill(0),
  sum: 0,
})

/** A copy of a row's counts (a row counted before sharing began has no buckets yet: zeros). */
export function tallyOf(row: Readonly<Row>): Tally {
  return {
    offered: row.offered,
    found: row.found,
    called: row.called,
    ok: row.ok,
    errors: { ...row.errors },
    buckets: row.buckets ? [...row.buckets] : zeroTally().buckets,
    sum: row.sum ?? 0,
  }
}

/** `a + sign × b`, as a new tally. */
export function combine(a: Tally, b: Tally, sign: 1 | -1 = 1): Tally {
  const errors = { ...a.errors }
  for (const [code, n] of Object.entries(b.errors)) {
    const sum = (errors[code] ?? 0) + sign * n
    if (sum) errors[code] = sum
    else delete errors[code]
  }
  return {
    offered: a.offered + sign * b.offered,
    found: a.found + sign * b.found,
    called: a.called + sign * b.called,
    ok: a.ok + sign * b.ok,
    errors,
    buckets: a.buckets.map((n, i) => n + sign * (b.buckets[i] ?? 0)),
    sum: a.sum + sign * b.sum,
  }
}

export const isZero = (t: Tally) =>
  !t.offered &&
  !t.found &&
  !t.called &&
  !t.ok &&
  !Object.keys(t.errors).length &&
  !t.sum &&
  t.buckets.every((n) => !n)

const label = (i: number) => `le:${BOUNDS[i] ?? '+Inf'}`

/** The store counters' deltas of a tally (zero fields left out). */
export function fieldsOf(t: Tally): Record<string, number> {
  const out: Record<string, number> = {}
  const put = (field: string, n: number) => {
    if (n) out[field] = n
  }
  put('offered', t.offered)
  put('found', t.found)
  put('called', t.called)
  put('ok', t.ok)
  for (const [code, n] of Object.entries(t.errors)) put(`error:${code}`, n)
  t.buckets.forEach((n, i) => put(label(i), n))
  put(
    'count',
    t.buckets.reduce((a, n) => a + n, 0),
  )
  put('sum', t.sum)
  return out
}

/** A tally read back from the store's counters. */
export function tallyFrom(counters: Record<string, number>): Tally {
  const errors: Record<string, number> = {}
  for (const [field, n] of Object.entries(counters))
    if (field.startsWith('error:') && n) errors[field.slice('error:'.length)] = n
  return {
    offered: counters.offered ?? 0,
    found: counters.found ?? 0,
    called: counters.called ?? 0,
    ok: counters.ok ?? 0,
    errors,
    buckets: BOUNDS.map((_, i) => counters[label(i)] ?? 0).concat(counters['le:+Inf'] ?? 0),
    sum: counters.sum ?? 0,
  }
}

/**
 * The `p` quantile of a tally's histogram: the bucket the rank falls in, linear within it (0 to
 * the first bound; the +Inf bucket answers its lower bound); undefined with no latency.
 */
export function bucketQuantile(t: Tally, p: number): number | undefined {
  const counters = Object.fromEntries(t.buckets.map((n, i) => [label(i), n]))
  const { cumulative } = histogramOf(counters, BOUNDS)
  const total = cumulative.at(-1)! + (t.buckets[BOUNDS.length] ?? 0)
  if (!total) return undefined
  const rank = Math.max(1, Math.ceil(p * total))
  const i = cumulative.findIndex((c) => c >= rank)
  if (i < 0) return BOUNDS.at(-1)!
  const below = i ? cumulative[i - 1]! : 0
  const lower = i ? BOUNDS[i - 1]! : 0
  const within = (rank - below) / (cumulative[i]! - below)
  return Math.round((lower + (BOUNDS[i]! - lower) * within) * 100) / 100
}
