/**
 * Views: named endpoints over one runtime, each a scope layer of its own under the served scope,
 * masked with its allow/deny globs. A tool a view masks is unknown there: the pipeline itself
 * answers UNKNOWN_TOOL, so it is neither listed nor callable. An allow mask holds the tools that
 * matched when it was made, so each tool change re-makes it (the new mask first, then the old one
 * goes: a view never shows more than it allows, not even for a moment). Each MCP session gets a
 * scope under its view's, so "allow for this session" approvals stay with that session.
 *
 * The same globs decide which upstream prompts (by served name) and resources (by served URI) a
 * view shows. Those names come from the client, so they are taken as they are: a glob's `*` spans
 * every character (a trailing newline does not step out of a deny), a name or URI with a control
 * character is never admitted, and a URI with `.`/`..` segments is refused before any glob sees it
 * (`mcp://fx/file:///pub/../secret` is not under `mcp://fx/file:///pub/*`).
 *
 * The mcp hub's own tools (read_mcp_resource, get_mcp_prompt, …) reach every server's resources
 * and prompts whatever a view's globs say of them, so a view with globs offers them only when its
 * `allow` names them one by one.
 */
import {
  GLOBAL,
  globToRegExp,
  type Disposer,
  type RegisteredTool,
  type RuntimeApi,
  type ScopeHandle,
} from 'yoke'
import { HUB_TOOLS } from '../mcp/api.ts'
import type { ViewConfig } from './config.ts'

export class View {
  readonly scope: ScopeHandle
  /** the view's config, its deny holding the hub tools it does not offer */
  readonly config: ViewConfig
  /** the globs as one test: the runtime masks global tools only, so this checks a served scope's own tools */
  readonly admits: (name: string) => boolean
  /** served from a scope other than the global one: calls are checked against the globs here too */
  readonly checksCalls: boolean
  #mask?: Disposer
  #tools?: Map<string, RegisteredTool>
  /** a tool changed since the allow mask was made */
  #stale = false
  #fingerprint = ''

  constructor(
    private readonly runtime: RuntimeApi,
    readonly instance: string,
    readonly name: string,
    config: ViewConfig,
    readonly parent: string,
  ) {
    this.scope = runtime.scope(`mcp-server:${instance}:${name}`, { parent })
    const hub =
      config.allow || config.deny ? HUB_TOOLS.filter((t) => !config.allow?.includes(t)) : []
    config = {
      ...config,
      deny: config.deny || hub.length ? [...(config.deny ?? []), ...hub] : undefined,
    }
    this.config = config
    const allow = config.allow?.map(wholeGlob)
    const deny = config.deny?.map(wholeGlob)
    this.checksCalls = parent !== GLOBAL && Boolean(allow || deny)
    this.admits = (name) =>
      !CONTROL.test(name) &&
      (!allow || allow.some((g) => g.test(name))) &&
      !(deny && deny.some((g) => g.test(name)))
    if (config.allow || config.deny)
      this.#mask = this.scope.restrict({ allow: config.allow, deny: config.deny })
    this.#fingerprint = this.#print()
  }

  /** The tools this view offers, by name (cached until the next change). */
  tools(): Map<string, RegisteredTool> {
    // a tool that came after the allow mask was made is outside it: a listing between the change
    // and the settled refresh (a client right after start) must not miss it
    if (this.#stale) this.#remask()
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
    this.#stale = Boolean(this.config.allow)
  }

  /** After tool changes have settled: re-masks, and says whether what the view offers changed. */
  refresh(): boolean {
    this.#remask()
    const print = this.#print()
    if (print === this.#fingerprint) return false
    this.#fingerprint = print
    return true
  }

  /**
   * Whether this view may show anything named under `prefix` (an upstream server's namespace:
   * `mcp__fx__`, `mcp://fx/`): some allow glob can match a name there, and no deny glob takes
   * all of it. A change in that namespace is news to this view's clients only then.
   */
  showsUnder(prefix: string): boolean {
    const { allow, deny } = this.config
    if (allow && !allow.some((g) => globReach(g, prefix).some((i) => i < g.length))) return false
    return !deny?.some((g) =>
      globReach(g, prefix).some((i) => i < g.length && /^\*+$/.test(g.slice(i))),
    )
  }

  /** A scope for one session, under this view's. */
  sessionScope(session: string): ScopeHandle {
    return this.runtime.scope(`${this.scope.key}/${session}`, { parent: this.scope.key })
  }

  /** An allow mask is a snapshot of the tools it matched: made anew after a change (the new one first, so the view never shows more than it allows). */
  #remask(): void {
    this.#tools = undefined
    this.#stale = false
    if (!this.config.allow) return
    const previous = this.#mask
    this.#mask = this.scope.restrict({ allow: this.config.allow, deny: this.config.deny })
    void previous?.()
  }

  #print(): string {
    return [...this.tools().values()].map((t) => t.id).join(',')
  }
}

/** C0 and C1 control characters, DEL, and the line separators: in no name or URI a view serves. */
// eslint-disable-next-line no-control-regex -- finding them is the point
export const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

/** A glob as a test over the whole string, whatever it holds (`.` spans line breaks too). */
function wholeGlob(glob: string): RegExp {
  return new RegExp(globToRegExp(glob).source, 's')
}

/**
 * Why a resource URI is not served as it is, or undefined: a control character, or a `.`/`..`
 * path segment (also percent-encoded, or between backslashes), which an upstream server may
 * resolve to somewhere the view's globs do not allow.
 */
export function uriRefusal(uri: string): string | undefined {
  if (CONTROL.test(uri)) return 'it holds a control character'
  const path = uri.split(/[?#]/, 1)[0]!
  const dots = path.split(/[\\/]/).some((seg) => /^(\.|%2e){1,2}$/i.test(seg))
  if (dots) return 'it has a "." or ".." segment; ask for the URI with those resolved'
  return undefined
}

/**
 * Where glob `glob` can be after reading `prefix`: the indexes of what is left of it to match
 * (glob.length: the glob has matched exactly `prefix`). Empty: no name under `prefix` matches.
 */
function globReach(glob: string, prefix: string): number[] {
  const close = (at: Set<number>) => {
    for (const i of at) if (glob[i] === '*') at.add(i + 1) // a `*` may match nothing
    return at
  }
  let at = close(new Set([0]))
  for (const c of prefix) {
    const next = new Set<number>()
    for (const i of at) {
      if (glob[i] === '*') next.add(i)
      else if (i < glob.length && (glob[i] === '?' || glob[i] === c)) next.add(i + 1)
    }
    at = close(next)
    if (!at.size) break
  }
  return [...at]
}
