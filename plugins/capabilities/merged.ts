/**
 * What readers see with a store (shared.ts): every replica's rows as the store held them when last
 * read back, plus what this process counted since, and `yoke doctor`'s word on the sharing.
 */
import type { DoctorCheck } from 'yoke'
import type { MetricsRow } from './api.ts'
import { latencyPercentiles, type MetricsStore } from './metrics.ts'
import { MAX_PENDING, widest, type Merged, type SharedState } from './shared.ts'
import { bucketQuantile, combine, tallyOf, zeroTally } from './tally.ts'

/** `yoke doctor`'s word on the sharing: what waits for the store, and what an outage dropped. */
export function sharedChecks(state: SharedState): DoctorCheck[] {
  const checks: DoctorCheck[] = []
  const { pending, audit, dropped, down } = state
  const waiting = `${pending.size} rows of metrics and ${audit.length} audit entries`
  if (down)
    checks.push({
      level: 'warn',
      message: `${waiting} wait for the store since ${new Date(down.since).toISOString()}: ${down.error}`,
      hint: `They are added when the store answers (its own check says why it does not); past ${MAX_PENDING} the oldest are dropped.`,
    })
  if (dropped.rows || dropped.audit)
    checks.push({
      level: 'warn',
      message: `the store missed ${dropped.rows} rows of metrics (${dropped.calls} calls) and ${dropped.audit} audit entries: more than ${MAX_PENDING} waited during an outage`,
      hint: 'The merged figures undercount by that much until the process restarts; the local audit file has every entry.',
    })
  if (!checks.length)
    checks.push({
      level: 'ok',
      message: `metrics merged and the audit log ordered through the store (${waiting} waiting)`,
    })
  return checks
}

/**
 * The rows every replica counted: the store's as last read, plus what this process counted since
 * (its counts less what the store had taken when it was read). p50 / p95 come from the merged
 * buckets, unless every call of the row was counted here (one replica): then from its recent
 * latencies, as with no store.
 */
export function mergedRows(state: SharedState, metrics: MetricsStore): MetricsRow[] {
  const snapshot = state.snapshot
  const rows = new Map<string, Merged>(snapshot?.rows)
  for (const [k, row] of metrics.counted) {
    const base = snapshot?.base.get(k) ?? zeroTally()
    const unseen = combine(tallyOf(row), base, -1)
    const held = rows.get(k)
    const times = { firstAt: row.firstAt, lastAt: new Date(row.lastMs).toISOString() }
    const ours = !held || held.tally.called === base.called
    const exact = ours ? latencyPercentiles(row.latencies) : undefined
    rows.set(k, {
      meta: held?.meta ?? row,
      tally: held ? combine(held.tally, unseen) : unseen,
      times: held?.times ? widest(held.times, times) : times,
      ...(exact && { exact }),
    })
  }
  return [...rows.values()]
    .map(rowOf)
    .sort((a, b) => b.called - a.called || b.offered - a.offered || a.id.localeCompare(b.id))
}

function rowOf({ meta, tally, times, exact }: Merged): MetricsRow {
  const p50 = exact?.p50 ?? bucketQuantile(tally, 0.5)
  const at = times ?? { firstAt: new Date(0).toISOString(), lastAt: new Date(0).toISOString() }
  return {
    id: meta.id,
    ...(meta.version !== undefined && { version: meta.version }),
    hash: meta.hash,
    source: meta.source,
    offered: tally.offered,
    found: tally.found,
    called: tally.called,
    ok: tally.ok,
    errors: tally.errors,
    ...(p50 !== undefined && { p50, p95: exact?.p95 ?? bucketQuantile(tally, 0.95)! }),
    ...at,
  }
}
