/**
 * @module tool-search/finder
 * The search index over the runtime's tools: each tool is read once (its parameters, and for an
 * MCP tool the `server/tool` spellings that name it exactly), and the index is brought in line
 * with the tools before each search, re-indexing only what a reload or a list_changed replaced.
 * With a semantic arm, the arm follows the same tools, and a query is ranked on words and meaning
 * once the arm is ready (lexically until then, and when the query names a tool exactly).
 */
import type { RegisteredTool } from 'yoke'
import { SearchIndex, type RankOptions, type Searchable, type SearchOutcome } from './rank.ts'
import type { SemanticArm, SemanticState } from './semantic.ts'

export interface FinderOutcome extends SearchOutcome<RegisteredTool> {
  /** the semantic arm's state at this search (`off` without one) */
  semantic: SemanticState
}

interface Entry extends Searchable {
  tool: RegisteredTool
}

export class ToolFinder {
  readonly #index: SearchIndex<Entry>
  readonly #entries = new WeakMap<RegisteredTool, Entry>()
  readonly #semantic: SemanticArm | undefined
  #last: readonly RegisteredTool[] = []

  constructor(options: RankOptions, semantic?: SemanticArm) {
    this.#index = new SearchIndex<Entry>(options)
    this.#semantic = semantic
  }

  /** Brings the index (and the semantic arm) in line with `tools`. */
  follow(tools: readonly RegisteredTool[]): void {
    // the same tools as at the last search (nothing reloaded): nothing to compare, nothing to re-index
    const same = tools.length === this.#last.length && tools.every((t, i) => t === this.#last[i])
    if (same) return
    const entries = tools.map((tool) => this.#entry(tool))
    this.#index.sync(entries)
    this.#semantic?.sync(entries)
    this.#last = [...tools]
  }

  /** The best of `tools` for the query (the index first follows `tools`). */
  async search(
    query: string,
    tools: readonly RegisteredTool[],
    limit: number,
  ): Promise<FinderOutcome> {
    this.follow(tools)
    const semantic = this.#semantic
    // an exact name comes first anyway: the query is not embedded for it
    const similarity =
      semantic && !this.#index.exact(query).length ? await semantic.similarity(query) : undefined
    const { candidates, noMatch, arms } = this.#index.search(query, limit, similarity)
    return {
      noMatch,
      arms,
      semantic: semantic?.state ?? 'off',
      candidates: candidates.map((c) => ({ ...c, item: c.item.tool })),
    }
  }

  #entry(tool: RegisteredTool): Entry {
    let entry = this.#entries.get(tool)
    if (!entry) {
      entry = {
        tool,
        name: tool.name,
        title: tool.title,
        description: tool.description,
        source: tool.source,
        params: paramsOf(tool.inputSchema),
        aliases: aliasesOf(tool),
      }
      this.#entries.set(tool, entry)
    }
    return entry
  }
}

/**
 * `mcp__github__create_issue` is also `github/create_issue`, `github.create_issue`, `create_issue`:
 * spelled with the server's own names (mcp-client's annotations), since a public name may have
 * been cut and hashed (`files.read` → `mcp__x__files_read_1a2b…`) and is never parsed back.
 */
function aliasesOf(tool: RegisteredTool): string[] {
  const { mcpServer, mcpTool } = tool.annotations ?? {}
  const parsed = /^mcp__(.+?)__(.+)$/.exec(tool.name)
  const server = typeof mcpServer === 'string' ? mcpServer : parsed?.[1]
  const raw = typeof mcpTool === 'string' ? mcpTool : parsed?.[2]
  if (!server || !raw) return []
  return [...new Set([`${server}/${raw}`, `${server}.${raw}`, `${server}__${raw}`, raw])]
}

/** The parameters the index reads: the top-level properties of an input schema. */
export function paramsOf(schema: unknown): Array<{ name: string; description?: string }> {
  const properties = (schema as { properties?: Record<string, { description?: unknown }> })
    ?.properties
  if (!properties || typeof properties !== 'object') return []
  return Object.entries(properties).map(([name, p]) => ({
    name,
    description: typeof p?.description === 'string' ? p.description : undefined,
  }))
}
