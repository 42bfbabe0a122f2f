/**
 * What tool search is measured against, in the same run: the three things a harness reaches for
 * first. Each answers a query with names, best first, and says no match when it found nothing.
 */
import MiniSearch from 'minisearch'
import type { Tool } from './corpus.ts'

export interface Answer {
  names: string[]
  noMatch: boolean
  /** false: the query's vector was not used (an exact name: the hybrid does not embed it) */
  embedded?: boolean
}

export interface Method {
  label: string
  search(query: string, limit: number): Answer | Promise<Answer>
}

const answer = (names: string[], limit: number): Answer => ({
  names: names.slice(0, limit),
  noMatch: names.length === 0,
})

/** The query, whole, inside a name or a description (names first). */
export function substring(tools: Tool[]): Method {
  const rows = tools.map((t) => ({
    name: t.name,
    lowName: t.name.toLowerCase(),
    lowText: t.description.toLowerCase(),
  }))
  return {
    label: 'substring',
    search(query, limit) {
      const q = query.trim().toLowerCase()
      const inName = rows.filter((r) => r.lowName.includes(q))
      const inText = rows.filter((r) => !r.lowName.includes(q) && r.lowText.includes(q))
      return answer(
        [...inName, ...inText].map((r) => r.name),
        limit,
      )
    },
  }
}

/**
 * The query's words (3+ letters) as one alternation, over name and description: the more
 * different words a tool matches, the higher it ranks (ties in corpus order).
 */
export function regex(tools: Tool[]): Method {
  const rows = tools.map((t) => ({ name: t.name, text: `${t.name} ${t.description}` }))
  return {
    label: 'regex',
    search(query, limit) {
      const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? [])]
      if (!words.length) return answer([], limit)
      const pattern = new RegExp(
        words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'),
        'gi',
      )
      const scored = rows
        .map((r) => ({
          name: r.name,
          hits: new Set((r.text.match(pattern) ?? []).map((m) => m.toLowerCase())).size,
        }))
        .filter((r) => r.hits > 0)
        .sort((a, b) => b.hits - a.hits)
      return answer(
        scored.map((r) => r.name),
        limit,
      )
    },
  }
}

/** minisearch with its default options over name and description: BM25 as it comes. */
export function plainBm25(tools: Tool[]): Method {
  const index = new MiniSearch<{ id: string; name: string; description: string }>({
    fields: ['name', 'description'],
  })
  index.addAll(tools.map((t) => ({ id: t.name, name: t.name, description: t.description })))
  return {
    label: 'BM25 (plain)',
    search(query, limit) {
      return answer(
        index.search(query).map((r) => r.id as string),
        limit,
      )
    },
  }
}
