/**
 * mcp-client: one MCP server (stdio, Streamable HTTP or SSE; the 2025 era or 2026-07-28) whose
 * tools run through the runtime's pipeline like any other, as `mcp__<server>__<tool>`. A
 * supervisor keeps it connected (backoff, an outage budget, then giving up until restarted);
 * during an outage its calls end at once with SERVER_UNAVAILABLE saying what is going on. A hold
 * (`mcp.hold`) disconnects it on purpose until released. Every instance joins the `mcp`
 * registry, which also carries the server's questions to yoke. The running instance is an
 * McpClientInstance (instance.ts).
 */
import { definePlugin } from 'yoke'
import { mcpClientConfig } from './config.ts'
import { McpClientInstance } from './instance.ts'
import './errors.ts'

export default definePlugin({
  name: 'mcp-client',
  inject: ['runtime', 'mcp', 'project'],
  config: mcpClientConfig,
  // a stdio server from a project's own config starts after `yoke trust`; a url one needs no trust
  runsProjectCode: (cfg) => cfg.command !== undefined,
  // sampling lets the server ask the user's model for completions, on the user's key
  sendsSecrets: (cfg) => (cfg.sampling ? ['sampling'] : []),
  async apply(ctx, cfg) {
    const instance = new McpClientInstance(ctx, cfg)
    ctx.mcp.add(instance.handle())
    // a call to one of its tools while they are away answers why, not UNKNOWN_TOOL
    ctx.tap(ctx.runtime.hooks.unknownTool, 'mcp-client', (name) => instance.whyAway(name))
    // a skills service that comes, restarts or goes: the server's skills follow it
    ctx.tap(ctx.hooks.state, 'mcp-client', () => instance.skills.serviceChanged())
    ctx.effect(`mcp ${cfg.serverName} connection`, () => instance.close())
    // an instance removed while its server starts does not wait for the attempt to end
    await instance.start()
  },
})
