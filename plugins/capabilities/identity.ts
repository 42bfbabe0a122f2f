/**
 * What each thing the model can use is, as a capability: an id, the version it declares (if it
 * declares one) and a content hash. A tool's provider version comes from its source: an exec
 * package's manifest, an MCP server's serverInfo, the dynamic plugin version that registered it;
 * a native tool has only its hash.
 */
import { createHash } from 'node:crypto'
import type { Context, RegisteredTool } from 'yoke'
import type { Capability } from './api.ts'
import type { Unloadable } from './unload.ts'
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
    const out = [...this.packages(), ...this.servers(tools), ...this.skills()].map((u) => u.cap)
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

  /** The exec packages loaded, or held by a rule (their identity stays while they are). */
  packages(): Unloadable[] {
    return (this.ctx.get('execTools')?.list() ?? [])
      .filter((p) => p.state === 'loaded' || p.state === 'held')
      .map((p) => ({
        key: p.id,
        held: p.state === 'held',
        ready: true, // a held package's list entry keeps what it is now
        cap: {
          kind: 'package',
          id: `exec:${p.id}`,
          ...(p.version !== undefined && { version: p.version }),
          // what it runs (manifest, executable, prompts): never the executable alone, never a constant
          hash: p.fingerprint
            ? `sha256:${p.fingerprint.slice(0, 12)}`
            : contentHash({ id: p.id, dir: p.dir, tools: p.tools, extras: p.extras }),
          ...(p.state === 'held' && { refused: `held: ${p.why ?? ''}` }),
        },
      }))
  }

  /** The MCP servers, whatever their state; the hash is over the tools they have registered. */
  servers(tools: readonly RegisteredTool[]): Unloadable[] {
    return (this.ctx.get('mcp')?.list() ?? []).map((s) => {
      const id = `mcp:${s.name}`
      const mine = tools.filter((t) => t.source === id).map((t) => this.tool(t).hash)
      return {
        key: s.name,
        held: s.state === 'held',
        ready: s.state === 'connected',
        target: this.ctx.get('mcp')?.get(s.name),
        cap: {
          kind: 'server',
          id,
          ...(s.server?.version !== undefined && { version: s.server.version }),
          hash: contentHash(mine.sort()),
          state: s.state,
          ...(s.state === 'held' && { refused: `held: ${(s.holds ?? []).join('; ')}` }),
        },
      }
    })
  }

  /** The skills in use, and those a rule holds. */
  skills(): Unloadable[] {
    const skills = this.ctx.get('skills')
    const cap = (skill: { name: string; version?: string; description: string; body: string }) => ({
      kind: 'skill' as const,
      id: `skill:${skill.name}`,
      ...(skill.version !== undefined && { version: skill.version }),
      hash: contentHash({ description: skill.description, body: skill.body }),
    })
    return [
      ...(skills?.list() ?? []).map((s) => ({
        key: s.name,
        held: false,
        ready: true,
        cap: cap(s),
      })),
      ...(skills?.held() ?? []).map((h) => ({
        key: h.name,
        held: true,
        ready: true,
        cap: { ...cap(h), refused: `held: ${h.holds.join('; ')}` },
      })),
    ]
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
