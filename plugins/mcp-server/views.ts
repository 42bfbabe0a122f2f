/**
 * Views: named endpoints over one runtime, each a scope layer of its own under the served scope,
 * masked with its allow/deny globs. A tool a view masks is unknown there: the pipeline itself
 * answers UNKNOWN_TOOL, so it is neither listed nor callable. An allow mask holds the tools that
 * matched when it was made, so each tool change re-makes it (the new mask first, then the old one
 * goes: a view never shows more than it allows, not even for a moment). Each MCP session gets a
 * scope under its view's, so "allow for this session" approvals stay with that session.
 */
import {
  GLOBAL,
  globToRegExp,
  type Disposer,
  type RegisteredTool,
  type RuntimeApi,
  type ScopeHandle,
} from 'yoke'
import type { ViewConfig } from './config.ts'

export class View {
  readonly scope: ScopeHandle
  /** the globs as one test: the runtime masks global tools only, so this checks a served scope's own tools */
  readonly admits: (name: string) => boolean
  /** served from a scope other than the global one: calls are checked against the globs here too */
  readonly checksCalls: boolean
  #mask?: Disposer
  #tools?: Map<string, RegisteredTool>
  #fingerprint = ''

  constructor(
    private readonly runtime: RuntimeApi,
    readonly instance: string,
    readonly name: string,
    readonly config: ViewConfig,
    readonly parent: string,
  ) {
    this.scope = runtime.scope(`mcp-server:${instance}:${name}`, { parent })
    const allow = config.allow?.map(globToRegExp)
    const deny = config.deny?.map(globToRegExp)
    this.checksCalls = parent !== GLOBAL && Boolean(allow || deny)
    this.admits = (tool) =>
      (!allow || allow.some((g) => g.test(tool))) && !(deny && deny.some((g) => g.test(tool)))
    if (config.allow || config.deny)
      this.#mask = this.scope.restrict({ allow: config.allow, deny: config.deny })
    this.#fingerprint = this.#print()
  }

  /** The tools this view offers, by name (cached until the next change). */
  tools(): Map<string, RegisteredTool> {
    return (this.#tools ??= new Map(
      this.scope
        .list()
        .filter((t) => this.admits(t.name))
        .map((t) => [t.name, t]),
    ))
  }

  /** A tool changed: the cached list goes at once (the re-mask and the notice wait for refresh). */
  invalidate(): void {
    this.#tools = undefined
  }

  /** After tool changes have settled: re-masks, and says whether what the view offers changed. */
  refresh(): boolean {
    this.#tools = undefined
    if (this.config.allow) {
      // an allow mask is a snapshot: make the new one first, so the view never shows more than it allows
      const previous = this.#mask
      this.#mask = this.scope.restrict({ allow: this.config.allow, deny: this.config.deny })
      void previous?.()
    }
    const print = this.#print()
    if (print === this.#fingerprint) return false
    this.#fingerprint = print
    return true
  }

  /** A scope for one session, under this view's. */
  sessionScope(session: string): ScopeHandle {
    return this.runtime.scope(`${this.scope.key}/${session}`, { parent: this.scope.key })
  }

  #print(): string {
    return [...this.tools().values()].map((t) => t.id).join(',')
  }
}
