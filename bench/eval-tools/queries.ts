/**
 * The queries and what serves each in a given corpus: its gold tools, and unless it names its
 * provider, every clone of them on another vendor (grow.ts), since that serves it as well.
 * Two sets: development (queries.json: written next to the tools they target; tuned on) and test
 * (queries-test.json: needs worded as users word them, each from public material whose address it
 * keeps; never tuned on).
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Tool } from './corpus.ts'

export interface Query {
  q: string
  /** the tools that serve it, as `server/tool` or a name (none: nothing in the corpus does) */
  gold: string[]
  /** the query names its provider: a clone of a gold tool on another vendor does not serve it */
  named?: boolean
  /** the query names a tool exactly; every tool so named counts, and one must come first */
  exact?: string
  typo?: boolean
  /** worded as a model words a tool_search query (short, keywords), not as a user asks */
  by?: 'model'
  /**
   * (development set) `asked`: a development need re-asked with a request's opening ("is there a
   * way to", "I want to"), written 2026-12-05 by the development method, to measure asking.ts
   */
  variant?: 'asked'
  /** (test set) where its wording came from: a URL */
  source?: string
  /** (test set) how it puts the need against the tool that serves it, set when it was written */
  wording?: Wording
}

/**
 * plain: much as the tool names it; synonym: another word for the tool's; purpose: the goal, not
 * the operation; everyday: an everyday word where the tool has a technical one; none: no tool serves it
 */
export type Wording = 'plain' | 'synonym' | 'purpose' | 'everyday' | 'none'

/** Why a query was missed, by kind (the kinds; `other` for the rest). */
export type MissKind =
  | 'synonym'
  | 'purpose-not-operation'
  | 'everyday-vs-technical'
  | 'no-match answered with a weak candidate'
  | 'no match said for a served need'
  | 'other'

export function missKind(q: Query, saidNoMatch: boolean): MissKind {
  if (!q.gold.length && !q.exact) return 'no-match answered with a weak candidate'
  if (saidNoMatch) return 'no match said for a served need'
  if (q.wording === 'synonym') return 'synonym'
  if (q.wording === 'purpose') return 'purpose-not-operation'
  if (q.wording === 'everyday') return 'everyday-vs-technical'
  return 'other'
}

export type Kind = 'user' | 'model' | 'typo' | 'exact' | 'none'

export function kindOf(q: Query): Kind {
  if (q.exact) return 'exact'
  if (!q.gold.length) return 'none'
  if (q.typo) return 'typo'
  return q.by === 'model' ? 'model' : 'user'
}

const HERE = dirname(fileURLToPath(import.meta.url))

/** The development set: tuned on. */
export function readQueries(): Query[] {
  return JSON.parse(readFileSync(join(HERE, 'queries.json'), 'utf8')) as Query[]
}

/** The test set: reported, never tuned on. */
export function readTestQueries(): Query[] {
  const file = JSON.parse(readFileSync(join(HERE, 'queries-test.json'), 'utf8')) as {
    queries: Query[]
  }
  for (const q of file.queries)
    if (!q.source || !q.wording) throw new Error(`test query "${q.q}": no source or wording`)
  return file.queries
}

/** `a/b` → the MCP tool b of server a; anything else: a name as it is in the index. */
export function resolveGold(
  query: Query,
  corpus: Tool[],
  byAlias: Map<string, Tool[]>,
): Set<string> {
  if (query.exact) {
    const named = byAlias.get(query.exact.toLowerCase()) ?? []
    return new Set(named.map((t) => t.name))
  }
  const gold = new Set<string>()
  for (const g of query.gold) {
    const hits = g.includes('/')
      ? (byAlias.get(g.toLowerCase()) ?? [])
      : corpus.filter((t) => t.name === g)
    if (hits.length !== 1) throw new Error(`gold ${g} of "${query.q}": ${hits.length} tools`)
    gold.add(hits[0]!.name)
  }
  if (!query.named) for (const t of corpus) if (t.cloneOf && gold.has(t.cloneOf)) gold.add(t.name)
  return gold
}

export function aliasMap(corpus: Tool[]): Map<string, Tool[]> {
  const map = new Map<string, Tool[]>()
  for (const t of corpus)
    for (const n of new Set([t.name, ...(t.aliases ?? [])].map((s) => s.toLowerCase())))
      map.set(n, [...(map.get(n) ?? []), t])
  return map
}
