/**
 * Which clients hear that a list changed, and when. A change (the runtime's tools, the skills, the
 * Claude plugins' commands, an upstream server's lists or state) settles for changeDebounceMs,
 * then each view's clients hear once per list, and only the views that may show what changed: a
 * skill change reaches the views that serve skills, an upstream server's the views that may show
 * something of its namespace. The services it follows may come and go (a reload): a tool change
 * is the moment to look again.
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
    const targets = [...to]
    if (!targets.length) return
    for (const list of lists) {
      const set = this.#due.get(list) ?? new Set<View>()
      for (const view of targets) set.add(view)
      this.#due.set(list, set)
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
    const lists = [...this.#due]
    this.#due.clear()
    this.follow()
    for (const [list, targets] of lists) {
      if (list !== 'tools') for (const view of targets) this.notify(list, view)
      else for (const view of this.views.values()) if (view.refresh()) this.notify('tools', view)
    }
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
