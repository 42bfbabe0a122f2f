/**
 * @module tool-search/tool-search
 * One running tool-search instance: the `toolSearch` service. It decides which of a scope's tools
 * a caller is offered (direct ones, those the caller loaded through `tool_search`, and `tool_search`
 * itself while anything is deferred), whether an unoffered tool may be called by name, and answers
 * searches on words, and on meaning once the semantic arm has loaded (a search never waits for it).
 * The runtime's tools come in through `tools()`, so the decisions run without a composition.
 */
import { GLOBAL, messageOf, type RegisteredTool, type SummarySection, type ToolChange } from 'yoke'
import { asCandidate } from './answer.ts'
import {
  TOOL_SEARCH,
  type Exposure,
  type FoundTools,
  type ToolColumns,
  type ToolSearchApi,
} from './api.ts'
import type { ExposureConfig } from './exposure.ts'
import { ExposurePlan } from './exposure.ts'
import { ToolFinder } from './finder.ts'
import type { HybridOptions } from './hybrid.ts'
import { SearchableSet } from './searchable.ts'
import type { ModelPhrases, PhrasesStatus } from './phrases.ts'
import type { SemanticArm } from './semantic.ts'

export interface ToolSearchConfig extends ExposureConfig {
  /** candidates per search */
  limit: number
  /** the share of a query's words the best tool must match, else "no tool matches" (unset: calibrated) */
  threshold?: number
  /** the fusion's bounds for the model's similarities (a model of the user's has its own scale) */
  hybrid?: HybridOptions
}

export class ToolSearch implements ToolSearchApi {
  readonly #plan: ExposurePlan
  readonly #finder: ToolFinder
  /** the semantic arm; undefined with `semantic: off` */
  readonly #arm: SemanticArm | undefined
  /** the model-written requests per tool (`phrases: model`) */
  readonly #phrases: ModelPhrases | undefined
  /** the global scope's tools, read live */
  readonly #tools: () => readonly RegisteredTool[]
  /** what a search of the global scope looks through, kept from the runtime's changes */
  readonly #global: SearchableSet
  /** whether the finder's index holds #global (not another scope's tools) */
  #globalIndexed = false
  /** per caller: the tools it loaded through tool_search */
  readonly #loaded = new Map<string, Set<string>>()
  /** per caller: the scope's tools it was last offered from */
  readonly #seen = new Map<string, readonly RegisteredTool[]>()
  /** every tool's exposure at the last offer (`auto` decided) */
  #last = new Map<string, Exposure>()

