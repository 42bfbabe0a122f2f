/**
 * What each thing the model can use is, as a capability: an id, the version it declares (if it
 * declares one) and a content hash. A tool's provider version comes from its source: an exec
 * package's manifest, an MCP server's serverInfo, the dynamic plugin version that registered it;
 * a native tool has only its hash.
 */
import { createHash } from 'node:crypto'
import type { Context, RegisteredTool } from 'yoke'
// their Services declarations type ctx.get('execTools'), 'installs', 'mcp', 'repository' and 'skills'
import type {} from '../exec-tools/api.ts'
import type {} from '../installs/api.ts'
import type {} from '../mcp/api.ts'
import type {} from '../repository/api.ts'
import type {} from '../skills/api.ts'
import type { Capability } from './api.ts'
import { dynamicCapabilities, dynamicVersionOf } from './dynamic.ts'

export const contentHash = (value: unknown): string =>
  `sha256:${createHash('sha256').update(stableJson(value)).digest('hex').slice(0, 12)}`

export class Identities {
  readonly #tools = new WeakMap<RegisteredTool, Capability>()
  readonly #dynamic = new WeakMap<RegisteredTool, Capability | null>()

  constructor(private readonly ctx: Context) {}

  /** A tool as a capability (cached per registration: a re-registered tool is looked at again). */
  tool(tool: RegisteredTool): Capability {
    let cap = this.#tools.get(tool)
    if (!cap) {
      const { name, description, inputSchema, outputSchema, risk, source } = tool
      const version = this.#providerVersion(source) ?? this.dynamic(tool)?.version
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

  /** The dynamic plugin version that registered `tool` (undefined: none did), looked up once. */
  dynamic(tool: RegisteredTool): Capability | undefined {
    let found = this.#dynamic.get(tool)
    if (found === undefined)
      this.#dynamic.set(tool, (found = dynamicVersionOf(this.ctx, tool) ?? null))
    return found ?? undefined
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
          // what it runs (manifest, executable, prompts): never the executable alone, never a constant
          hash: p.fingerprint
            ? `sha256:${p.fingerprint.slice(0, 12)}`
            : contentHash({ id: p.id, dir: p.dir, tools: p.tools, extras: p.extras }),
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
    out.push(...dynamicCapabilities(this.ctx.get('repository')))
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
