/**
 * mcp: the registry of MCP servers that every `mcp-client` instance joins. It keeps server names
 * unique, answers `yoke mcp list` and `yoke mcp restart`, passes holds on to a server, and offers the connected servers'
 * resources and prompts to the model through five tools, registered only while some connected
 * server has resources or prompts (no server, no tools in the model's context). The running hub
 * is an McpRegistry (registry.ts).
 */
import { z } from 'zod'
import { bindToContext, definePlugin, type Context } from 'yoke'
import type { McpHub, McpServerHandle } from './api.ts'
import { failedServerWhy, registerControls } from './controls.ts'
import './errors.ts'
import { McpRegistry } from './registry.ts'

export type * from './api.ts'

export default definePlugin({
  name: 'mcp',
  inject: ['runtime'],
  provides: ['mcp'],
  config: z.object({}).strict().prefault({}),
  apply(ctx) {
    const registry = new McpRegistry(ctx)
    const hub = registry.view()
    registerControls(ctx, hub)
    // a call to a tool of a server whose instance failed answers that failure, not UNKNOWN_TOOL
    ctx.tap(ctx.runtime.hooks.unknownTool, 'mcp', (name) => failedServerWhy(ctx, hub, name))
    ctx.provide('mcp', Object.assign(hub, { [bindToContext]: (c: Context) => boundTo(hub, c) }))
  },
})

/**
 * The hub as one consumer sees it: each add() is that consumer's effect too, so a disposed
 * instance always gives its name back; its answerers and holds go with it.
 */
function boundTo(hub: McpHub, c: Context): McpHub {
  return {
    ...hub,
    add: (h: McpServerHandle) => c.effect(`mcp server ${h.name}`, hub.add(h)),
    answerer: (a) => c.effect(`mcp answerer ${a.name}`, hub.answerer(a)),
    // a holder that goes away lets go of its holds
    hold(name, why) {
      const release = hub.hold(name, why)
      return release && c.effect(`mcp hold ${name} (${why})`, release)
    },
  }
}
