/**
 * What each thing the model can use is, as a capability: an id, the version it declares (if it
 * declares one) and a content hash. A tool's provider version comes from its source: an exec
 * package's manifest, an MCP server's serverInfo; a native tool has only its hash.
 */
import { createHash } from 'node:crypto'
import type { Context, RegisteredTool } from 'yoke'
// their Services declarations type ctx.get('execTools'), 'installs', 'mcp' and 'skills'
import type {} from '../exec-tools/api.ts'
import type {} from '../installs/api.ts'
import type {} from '../mcp/api.ts'
import type {} from '../skills/api.ts'
import type { Capability } from './api.ts'

export const contentHash = (value: unknown): string =>
  `sha256:${createHash('sha256').update(stableJson(value)).digest('hex').slice(0, 12)}`

/** What R's repository service is read as (structurally: any `list()` of `{ id, version, hash }`). */
interface DynamicPlugins {
  list?(): Array<{ id?: unknown; version?: unknown; hash?: unknown }>
}

export class Identities {
  readonly #tools = new WeakMap<RegisteredTool, Capability>()

  constructor(private readonly ctx: Context) {}

  /** A tool as a capability (cached per registration: a re-registered tool is looked at again). */
  tool(tool: RegisteredTool): Capability {
    let cap = this.#tools.get(tool)
    if (!cap) {
      const { name, description, inputSchema, outputSchema, risk, source } = tool
      const version = this.#providerVersion(source)
      cap = {
        kind: 'tool',
        id: name,
        ...(version !== undefined && { version }),
        hash: contentHash({ name, description, inputSchema, outputSchema, risk, source }),
        source,
        owner: tool.owner,
      }
      this.#tools.set(tool, cap)
    }
    return cap
  }

  /** The providers and other capabilities: packages, MCP servers, skills, installs, dynamic plugins. */
  others(tools: readonly RegisteredTool[]): Capability[] {
    const out: Capability[] = []
    for (const p of this.ctx.get('execTools')?.list() ?? [])
      if (p.state === 'loaded')
        out.push({
          kind: 'package',
          id: `exec:${p.id}`,
          ...(p.version !== undefined && { version: p.version }),
          hash: p.sha256 ? `sha256:${p.sha256.slice(0, 12)}` : contentHash(p.tools),
        })
    for (const s of this.ctx.get('mcp')?.list() ?? []) {
      const id = `mcp:${s.name}`
      const mine = tools.filter((t) => t.source === id).map((t) => this.tool(t).hash)
      out.push({
        kind: 'server',
        id,
        ...(s.server?.version !== undefined && { version: s.server.version }),
        hash: contentHash(mine.sort()),
      })
    }
    for (const skill of this.ctx.get('skills')?.list() ?? [])
      out.push({
        kind: 'skill',
        id: `skill:${skill.name}`,
        ...(skill.version !== undefined && { version: skill.version }),
        hash: contentHash({ description: skill.description, body: skill.body }),
      })
    for (const i of this.ctx.get('installs')?.list() ?? [])
      out.push({
        kind: 'install',
        id: `install:${i.entry.name}`,
        ...(i.entry.version !== undefined && { version: i.entry.version }),
        hash: `sha256:${i.entry.sha256.replace(/^sha256:/, '').slice(0, 12)}`,
        ...(i.state !== 'registered' && i.state !== 'shadowed' && { refused: i.why ?? i.state }),
      })
    const repository = this.ctx.get('repository' as never) as DynamicPlugins | undefined
    for (const d of repository?.list?.() ?? [])
      if (typeof d.id === 'string')
        out.push({
          kind: 'plugin',
          id: `plugin:${d.id}`,
          ...(typeof d.version === 'string' && { version: d.version }),
          hash: typeof d.hash === 'string' ? d.hash : contentHash(d),
        })
    return out
  }

  #providerVersion(source: string): string | undefined {
    if (source.startsWith('exec:'))
      return this.ctx
        .get('execTools')
        ?.list()
        .find((p) => p.id === source.slice(5) && p.state === 'loaded')?.version
    if (source.startsWith('mcp:'))
      return this.ctx.get('mcp')?.get(source.slice(4))?.status().server?.version
    return undefined
  }
}

function stableJson(value: unknown): string {
  return (
    JSON.stringify(value, (_k, v) =>
      v && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
        : v,
    ) ?? 'null'
  )
}
