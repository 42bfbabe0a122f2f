/**
 * One method's answers to every query, scored: recall@1 and @5, MRR (over the first 10), no-match
 * precision, recall and F1, exact-name hits, and the latency of a search.
 */
import { median, percentile } from '../stats.ts'
import type { Answer, Method } from './baselines.ts'
import { kindOf, missKind, type Kind, type MissKind, type Query } from './queries.ts'

export const LIMIT = 5
const MRR_DEPTH = 10

export interface Scores {
  r1: number
  r5: number
  mrr: number
  nmP: number
  nmR: number
  nmF1: number
  exact: number
  p50: number
  p95: number
  /** p50 without the time outside the timed search (a semantic method's query embedding) */
  searchP50: number
  byKind: Partial<Record<Kind, number>>
  misses: string[]
  /** the misses counted by kind of miss (queries.ts's missKind) */
  missKinds: Partial<Record<MissKind, number>>
}

export const f1 = (p: number, r: number) => (p + r ? (2 * p * r) / (p + r) : 0)

/**
 * `extraMs`: per query, time the method spent outside its timed search (the semantic methods
 * embed each query once, before; that time is added to the query's search time where its answer
 * says it used the query's vector).
 */
export async function score(
  method: Method,
  queries: Query[],
  golds: Set<string>[],
  warm = true,
  extraMs?: readonly number[],
): Promise<Scores> {
  // a first pass warms the code up; the second is timed
  if (warm) for (const q of queries) await method.search(q.q, MRR_DEPTH)
  // each query timed three times in separate passes, its median kept: a busy machine (a build
  // beside the eval) shows as one slow pass, not as the query's latency
  const answers: Answer[] = []
  for (const q of queries) answers.push(await method.search(q.q, MRR_DEPTH))
  const passes = warm ? 3 : 0
  const samples = queries.map(() => [] as number[])
  for (let pass = 0; pass < passes; pass++)
    for (const [i, q] of queries.entries()) {
      const t0 = performance.now()
      await method.search(q.q, MRR_DEPTH)
      samples[i]!.push(performance.now() - t0)
    }
  const extra = (i: number) => (answers[i]!.embedded === false ? 0 : (extraMs?.[i] ?? 0))
  const searchTimes = samples.map((xs) => (xs.length ? median(xs) : 0))
  const times = searchTimes.map((t, i) => t + extra(i))
  let r1 = 0
  let r5 = 0
  let mrr = 0
  let withGold = 0
  let saidNone = 0
  let rightNone = 0
  let none = 0
  let exactHits = 0
  let exacts = 0
  const kindHits: Partial<Record<Kind, [number, number]>> = {}
  const misses: string[] = []
  const missKinds: Partial<Record<MissKind, number>> = {}
  const missed = (q: Query, noMatch: boolean) => {
    const kind = missKind(q, noMatch)
    missKinds[kind] = (missKinds[kind] ?? 0) + 1
  }
  queries.forEach((q, i) => {
    const answer = answers[i]!
    const gold = golds[i]!
    const kind = kindOf(q)
    if (answer.noMatch) saidNone++
    if (!gold.size) {
      none++
      if (answer.noMatch) rightNone++
      else {
        misses.push(`[none] ${q.q} → ${answer.names.slice(0, 2).join(', ')}`)
        missed(q, false)
      }
      return
    }
    withGold++
    // "no match" for a need the corpus serves is a miss, whatever weak guesses came with it
    const rank = answer.noMatch ? -1 : answer.names.findIndex((n) => gold.has(n))
    if (rank === 0) r1++
    if (rank >= 0 && rank < LIMIT) r5++
    if (rank >= 0) mrr += 1 / (rank + 1)
    const [hits, count] = kindHits[kind] ?? [0, 0]
    kindHits[kind] = [hits + (rank >= 0 && rank < LIMIT ? 1 : 0), count + 1]
    if (q.exact) {
      exacts++
      if (rank === 0) exactHits++
    }
    if (rank < 0 || rank >= LIMIT || (q.exact && rank !== 0)) {
      missed(q, answer.noMatch)
      misses.push(
        `[${kind}] ${q.q} → ${answer.noMatch ? 'no match; ' : ''}${answer.names.slice(0, 3).join(', ')}` +
          ` (want ${[...gold].slice(0, 2).join(', ')}${gold.size > 2 ? ', …' : ''})`,
      )
    }
  })
  const nmP = saidNone ? rightNone / saidNone : 0
  const nmR = none ? rightNone / none : 0
  return {
    r1: r1 / withGold,
    r5: r5 / withGold,
    mrr: mrr / withGold,
    nmP,
    nmR,
    nmF1: f1(nmP, nmR),
    // NaN: no query named a tool exactly (the test set)
    exact: exacts ? exactHits / exacts : NaN,
    p50: percentile(times, 50),
    p95: percentile(times, 95),
    searchP50: percentile(searchTimes, 50),
    byKind: Object.fromEntries(Object.entries(kindHits).map(([k, [h, n]]) => [k, h / n])),
    misses,
    missKinds,
  }
}
