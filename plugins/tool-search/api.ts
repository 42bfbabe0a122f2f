/**
 * The public face of the tool-search plugin: the `toolSearch` service. A loop (the agent loop, the
 * MCP gateway) asks it which of a scope's tools to offer a caller — the direct ones, those the
 * caller loaded through `tool_search`, and `tool_search` itself while anything is deferred — and
 * whether a tool it did not offer may still be called by name (a hidden one may).
 */
import type { DoctorCheck, RegisteredTool, SummarySection } from 'yoke'
import type { FinderOutcome } from './finder.ts'

export type { Candidate, RankOptions, Searchable, SearchOutcome } from './rank.ts'
export type { FinderOutcome } from './finder.ts'
import type { PhrasesStatus } from './phrases.ts'
import type { SemanticState } from './semantic.ts'
export type { SemanticState }
export { SearchIndex, words } from './rank.ts'

/** `direct`: its schema every turn; `deferred`: found by tool_search, then offered; `hidden`: callable by name, never offered. */
export type Exposure = 'direct' | 'deferred' | 'hidden'

export interface ToolSearchApi {
  /** The tool's exposure now (`auto` resolved against the token budget). */
  exposure(tool: RegisteredTool): Exposure
  /**
   * What to offer `caller` of the scope's `tools`: direct, loaded by this caller, and tool_search
   * while anything is deferred. Sorted by name (a request does not depend on registration order).
   */
  offered(tools: readonly RegisteredTool[], caller: string): Promise<RegisteredTool[]>
  /** Why `name` may not be called unoffered, or undefined when it may (a hidden tool). */
  refusal(tool: RegisteredTool, caller: string): string | undefined
  /**
   * The deferred and direct tools of the caller's scope that match the query (hidden ones never),
   * on words, and on meaning too once the semantic arm is ready (it never waits for it).
   */
  search(
    query: string,
    options?: { caller?: string; scope?: string; limit?: number },
  ): Promise<FinderOutcome>
  /**
   * The semantic arm: its state (`off` when configured so), how many tools have their vector, the
   * model once it has loaded, and why it failed.
   */
  semantic(): {
    state: SemanticState
    embedded: number
    tools: number
    model?: string
    error?: string
  }
  /**
   * Starts the semantic arm (when it is configured) and resolves once the model has loaded, or
   * failed to, and every tool has its vector: for a caller that would rather wait (a one-shot CLI).
   */
  semanticSettled(): Promise<void>
  /** The model-written phrases (`phrases: model`): tools with them, waiting, failed, and why; undefined when off. */
  phrases(): PhrasesStatus | undefined
  /** Resolves once the phrases asked for the tools searched now are written (or failed). */
  phrasesSettled(): Promise<void>
  /** Offers these tools to the caller from its next turn on. */
  load(caller: string, names: readonly string[]): void
  /** Forgets what the caller loaded (its run ended). */
  forget(caller: string): void
}

/** A tool a search found, as `tool_search` and `yoke tools search` show it. */
export interface FoundTool {
  id: string
  /** its source's version, else `sha256:` and 12 hex digits of its definition */
  version: string
  name: string
  source: string
  risk: RegisteredTool['risk']
  /** the first line of its description, at most 200 characters */
  description: string
  /** null for an exact name, which outranks every score */
  score: number | null
  exact: boolean
  why: string
}

/** What a search answers `yoke tools search` (the `tool-search/search` control). */
export interface FoundTools {
  noMatch: boolean
  /** `hybrid`: ranked on words and meaning; `lexical`: on words (`semantic` says why) */
  arms: 'lexical' | 'hybrid'
  semantic: SemanticState
  candidates: FoundTool[]
}

/** Columns of `yoke tools list`: column → tool name → cell (tool-search gives `exposure`). */
export type ToolColumns = Record<string, Record<string, string>>

declare module 'yoke' {
  interface Services {
    toolSearch: ToolSearchApi
  }
  interface Controls {
    /** `yoke tools search QUERY`: what tool_search would answer a model (limit: the plugin's) */
    'tool-search/search': { request: { query: string; limit?: number }; answer: FoundTools }
    /** `yoke tools list`'s `exposure` column: each tool's exposure now */
    'tool-search/tool-columns': { request: Record<string, never>; answer: ToolColumns }
    /** the dev screen's section, with a model of the user's or `phrases: model` */
    'tool-search/summary': { request: Record<string, never>; answer: SummarySection }
    /** `yoke doctor`: with a model of the user's, whether it loaded (it waits for it) */
    'tool-search/doctor': { request: Record<string, never>; answer: DoctorCheck[] }
  }
}

export const TOOL_SEARCH = 'tool_search'
