/**
 * @module mcp/controls
 * What the hub answers CLI commands (`yoke mcp list|restart`, the dev summary), through the
 * control API: the same answer from a running `yoke dev` and from a composition made for one
 * command.
 */
import type { Context } from 'yoke'
import { color, type SummarySection } from 'yoke/cli'
import type { McpHub, McpServerStatus } from './api.ts'

/**
 * Every MCP server: the hub's, plus mcp-client instances that never joined it (failed at load: a
 * taken name, failOnStartupError, a bad config; or waiting for a service), with why.
 */
export function mcpServers(ctx: Context, hub: McpHub): McpServerStatus[] {
  const listed = hub.list()
  const joined = new Set(listed.map((s) => s.instance))
  const others = ctx
    .instances()
    .filter(
      (f) =>
        f.plugin.name === 'mcp-client' &&
        !joined.has(f.key) &&
        (f.state === 'failed' || f.state === 'pending'),
    )
    .map((f): McpServerStatus => {
      const cfg = (f.config ?? {}) as { serverName?: string; url?: string }
      const why = f.state === 'failed' ? (f.error?.message ?? 'failed') : 'waiting for a service'
      return {
        name: cfg.serverName ?? f.key,
        instance: f.key,
        transport: cfg.url ? 'http' : 'stdio',
        state: 'failed',
        detail: `failed: ${why}`,
        attempt: 0,
        maxAttempts: 0,
        lastError: why,
        tools: 0,
        problems: [],
      }
    })
  return [...listed, ...others]
}

export function serverState(s: McpServerStatus): string {
  if (s.state === 'connected') return color.green('connected')
  if (s.state === 'connecting' || s.state === 'reconnecting' || s.state === 'held')
    return color.yellow(s.detail)
  return color.red(s.detail)
}

export function registerControls(ctx: Context, hub: McpHub): void {
  ctx.control('mcp-list', () => mcpServers(ctx, hub))
  // a held server stays down: the answer says so, and why
  ctx.control('mcp-restart', ({ name }) => {
    const held = hub.get(String(name))?.status()
    return {
      restarted: held?.state !== 'held' && hub.restart(String(name)),
      ...(held?.state === 'held' && { held: held.holds ?? [held.detail] }),
      servers: hub.list().map((s) => s.name),
    }
  })
  ctx.control('summary:mcp servers', (): SummarySection | undefined => {
    const servers = mcpServers(ctx, hub)
    if (!servers.length) return undefined
    return {
      rows: servers.map((s) => [
        s.name,
        `${serverState(s)} ${color.dim(`· ${[s.transport, s.protocol?.version, s.server && `${s.server.name} ${s.server.version}`, `${s.tools} tools`].filter(Boolean).join(' · ')}`)}`,
      ]),
    }
  })
}