  /**
   * `tools`: the global scope's tools (the runtime's `list()`). `filters`: the runtime's visible
   * taps now; with it the global tools are kept between searches from what `changed` and `listed`
   * are told (the plugin taps tools.change and visible for them), without it listed per search.
   */
  constructor(
    readonly config: ToolSearchConfig,
    tools: () => readonly RegisteredTool[],
    arm?: SemanticArm,
    filters?: () => readonly unknown[],
    phrases?: ModelPhrases,
  ) {
    this.#plan = new ExposurePlan(config)
    this.#finder = new ToolFinder({ ...config.hybrid, threshold: config.threshold }, arm, phrases)
    this.#phrases = phrases
    this.#arm = arm
    this.#tools = tools
    this.#global = new SearchableSet({
      list: tools,
      admit: (t) => t.name !== TOOL_SEARCH && this.#plan.declared(t) !== 'hidden',
      filters,
    })
  }

  /** The runtime's tools.change (any number of names), or its visibility: the next search of that scope sees it. */
  changed(change: ToolChange): void {
    this.#global.changed(change)
  }

  /** A listing through the runtime's visible taps (tapped last): the global one is kept. */
  listed(tools: readonly RegisteredTool[], scope: string): void {
    this.#global.listed(tools, scope)
  }

  exposure(tool: RegisteredTool): Exposure {
    const level = this.#last.get(tool.name) ?? this.#plan.declared(tool)
    return level === 'auto' ? 'direct' : level
  }

  async offered(tools: readonly RegisteredTool[], caller: string): Promise<RegisteredTool[]> {
    this.#seen.set(caller, tools)
    const others = tools.filter((t) => t.name !== TOOL_SEARCH)
    const last = (this.#last = await this.#plan.resolve(others))
    const mine = this.#loaded.get(caller) ?? new Set()
    const deferred = others.some((t) => last.get(t.name) === 'deferred')
    if (deferred) this.#startArm(caller)
    return tools
      .filter((t) =>
        t.name === TOOL_SEARCH ? deferred : last.get(t.name) === 'direct' || mine.has(t.name),
      )
      .sort((a, b) => (a.name < b.name ? -1 : 1))
  }

  refusal(tool: RegisteredTool, caller: string): string | undefined {
    const exposure = this.#last.get(tool.name) ?? this.#plan.declared(tool)
    if (exposure === 'hidden' || this.#loaded.get(caller)?.has(tool.name)) return undefined
    return exposure === 'deferred'
      ? `${tool.name} is not loaded: find it with ${TOOL_SEARCH} first (it is then offered from the next step)`
      : `${tool.name} was not offered this turn`
  }

  search(query: string, options: { caller?: string; scope?: string; limit?: number } = {}) {
    this.#arm?.start()
    this.#follow(options.caller, options.scope)
    return this.#finder.searchHeld(query, options.limit ?? this.config.limit)
  }

  semantic() {
    const arm = this.#arm
    return {
      state: arm?.state ?? 'off',
      embedded: arm?.embedded ?? 0,
      tools: arm?.wanted ?? 0,
      model: arm?.model,
      error: arm?.error === undefined ? undefined : messageOf(arm.error),
    }
  }

  /** Starts the arm and resolves once its model has loaded, or failed to (not the tools' vectors). */
  async semanticLoaded(): Promise<void> {
    this.#arm?.start()
    await this.#arm?.loaded()
  }

  async semanticSettled(): Promise<void> {
    if (!this.#arm) return
    this.#startArm()
    await this.#arm.settled()
  }

  load(caller: string, names: readonly string[]): void {
    const mine = this.#loaded.get(caller) ?? new Set()
    for (const name of names) mine.add(name)
    this.#loaded.set(caller, mine)
  }

  forget(caller: string): void {
    this.#loaded.delete(caller)
    this.#seen.delete(caller)
  }

  /**
   * Once composed and running: loads the model in the background when something is deferred (a
   * composition that keeps running will be searched); a one-shot command never gets here.
   */
  async warmUp(): Promise<void> {
    if (!this.#arm) return
    const levels = await this.#plan.resolve(this.#globalTools())
    if ([...levels.values()].includes('deferred')) this.#startArm()
  }

  /**
   * `yoke tools search`: what tool_search would answer a model now. `settle`: wait for the model
   * first (a one-shot command: a person asked, once).
   */
  async find(request: { query?: unknown; limit?: unknown }, settle: boolean): Promise<FoundTools> {
    if (settle) await this.semanticSettled()
    const outcome = await this.search(String(request.query ?? ''), {
      limit: Number(request.limit) || this.config.limit,
    })
    return {
      noMatch: outcome.noMatch,
      arms: outcome.arms ?? 'lexical',
      semantic: outcome.semantic,
      candidates: outcome.candidates.map(asCandidate),
    }
  }

  /** `yoke tools list`'s exposure column: every tool's exposure now. */
  async columns(): Promise<ToolColumns> {
    const levels = await this.#plan.resolve(this.#tools().filter((t) => t.name !== TOOL_SEARCH))
    const deferred = [...levels.values()].includes('deferred')
    // tool_search itself is offered only while something is deferred (it is not a hidden tool: it is not callable unoffered)
    const exposure = {
      ...Object.fromEntries(levels),
      [TOOL_SEARCH]: deferred ? 'direct' : 'not offered',
    }
    return { exposure }
  }

  close(): void {
    this.#arm?.stop()
    this.#phrases?.stop()
  }

  /** The model wrote phrases for these tools: the index takes them in (the next search sees them). */
  phrasesWritten(names: readonly string[]): void {
    this.#finder.rewrite(names)
  }

  /** The dev screen's and `yoke doctor`'s section: what search runs on, and the phrases. */
  summary(): SummarySection {
    const { state, model, embedded, tools, error } = this.semantic()
    const meaning =
      state === 'ready'
        ? `words and meaning: ${model}, ${embedded} of ${tools} tools embedded`
        : `words only (meaning: ${state}${error ? `: ${error.split('\n')[0]}` : ''})`
    const rows: Array<[string, string]> = [['search', meaning]]
    const phrases = this.phrases()
    if (phrases)
      rows.push([
        'phrases',
        phrases.problem?.replace(/^phrases: /, '') ??
          `kept for ${phrases.written} tools, ${phrases.waiting} waiting, ${phrases.failed} failed`,
      ])
    return { title: 'tool search', rows }
  }

  /** What the phrases have done (undefined: `phrases: off`). */
  phrases(): PhrasesStatus | undefined {
    return this.#phrases?.status
  }

  /** Resolves once no phrases are being written (the index asks for its tools' when it follows them). */
  async phrasesSettled(): Promise<void> {
    this.#follow()
    await this.#phrases?.settled()
  }

  /** starts the arm and has the finder embed the tools a caller can search */
  #startArm(caller?: string) {
    if (!this.#arm) return
    this.#arm.start()
    this.#follow(caller)
  }

  /**
   * Brings the index in line with what a search looks through: the global scope as it is now (a
   * list_changed or reload since the caller's last turn shows; only what changed is re-indexed),
   * another scope's tools as its loop last offered them; never hidden ones.
   */
  #follow(caller?: string, scope = GLOBAL): void {
    const offered = scope === GLOBAL ? undefined : this.#seen.get(caller ?? '')
    if (offered) {
      this.#globalIndexed = false
      this.#finder.follow(
        offered.filter((t) => t.name !== TOOL_SEARCH && this.#plan.declared(t) !== 'hidden'),
      )
      return
    }
    this.#refreshGlobal()
    if (this.#globalIndexed) return
    this.#finder.follow([...this.#global.tools.values()])
    this.#globalIndexed = true
  }

  /** The global scope's searchable tools now. */
  #globalTools(): RegisteredTool[] {
    this.#refreshGlobal()
    return [...this.#global.tools.values()]
  }

  /** The global tools brought up to date; what changed goes to the index when it holds them. */
  #refreshGlobal(): void {
    const difference = this.#global.refresh()
    if (difference && this.#globalIndexed) this.#finder.update(difference.put, difference.removed)
  }
}
