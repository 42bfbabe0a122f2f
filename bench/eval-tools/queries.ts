/**
 * The queries (queries.json) and what serves each in a given corpus: its gold tools, and unless it
 * names its provider, every clone of them on another vendor (grow.ts), since that serves it as well.
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
}

export type Kind = 'user' | 'model' | 'typo' | 'exact' | 'none'

export function kindOf(q: Query): Kind {
  if (q.exact) return 'exact'
  if (!q.gold.length) return 'none'
  if (q.typo) return 'typo'
  return q.by === 'model' ? 'model' : 'user'
}

export function readQueries(): Query[] {
  const file = join(dirname(fileURLToPath(import.meta.url)), 'queries.json')
  return JSON.parse(readFileSync(file, 'utf8')) as Query[]
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
