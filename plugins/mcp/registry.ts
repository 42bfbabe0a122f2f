/**
 * The running `mcp` hub: the servers that joined (one per name; a reloading instance's new
 * version stands in front of its old one), the resource and prompt tools offered while some
 * connected server can answer them, and the answerers of upstream questions. Its fields are that
 * state; `view()` is the `mcp` service.
 */
import {
  messageOf,
  SyncHook,
  YokeError,
  type Disposer,
  type InjectedContext,
  type ToolDefinition,
} from 'yoke'
import type { McpHub, McpList, McpQuestion, McpServerHandle, McpServerStatus } from './api.ts'
import { answererList, type Answered } from './ask.ts'
import { promptTools, resourceTools } from './tools.ts'

export type McpContext = InjectedContext<['runtime']>

type Offered = 'resources' | 'prompts'

export class McpRegistry {
  readonly hooks = {
    change: new SyncHook<[McpServerStatus]>(['status']),
    listChanged: new SyncHook<[string, McpList]>(['name', 'list']),
  }
  /** the servers by name: the newest version of each instance */
  readonly #servers = new Map<string, McpServerHandle>()
  /** handles a reloading instance's new version stands in front of, newest first */
  readonly #older = new Map<string, McpServerHandle[]>()
  /** the hub's resource and prompt tools, while offered */
  readonly #offered: Record<Offered, Disposer[] | undefined> = {
    resources: undefined,
    prompts: undefined,
  }
  /** who answers upstream questions; none takes it: the approval service's bridges (a terminal) may */
  readonly #answerers: ReturnType<typeof answererList>
  /** the `mcp` service */
  readonly #view: McpHub

  constructor(private readonly ctx: McpContext) {
    this.#answerers = answererList(
      (message, err) => ctx.logger.warn(message, err),
      (q) => this.#toApproval(q),
    )
    this.#view = {
      hooks: this.hooks,
      answerer: (answerer) =>
        ctx.effect(`mcp answerer ${answerer.name}`, this.#answerers.add(answerer)),
      ask: (question) => this.#answerers.ask(question),
      add: (handle) => this.add(handle),
      changed: (name) => this.changed(name),
      listChanged: (name, list) => this.listChanged(name, list),
      list: () => this.list(),
      get: (name) => this.#servers.get(name),
      restart: (name) => this.restart(name),
      hold: (name, why) => this.#servers.get(name)?.hold(why),
    }
  }

  /** The `mcp` service (each consumer gets it bound to itself: see index.ts). */
  view(): McpHub {
    return this.#view
  }

  /** Joins a server; the new version of a reloading instance (the same key) takes the name over. */
  add(handle: McpServerHandle): Disposer {
    const held = this.#servers.get(handle.name)
    if (held && held.instance !== handle.instance)
      throw new YokeError('MCP_NAME_CONFLICT', {
        name: handle.name,
        first: held.instance,
        second: handle.instance,
      })
    if (held) this.#older.set(handle.name, [held, ...(this.#older.get(handle.name) ?? [])])
    this.#servers.set(handle.name, handle)
    return this.ctx.effect(`mcp server ${handle.name}`, () => this.#leave(handle))
  }

  changed(name: string): void {
    const server = this.#servers.get(name)
    if (!server || this.ctx.signal.aborted) return
    this.#offer()
    try {
      this.hooks.change.call(server.status())
    } catch (err) {
      this.ctx.logger.error(`a tap on mcp.change threw: ${messageOf(err)}`, err)
    }
  }

  listChanged(name: string, list: McpList): void {
    if (!this.#servers.has(name) || this.ctx.signal.aborted) return
    try {
      this.hooks.listChanged.call(name, list)
    } catch (err) {
      this.ctx.logger.error(`a tap on mcp.listChanged threw: ${messageOf(err)}`, err)
    }
  }

  list(): McpServerStatus[] {
    return [...this.#servers.values()]
      .map((s) => s.status())
      .sort((a, b) => a.name.localeCompare(b.name))
  }

  restart(name: string): boolean {
    const server = this.#servers.get(name)
    server?.restart()
    return server !== undefined
  }

  /** A handle leaves: the version below it (if any) takes its name back. */
  #leave(handle: McpServerHandle): void {
    const { name } = handle
    const below = (this.#older.get(name) ?? []).filter((h) => h !== handle)
    if (this.#servers.get(name) === handle) {
      const [next, ...rest] = below
      if (next) this.#servers.set(name, next)
      else this.#servers.delete(name)
      this.#older.set(name, rest)
    } else this.#older.set(name, below)
    if (!this.#older.get(name)?.length) this.#older.delete(name)
    if (!this.ctx.signal.aborted) this.#offer()
  }

  /** The resource and prompt tools exist while some connected server can answer them. */
  #offer(): void {
    for (const kind of ['resources', 'prompts'] as const) {
      const want = [...this.#servers.values()].some(
        (s) => s.client()?.getServerCapabilities()?.[kind],
      )
      if (want && !this.#offered[kind])
        this.#offered[kind] = (kind === 'resources' ? resourceTools : promptTools)(
          this.#view,
        ).flatMap((t) => this.#register(t))
      else if (!want && this.#offered[kind]) {
        for (const dispose of this.#offered[kind]!) void dispose()
        this.#offered[kind] = undefined
      }
    }
  }

  /** A name another instance holds costs that tool only. */
  #register(tool: ToolDefinition): Disposer[] {
    try {
      return [this.ctx.runtime.register(tool)]
    } catch (err) {
      this.ctx.logger.error(`${tool.name} is not offered: ${messageOf(err)}`)
      return []
    }
  }

  /** A question no MCP answerer takes: the approval service's bridges (a terminal) may answer it. */
  async #toApproval(q: McpQuestion): Promise<Answered> {
    const approval = this.ctx.get('approval')
    if (!approval)
      return { action: 'cancel', why: 'nothing in yoke answers MCP servers\u2019 questions here' }
    const { url, requestedSchema: schema, ...rest } = q
    return approval.question({
      from: `MCP server "${q.server}"`,
      call: rest.call,
      mode: rest.mode,
      message: rest.message,
      schema,
      url,
      ...(rest.elicitationId && { id: rest.elicitationId }),
      signal: rest.signal,
    })
  }
}
