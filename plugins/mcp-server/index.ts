/**
 * mcp-server: yoke as an MCP server and gateway, for clients of both protocol eras on one
 * endpoint. The tools a runtime scope sees (native, plugin executables, other MCP servers' tools
 * through mcp-client) are served over Streamable HTTP (2026-07-28 requests stateless, 2025-era
 * clients in sessions; bearer token, loopback by default) and over stdio (`yoke serve --stdio`,
 * either era), in named views with their own allow/deny globs. Every call goes through the
 * runtime's pipeline, so policy, approvals (elicitation, or input_required), hooks and limits
 * apply; cancellation and progress pass both ways; spawnOnly tools are served as MCP tasks to
 * clients that support them. The skills are offered as prompts and resources, and so are the
 * upstream servers' prompts, resources and templates; changes reach connected clients.
 *
 * Each instance runs as one McpGateway (gateway.ts).
 */
import { definePlugin } from 'yoke'
import { mcpServerConfig } from './config.ts'
import { McpGateway } from './gateway.ts'

export { mcpServerConfig, type McpServerConfig } from './config.ts'
export type * from './api.ts'

export default definePlugin({
  name: 'mcp-server',
  // its HTTP endpoint holds a port: a reload ends the old version before the new one listens
  exclusive: true,
  inject: ['runtime', 'project'],
  provides: ['mcpServer'],
  config: mcpServerConfig,
  // who may reach the tools it serves, and so run them as the user: a cloned project's token or a
  // host of 0.0.0.0 waits for `yoke trust`
  sendsSecrets: () => ['token', 'tokenEnv', 'http.host', 'oauth'],
  async apply(ctx, cfg) {
    const gateway = new McpGateway(ctx, cfg)
    ctx.effect('mcp gateway', () => gateway.close())
    await gateway.start()
    ctx.control('mcp-server/summary', () => gateway.summary())
    ctx.provide('mcpServer', gateway.service())
  },
})
