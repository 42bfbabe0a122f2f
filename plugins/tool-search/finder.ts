/**
 * @module tool-search/finder
 * The search index over the runtime's tools: each tool is read once (its parameters, and for an
 * MCP tool the `server/tool` spellings that name it exactly). The index either follows a list of
 * tools (re-indexing only what differs from the last one) or is told what changed (`update`: the
 * plugin's global scope, kept from the runtime's changes; searchable.ts).
 * With a semantic arm, the arm follows the same tools, and a query is ranked on words and meaning
 * once the arm is ready (lexically until then, and when the query names a tool exactly).
 */
import type { RegisteredTool } from 'yoke'
import { SearchIndex, type RankOptions, type Searchable, type SearchOutcome } from './rank.ts'
import type { ModelPhrases } from './phrases.ts'
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
  /** the model-written requests per tool, when configured: asked for the tools without them */
  readonly #phrases: ModelPhrases | undefined
  /** the list the index was last made to hold (undefined after an update) */
  #last: readonly RegisteredTool[] | undefined = []

  constructor(options: RankOptions, semantic?: SemanticArm, phrases?: ModelPhrases) {
    this.#index = new SearchIndex<Entry>(options)
    this.#semantic = semantic
    this.#phrases = phrases
  }

  /** Brings the index (and the semantic arm) in line with `tools`. */
  follow(tools: readonly RegisteredTool[]): void {
    // the same tools as at the last search (nothing reloaded): nothing to compare, nothing to re-index
    const last = this.#last
    const same = last && tools.length === last.length && tools.every((t, i) => t === last[i])
    if (same) return
    const entries = tools.map((tool) => this.#entry(tool))
    this.#index.sync(entries)
    this.#semantic?.sync(entries)
    this.#phrases?.want(entries.filter((e) => !e.asked))
    this.#last = [...tools]
  }

  /**
   * Changes only these: `put` (re)indexed (a tool of the same name replaced), `removed` dropped
   * (the arm follows the same), without reading the rest.
   */
  update(put: readonly RegisteredTool[], removed: readonly string[]): void {
    if (!put.length && !removed.length) return
    for (const name of removed) this.#index.delete(name)
    const entries = put.map((tool) => this.#entry(tool))
    for (const entry of entries) if (this.#index.get(entry.name) !== entry) this.#index.set(entry)
    this.#semantic?.update(entries, removed)
    this.#phrases?.want(entries.filter((e) => !e.asked))
    // the index no longer holds the last list followed
    this.#last = undefined
  }

  /** The best of `tools` for the query (the index first follows `tools`). */
  async search(
    query: string,
    tools: readonly RegisteredTool[],
    limit: number,
  ): Promise<FinderOutcome> {
    this.follow(tools)
    return this.searchHeld(query, limit)
  }

  /** These tools have phrases now: each is indexed again with them (a name no longer held is skipped). */
  rewrite(names: readonly string[]): void {
    for (const name of names) {
      const held = this.#index.get(name)
      if (!held) continue
      const entry = { ...held, asked: this.#phrases?.phrasesOf(held) }
      this.#entries.set(held.tool, entry)
      this.#index.set(entry)
    }
  }

  /** The best of the tools the index holds now (as `follow` and `update` left it). */
  async searchHeld(query: string, limit: number): Promise<FinderOutcome> {
    this.#phrases?.resume()
    const semantic = this.#semantic
    // an exact name comes first anyway: the query is not embedded for it
    const similarity =
      semantic && !this.#index.exact(query).length ? await semantic.similarity(query) : undefined
    const { candidates, noMatch, arms, evidence } = this.#index.search(query, limit, similarity)
    return {
      noMatch,
      arms,
      evidence,
      semantic: semantic?.state ?? 'off',
      candidates: candidates.map((c) => ({ ...c, item: c.item.tool })),
    }
  }

  #entry(tool: RegisteredTool): Entry {
    let entry = this.#entries.get(tool)
    // phrases written while the tool was out of the index (another scope's search): taken now
    if (entry && !entry.asked && this.#phrases) {
      const asked = this.#phrases.phrasesOf(entry)
      if (asked) this.#entries.set(tool, (entry = { ...entry, asked }))
    }
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
      entry.asked = this.#phrases?.phrasesOf(entry)
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
