/**
 * Which clients hear that a list changed, and when. A change (the runtime's tools, the skills, the
 * Claude plugins' commands, an upstream server's lists or state) settles for changeDebounceMs,
 * then each view's clients hear once per list, and only the views that may show what changed: a
 * skill change reaches the views that serve skills, an upstream server's the views that may show
 * something of its namespace. The services it follows may come and go (a reload): a tool change
 * is the moment to look again.
 *
 * With replicas (cluster.ts), what this replica announces is broadcast, and what another replica
 * broadcast is announced here too: a 2026-07-28 client listens on one replica while its tools/list
 * may be answered by any, so any replica's change is its news. What was heard is never broadcast
 * again.
 */
import type { Disposer, InjectedContext } from 'yoke'
import type { McpHub } from '../mcp/api.ts'
import type { List } from './session.ts'
import { promptName, resourceUri, type Upstream } from './upstream.ts'
import type { View } from './views.ts'

/** The part of the instance's context the announcer uses: taps, services, its end. */
export type ChangesContext = Pick<
  InjectedContext<['runtime']>,
  'runtime' | 'tap' | 'get' | 'signal'
>

export class ListChanges {
  /** the lists due to be announced, and the views whose clients hear of each */
  readonly #due = new Map<List, Set<View>>()
  /** the same, as other replicas broadcast them (announced here, not broadcast again) */
  readonly #heard = new Map<List, Set<View>>()
  /** sends what this replica announces to the others, while it has replicas */
  broadcast?: (lists: Array<[List, string[]]>) => void
  #timer?: NodeJS.Timeout
  /**
   * The services followed now, each known by its hooks: every `ctx.get` is a copy bound to this
   * instance, but its hooks are one object for all copies (what is still there is neither
   * re-tapped nor news).
   */
  #seen: { skills?: object; plugins?: object; hub?: object } = {}
  #untap: Disposer[] = []
  #followed = false

  constructor(
    private readonly ctx: ChangesContext,
    private readonly views: Map<string, View>,
    private readonly upstream: Upstream,
    /** tells the clients of `view` that `list` changed */
    private readonly notify: (list: List, view: View) => void,
    private readonly debounceMs: number,
  ) {}

  /** Follows the runtime's tool changes and the services present now. */
  start(): void {
    this.ctx.tap(this.ctx.runtime.hooks.change, 'mcp-server', () => {
      for (const view of this.views.values()) view.invalidate()
      this.soon(['tools'])
    })
    this.follow()
  }

  /** `lists` changed for the clients of `to` (every view by default): they hear once it settles. */
  soon(lists: List[], to: Iterable<View> = this.views.values()): void {
    this.#add(this.#due, lists, to)
  }

  /** What another replica announced (each list and the names of the views that heard it). */
  hear(lists: ReadonlyArray<readonly [string, readonly string[]]>): void {
    for (const [list, names] of lists) {
      if (list !== 'tools' && list !== 'prompts' && list !== 'resources') continue
      const views = names.map((n) => this.views.get(n)).filter((v) => v !== undefined)
      this.#add(this.#heard, [list], views)
    }
  }

  #add(due: Map<List, Set<View>>, lists: List[], to: Iterable<View>) {
    const targets = [...to]
    if (!targets.length) return
    for (const list of lists) {
      const set = due.get(list) ?? new Set<View>()
      for (const view of targets) set.add(view)
      due.set(list, set)
    }
    this.#timer ??= setTimeout(() => this.#announce(), this.debounceMs)
  }

  close(): void {
    clearTimeout(this.#timer)
    for (const off of this.#untap) void off()
    this.#untap = []
  }

  #announce() {
    this.#timer = undefined
    if (this.ctx.signal.aborted) return
    const own = [...this.#due]
    const heard = [...this.#heard]
    this.#due.clear()
    this.#heard.clear()
    this.follow()
    const told = new Map<List, Set<View>>()
    for (const [list, targets] of own) {
      // a tool change is news only to the views whose tools it changed
      const changed =
        list === 'tools' ? [...this.views.values()].filter((v) => v.refresh()) : [...targets]
      if (changed.length) told.set(list, new Set(changed))
    }
    const news = [...told].map(
      ([list, views]) => [list, [...views].map((v) => v.name)] as [List, string[]],
    )
    for (const [list, targets] of heard) {
      const set = told.get(list) ?? new Set<View>()
      for (const view of targets) set.add(view)
      told.set(list, set)
    }
    for (const [list, views] of told) for (const view of views) this.notify(list, view)
    if (news.length) this.broadcast?.(news)
  }

  /** Taps the skills, Claude plugins and mcp hub services present now, if they are new. */
  follow(): void {
    const { ctx } = this
    const skills = ctx.get('skills')
    const plugins = ctx.get('claudePlugins')
    const hub = ctx.get('mcp')
    const seen = this.#seen
    if (skills?.hooks === seen.skills && plugins?.hooks === seen.plugins && hub?.hooks === seen.hub)
      return
    for (const off of this.#untap) void off()
    // a service that came or went is news to connected clients (at the start there are none)
    const replaced = this.#followed
    this.#followed = true
    this.#seen = { skills: skills?.hooks, plugins: plugins?.hooks, hub: hub?.hooks }
    const views = [...this.views.values()]
    this.#untap = [
      ...(skills
        ? [
            ctx.tap(skills.hooks.change, 'mcp-server', () =>
              this.soon(
                ['prompts', 'resources'],
                views.filter((v) => v.config.skills),
              ),
            ),
          ]
        : []),
      ...(plugins
        ? [
            ctx.tap(plugins.hooks.change, 'mcp-server', () =>
              this.soon(
                ['prompts'],
                views.filter((v) => v.config.commands),
              ),
            ),
          ]
        : []),
      ...(hub ? this.#followHub(hub) : []),
    ]
    this.upstream.forget()
    if (replaced) this.soon(['prompts', 'resources'])
  }

  #followHub(hub: McpHub): Disposer[] {
    return [
      this.ctx.tap(hub.hooks.listChanged, 'mcp-server', (name, list) => {
        this.upstream.forget(name)
        if (list !== 'tools') this.soon([list], this.#showing(name, list))
      }),
      this.ctx.tap(hub.hooks.change, 'mcp-server', (status) => {
        this.upstream.forget(status.name)
        for (const list of this.upstream.offersChanged(status.name))
          this.soon([list], this.#showing(status.name, list))
      }),
    ]
  }

  /** The views that may show something of an upstream server's prompts or resources. */
  #showing(server: string, list: 'prompts' | 'resources'): View[] {
    const under = list === 'prompts' ? promptName(server, '') : resourceUri(server, '')
    return [...this.views.values()].filter((v) => v.showsUnder(under))
  }
}
