/**
 * @module tool-search/searchable
 * What a search of the global scope looks through — the global tools the runtime's `visible` taps
 * let through (a policy's bare deny, a withdrawn capability, another session's dynamic plugin are
 * not among them), less the ones `admit` refuses (hidden ones, tool_search) — kept between
 * searches instead of listed for each. It is listed again only when it may have changed:
 * - a `tools.change` in the global scope (however many names it carries: one listing at the next
 *   search, so a change is seen by the next search and a removed tool is never found);
 * - the `visible` taps themselves changed (a policy or capabilities instance reloaded);
 * - someone else listed the global scope (the agent loop does at each turn): what their listing
 *   let through is taken as it is, so a filter that changed its mind (a policy file re-read) is
 *   seen from then on.
 * Each listing is compared with what is held, and only the tools that differ are handed on.
 */
import { GLOBAL, type RegisteredTool, type ToolChange } from 'yoke'

/** What a refresh found changed: tools to (re)index, and names to drop. */
export interface Difference {
  put: RegisteredTool[]
  removed: string[]
}

export interface SearchableOptions {
  /** the global scope's tools through the visible taps (the runtime's `list()`) */
  list: () => readonly RegisteredTool[]
  /** whether a listed tool is searched at all */
  admit: (tool: RegisteredTool) => boolean
  /**
   * the `visible` hook's taps now (a change of them may change what is listed); without it nothing
   * announces changes, and every refresh lists
   */
  filters?: () => readonly unknown[]
}

export class SearchableSet {
  readonly #options: SearchableOptions
  /** what is held: the admitted tools of the last listing, by name */
  readonly #tools = new Map<string, RegisteredTool>()
  /** the last listing as it came (for the cheap "nothing changed" check) */
  #last: readonly RegisteredTool[] | undefined
  /** a global tools.change since the last listing (or nothing listed yet) */
  #stale = true
  /** a listing of the global scope someone else made since the last refresh */
  #seen: readonly RegisteredTool[] | undefined
  #filters: readonly unknown[] = []
  /** set while this set lists: its own listing is not someone else's */
  #listing = false

  constructor(options: SearchableOptions) {
    this.#options = options
  }

  /** The held tools, by name (as of the last refresh). */
  get tools(): ReadonlyMap<string, RegisteredTool> {
    return this.#tools
  }

  /** The runtime's tools.change: a global one makes the next refresh list. */
  changed(change: Pick<ToolChange, 'scope'>): void {
    if (change.scope === GLOBAL) this.#stale = true
  }

  /** A listing went through the visible taps (this one taps last): a global one is remembered. */
  listed(tools: readonly RegisteredTool[], scope: string): void {
    // a copy: the lister may sort or trim its array afterwards
    if (scope === GLOBAL && !this.#listing) this.#seen = tools.slice()
  }

  /** Brings the held tools in line with the runtime's; what differs, or undefined when nothing does. */
  refresh(): Difference | undefined {
    const filters = this.#options.filters?.()
    const refiltered = filters !== undefined && !sameItems(filters, this.#filters)
    let tools: readonly RegisteredTool[]
    if (this.#stale || refiltered || !filters) {
      this.#stale = false
      if (filters) this.#filters = [...filters]
      this.#listing = true
      try {
        tools = this.#options.list()
      } finally {
        this.#listing = false
      }
    } else if (this.#seen) tools = this.#seen
    else return undefined
    this.#seen = undefined
    return this.#follow(tools)
  }

  /**
   * What differs between `tools` and the last listing. A listing keeps the registry's order, so
   * a change is a run in the middle: only what lies between the common head and tail is compared.
   */
  #follow(tools: readonly RegisteredTool[]): Difference | undefined {
    const last = this.#last ?? []
    let head = 0
    while (head < tools.length && head < last.length && tools[head] === last[head]) head++
    let tail = 0
    while (
      tail < tools.length - head &&
      tail < last.length - head &&
      tools[tools.length - 1 - tail] === last[last.length - 1 - tail]
    )
      tail++
    if (head === tools.length && head === last.length && this.#last) return undefined
    // a copy: a list() that hands out one array it changes in place would seem unchanged
    this.#last = tools.slice()
    const now = new Map(tools.slice(head, tools.length - tail).map((t) => [t.name, t]))
    const removed: string[] = []
    for (const old of last.slice(head, last.length - tail))
      if (!now.has(old.name) && this.#tools.delete(old.name)) removed.push(old.name)
    const put: RegisteredTool[] = []
    for (const tool of now.values()) {
      if (this.#tools.get(tool.name) === tool) continue
      if (this.#options.admit(tool)) {
        this.#tools.set(tool.name, tool)
        put.push(tool)
      } else if (this.#tools.delete(tool.name)) removed.push(tool.name)
    }
    return put.length || removed.length ? { put, removed } : undefined
  }
}

function sameItems(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
