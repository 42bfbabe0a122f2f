/**
 * @module mcp/controls
 * What the hub answers CLI commands (`mcp/list`, `mcp/restart`; `mcp/summary`, the dev screen's
 * and `yoke doctor`'s section), through the control API: the same answer from a running `yoke dev`
 * and from a composition made for one command.
 */
import type { Context, FiberInfo, YokeError } from 'yoke'
import { color, type SummarySection } from 'yoke/cli'
import type { McpHub, McpServerStatus } from './api.ts'

/**
 * Every MCP server: the hub's, plus mcp-client instances that never joined it, with why: failed at
 * load (a taken name, failOnStartupError, a bad config), or waiting (for `yoke trust`: a stdio
 * server of an untrusted project; a key; a service), named with what to do. Listing runs no code:
 * a waiting instance is read from its config.
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
      const failed = f.state === 'failed'
      const why = failed ? (f.error?.message ?? 'failed') : waitsFor(ctx, f)
      return {
        name: cfg.serverName ?? f.key,
        instance: f.key,
        transport: cfg.url ? 'http' : 'stdio',
        state: failed ? 'failed' : 'waiting',
        detail: `${failed ? 'failed' : 'waiting'}: ${why}`,
        attempt: 0,
        maxAttempts: 0,
        lastError: why,
        tools: 0,
        problems: [],
      }
    })
  return [...listed, ...others]
}

/**
 * What a pending instance waits for, with what to do: PLUGIN_WAITING's reason and fix (for trust:
 * "… not trusted yet …; review the project's config, then run `yoke trust` in DIR …"), else the
 * services it needs that nothing provides.
 */
function waitsFor(ctx: Context, f: FiberInfo): string {
  const error = f.error
  if (error?.code === 'PLUGIN_WAITING') {
    const reason = error.message.replace(/^instance "[^"]*" is waiting: /, '')
    const fix = error.hint?.replace(/^It stays pending until what it waits for is there; /, '')
    return fix ? `${reason}: ${fix}` : reason
  }
  const missing = (f.plugin.inject ?? []).filter((name) => !ctx.get(name as never))
  return missing.length
    ? `for the service${missing.length > 1 ? 's' : ''} ${missing.map((n) => `"${n}"`).join(', ')} (\`yoke inspect\` says who provides ${missing.length > 1 ? 'them' : 'it'})`
    : 'for its services'
}

/**
 * Why a call names no tool when it is under the prefix `mcp__<serverName>__` of an mcp-client
 * instance that failed (failOnStartupError, a taken name, a bad config): that instance's error.
 * The longest server name wins; a server that joined the hub answers for itself (mcp-client).
 */
export function failedServerWhy(ctx: Context, hub: McpHub, name: string): YokeError | undefined {
  let best: { server: string; error?: YokeError } | undefined
  const consider = (server: string | undefined, error?: YokeError) => {
    if (server && name.startsWith(`mcp__${server}__`) && server.length > (best?.server.length ?? 0))
      best = { server, error }
  }
  for (const s of hub.list()) consider(s.name)
  for (const f of ctx.instances())
    if (f.plugin.name === 'mcp-client' && f.state === 'failed')
      consider((f.config as { serverName?: string } | undefined)?.serverName, f.error)
  return best?.error
}

export function serverState(s: McpServerStatus): string {
  if (s.state === 'connected') return color.green('connected')
  if (['connecting', 'reconnecting', 'held', 'waiting'].includes(s.state))
    return color.yellow(s.detail)
  return color.red(s.detail)
}

export function registerControls(ctx: Context, hub: McpHub): void {
  ctx.control('mcp/list', () => mcpServers(ctx, hub))
  // a held server stays down: the answer says so, and why
  ctx.control('mcp/restart', ({ name }) => {
    const held = hub.get(name)?.status()
    return {
      restarted: held?.state !== 'held' && hub.restart(name),
      ...(held?.state === 'held' && { held: held.holds ?? [held.detail] }),
      servers: hub.list().map((s) => s.name),
    }
  })
  ctx.control('mcp/transcript', ({ name }) => {
    const handle = hub.get(name)
    const servers = hub.list().map((s) => s.name)
    if (!handle) return { servers }
    if (!handle.transcript) return { offered: false, servers }
    return { entries: handle.transcript(), offered: true, servers }
  })
  ctx.control('mcp/summary', () => summary(mcpServers(ctx, hub)))
}

/** The dev screen's and `yoke doctor`'s section: one row per server, its state and what it is. */
export function summary(servers: McpServerStatus[]): SummarySection | undefined {
  if (!servers.length) return undefined
  return {
    title: 'mcp servers',
    rows: servers.map((s) => [
      s.name,
      `${serverState(s)} ${color.dim(`· ${[s.transport, s.protocol?.version, s.server && `${s.server.name} ${s.server.version}`, `${s.tools} tools`, s.skills && `${s.skills} skills`].filter(Boolean).join(' · ')}`)}`,
    ]),
  }
}
