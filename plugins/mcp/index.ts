/**
 * mcp: the registry of MCP servers that every `mcp-client` instance joins. It keeps server names
 * unique, answers `yoke mcp list` and `yoke mcp restart`, passes holds on to a server, and offers the connected servers'
 * resources and prompts to the model through five tools, registered only while some connected
 * server has resources or prompts (no server, no tools in the model's context).
 */
import { z } from 'zod'
import {
  bindToContext,
  definePlugin,
  SyncHook,
  YokeError,
  type Context,
  type Disposer,
  type ToolDefinition,
} from 'yoke'
import { failedServerWhy, registerControls } from './controls.ts'
import './errors.ts'
import { promptTools, resourceTools } from './tools.ts'
import { answererList } from './ask.ts'
import type { McpHub, McpList, McpServerHandle, McpServerStatus } from './api.ts'

export type * from './api.ts'

export default definePlugin({
  name: 'mcp',
  inject: ['runtime'],
  provides: ['mcp'],
  config: z.object({}).strict().prefault({}),
  apply(ctx) {
    const servers = new Map<string, McpServerHandle>()
    /** handles a reloading instance's new version stands in front of, newest first */
    const older = new Map<string, McpServerHandle[]>()
    const hooks = {
      change: new SyncHook<[McpServerStatus]>(['status']),
      listChanged: new SyncHook<[string, McpList]>(['name', 'list']),
    }
    const offered = {
      resources: undefined as Disposer[] | undefined,
      prompts: undefined as Disposer[] | undefined,
    }
    const connected = (kind: 'resources' | 'prompts') =>
      [...servers.values()].some((s) => s.client()?.getServerCapabilities()?.[kind])
    // the resource and prompt tools exist while some connected server can answer them
    const offer = () => {
      for (const kind of ['resources', 'prompts'] as const) {
        const want = connected(kind)
        if (want && !offered[kind])
          offered[kind] = (kind === 'resources' ? resourceTools : promptTools)(hub).flatMap((t) =>
            register(t),
          )
        else if (!want && offered[kind]) {
          for (const dispose of offered[kind]!) void dispose()
          offered[kind] = undefined
        }
      }
    }
    // a name another instance holds costs that tool only
    const register = (tool: ToolDefinition): Disposer[] => {
      try {
        return [ctx.runtime.register(tool)]
      } catch (err) {
        ctx.logger.error(`${tool.name} is not offered: ${(err as Error).message}`)
        return []
      }
    }
    // no MCP answerer takes it: the approval service's bridges (a terminal) may
    const answerers = answererList(
      (message, err) => ctx.logger.warn(message, err),
      async (q) => {
        const approval = ctx.get('approval')
        if (!approval)
          return {
            action: 'cancel',
            why: 'nothing in yoke answers MCP servers\u2019 questions here',
          }
        const { url, requestedSchema: schema, ...rest } = q
        return approval.question({
          from: `MCP server "${q.server}"`,
          call: rest.call,
          mode: rest.mode,
          message: rest.message,
          schema,
          url,
          signal: rest.signal,
        })
      },
    )
    const hub: McpHub = {
      hooks,
      answerer: (answerer) => ctx.effect(`mcp answerer ${answerer.name}`, answerers.add(answerer)),
      ask: (question) => answerers.ask(question),
      add(handle) {
        const held = servers.get(handle.name)
        // the new version of a reloading instance (the same key) takes the name over from the old
        if (held && held.instance !== handle.instance)
          throw new YokeError('MCP_NAME_CONFLICT', {
            name: handle.name,
            first: held.instance,
            second: handle.instance,
          })
        if (held) older.set(handle.name, [held, ...(older.get(handle.name) ?? [])])
        servers.set(handle.name, handle)
        return ctx.effect(`mcp server ${handle.name}`, () => {
          const below = (older.get(handle.name) ?? []).filter((h) => h !== handle)
          if (servers.get(handle.name) === handle) {
            const [next, ...rest] = below
            if (next) servers.set(handle.name, next)
            else servers.delete(handle.name)
            older.set(handle.name, rest)
          } else older.set(handle.name, below)
          if (!older.get(handle.name)?.length) older.delete(handle.name)
          if (!ctx.signal.aborted) offer()
        })
      },
      changed(name) {
        const server = servers.get(name)
        if (!server || ctx.signal.aborted) return
        offer()
        try {
          hooks.change.call(server.status())
        } catch (err) {
          ctx.logger.error(`a tap on mcp.change threw: ${(err as Error)?.message ?? err}`, err)
        }
      },
      listChanged(name, list) {
        if (!servers.has(name) || ctx.signal.aborted) return
        try {
          hooks.listChanged.call(name, list)
        } catch (err) {
          ctx.logger.error(`a tap on mcp.listChanged threw: ${(err as Error)?.message ?? err}`, err)
        }
      },
      list: () =>
        [...servers.values()].map((s) => s.status()).sort((a, b) => a.name.localeCompare(b.name)),
      get: (name) => servers.get(name),
      restart(name) {
        const server = servers.get(name)
        server?.restart()
        return server !== undefined
      },
      hold: (name, why) => servers.get(name)?.hold(why),
    }
    registerControls(ctx, hub)
    // a call to a tool of a server whose instance failed answers that failure, not UNKNOWN_TOOL
    ctx.tap(ctx.runtime.hooks.unknownTool, 'mcp', (name) => failedServerWhy(ctx, hub, name))
    // each consumer's add() is its own effect too, so a disposed instance always gives its name back
    ctx.provide(
      'mcp',
      Object.assign(hub, {
        [bindToContext]: (c: Context) => ({
          ...hub,
          add: (h: McpServerHandle) => c.effect(`mcp server ${h.name}`, hub.add(h)),
          answerer: (a: Parameters<McpHub['answerer']>[0]) =>
            c.effect(`mcp answerer ${a.name}`, hub.answerer(a)),
          // a holder that goes away lets go of its holds
          hold(name: string, why: string) {
            const release = hub.hold(name, why)
            return release && c.effect(`mcp hold ${name} (${why})`, release)
          },
        }),
      }),
    )
  },
})
