/**
 * mcp: the registry of MCP servers that every `mcp-client` instance joins. It keeps server names
 * unique, answers `yoke mcp list` and `yoke mcp restart`, and offers the connected servers'
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
import { registerControls } from './controls.ts'
import './errors.ts'
import { promptTools, resourceTools } from './tools.ts'
import type { McpHub, McpServerHandle, McpServerStatus } from './api.ts'

export type * from './api.ts'

export default definePlugin({
  name: 'mcp',
  inject: ['runtime'],
  provides: ['mcp'],
  config: z.object({}).strict().prefault({}),
  apply(ctx) {
    const servers = new Map<string, McpServerHandle>()
    const hooks = { change: new SyncHook<[McpServerStatus]>(['status']) }
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
    const hub: McpHub = {
      hooks,
      add(handle) {
        const held = servers.get(handle.name)
        if (held)
          throw new YokeError('MCP_NAME_CONFLICT', {
            name: handle.name,
            first: held.instance,
            second: handle.instance,
          })
        servers.set(handle.name, handle)
        return ctx.effect(`mcp server ${handle.name}`, () => {
          if (servers.get(handle.name) === handle) servers.delete(handle.name)
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
      list: () =>
        [...servers.values()].map((s) => s.status()).sort((a, b) => a.name.localeCompare(b.name)),
      get: (name) => servers.get(name),
      restart(name) {
        const server = servers.get(name)
        server?.restart()
        return server !== undefined
      },
    }
    registerControls(ctx, hub)
    // each consumer's add() is its own effect too, so a disposed instance always gives its name back
    ctx.provide(
      'mcp',
      Object.assign(hub, {
        [bindToContext]: (c: Context) => ({
          ...hub,
          add: (h: McpServerHandle) => c.effect(`mcp server ${h.name}`, hub.add(h)),
        }),
      }),
    )
  },
})
