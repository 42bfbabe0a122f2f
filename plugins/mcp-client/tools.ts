/**
 * A server's tools in the runtime. A sync fetches every page of tools/list, builds the whole next
 * generation, then swaps: unchanged tools keep their registration (calls in flight are not
 * disturbed), changed ones are replaced, the rest come and go. A name listed twice keeps its first
 * definition (reported); a name another instance holds leaves the previous generation in place.
 * Syncs run one at a time; a request during one queues at most one more.
 */
import type { Client, Tool } from '@modelcontextprotocol/client'
import {
  checkSchema,
  globToRegExp,
  messageOf,
  riskyPattern,
  type CallContext,
  type Disposer,
  type RuntimeApi,
  type ToolDefinition,
  type ToolOutput,
} from 'yoke'
import { publicToolName, totalCallMs, type McpClientConfig } from './config.ts'
import { COMPILE_PROBLEM, tolerantValidator } from './validator.ts'
import { LISTING_META, type ListingIssues } from './wire.ts'

// a call's result as runtime output lives in content.ts; index.ts takes it from here
export { mediaPlaceholder, toOutput } from './content.ts'

/** What a registered upstream tool carries besides the runtime's fields (read by mcp-server). */
interface UpstreamFields {
  title?: string
  execution?: Tool['execution']
}

/** A listed tool that was not registered: its name on the server, and why. */
export interface LeftOut {
  tool: string
  why: string
}

/** A tools/list the server got wrong: reported, and the previous generation stays. */
export class ListProblem extends Error {}

export type CallBody = (
  tool: Tool,
  args: Record<string, unknown>,
  ctx: CallContext,
  spawnOnly: boolean,
) => Promise<ToolOutput>

/** How a sync came about: `changed` (the server said so, or a restart) reads the list whatever its cache hint says. */
export type SyncReason = 'connected' | 'changed'

interface Entry {
  raw: string
  tool: Tool
  fingerprint: string
  def: ToolDefinition
  dispose?: Disposer
}

export class ServerTools {
  #registered = new Map<string, Entry>()
  /** counts clear(): a swap that sees it move between slices undoes what it made */
  #clears = 0
  #running?: Promise<void>
  #queued?: Promise<void>
  /** what the last sync skipped or refused, for `yoke mcp list` */
  problems: string[] = []
  /** the public names of the last list read, kept while the tools are away (held, gave up) */
  #known = new Set<string>()
  /** tools the last list had that were not registered, by public name: why */
  #leftOut = new Map<string, LeftOut>()
  #nextLeftOut = new Map<string, LeftOut>()
  /** the last list stays valid until then (its `ttlMs` cache hint), unless the server says it changed */
  #freshUntil = 0
  readonly #wanted: (raw: string) => boolean
  readonly #spawnOnly: (raw: string) => boolean

  constructor(
    private readonly cfg: McpClientConfig,
    private readonly runtime: RuntimeApi,
    private readonly body: CallBody,
    private readonly warn: (message: string) => void,
    private readonly signal: AbortSignal,
  ) {
    const only = cfg.enabledTools?.map(globToRegExp)
    const never = cfg.disabledTools.map(globToRegExp)
    this.#wanted = (raw) =>
      (!only || only.some((g) => g.test(raw))) && !never.some((g) => g.test(raw))
    const background = cfg.spawnOnly.map(globToRegExp)
    this.#spawnOnly = (raw) => background.some((g) => g.test(raw))
  }

  /** the listed tool behind a public name (the wire name, its schemas and `execution`) */
  tool(name: string): Tool | undefined {
    return this.#registered.get(name)?.tool
  }

  /** The next sync reads the list whatever its cache hint (a restart, a list_changed). */
  stale(): void {
    this.#freshUntil = 0
  }

  get count(): number {
    return this.#registered.size
  }

  names(): string[] {
    return [...this.#registered.keys()]
  }

  /** Why the last list's tool of this public name was not registered (its entry's globs, its schema). */
  leftOut(name: string): LeftOut | undefined {
    return this.#leftOut.get(name)
  }

  /** True when the last list read had a tool by this public name (registered now or not). */
  listed(name: string): boolean {
    return this.#known.has(name)
  }

  /**
   * Serialized: a sync asked for while one runs waits for it; several such requests share one. A
   * sync on connecting again skips the read while the last list is fresh (its cache hint).
   */
  sync(client: Client, reason: SyncReason = 'changed'): Promise<void> {
    if (reason === 'changed') this.stale()
    if (this.#queued) return this.#queued
    if (!this.#running)
      return (this.#running = this.#sync(client).finally(() => (this.#running = undefined)))
    const after = this.#running.catch(() => {})
    return (this.#queued = after.then(() => {
      this.#queued = undefined
      return this.sync(client, 'connected')
    }))
  }

  /** Unregisters every tool (the server gave up, or is going away). */
  async clear(): Promise<void> {
    this.#clears++
    const entries = [...this.#registered.values()]
    this.#registered = new Map()
    await Promise.all(entries.map((e) => e.dispose?.()))
  }

  async #sync(client: Client): Promise<void> {
    if (Date.now() < this.#freshUntil) return
    try {
      const listing = await listAll(client, this.cfg.startupMs, this.cfg.maxTools)
      if (this.signal.aborted) return
      this.#freshUntil = listing.ttlMs > 0 ? Date.now() + Math.min(listing.ttlMs, MAX_TTL_MS) : 0
      await this.#swap(this.#build(listing, client.getServerVersion()?.version))
    } catch (err) {
      if (!(err instanceof ListProblem)) throw err
      this.problems = [err.message]
      this.warn(`MCP server "${this.cfg.serverName}": ${err.message}`)
    }
  }

  #build({ tools: listed, malformed, notes }: Listing, serverVersion?: string): Map<string, Entry> {
    const server = this.cfg.serverName
    const next = new Map<string, Entry>()
    const raws = new Set<string>()
    const before = new Set(this.problems)
    this.problems = []
    const leftOut = new Map<string, LeftOut>()
    const report = (problem: string) => {
      this.problems.push(problem)
      if (!before.has(problem)) this.warn(`MCP server "${server}": ${problem}`) // once, not on every re-sync
    }
    const skip = (raw: string, why: string) => {
      leftOut.set(publicToolName(server, raw), { tool: raw, why })
      report(`skipped tool "${raw}": ${why}`)
    }
    for (const { label, name, why } of malformed) {
      if (name) leftOut.set(publicToolName(server, name), { tool: name, why })
      report(`skipped tool ${label}: ${why}`)
    }
    for (const note of notes) report(note)
    for (const tool of listed) {
      if (raws.has(tool.name)) {
        report(`tools/list names "${tool.name}" twice; the first is kept, the second left out`)
        continue
      }
      raws.add(tool.name)
      if (!this.#wanted(tool.name)) {
        leftOut.set(publicToolName(server, tool.name), {
          tool: tool.name,
          why: `its entry leaves it out (enabledTools: ${JSON.stringify(this.cfg.enabledTools ?? ['*'])}, disabledTools: ${JSON.stringify(this.cfg.disabledTools)})`,
        })
        continue
      }
      const problem =
        checkSchema(tool.inputSchema) ??
        riskyPattern(tool.inputSchema) ??
        (tool.outputSchema && outputSchemaProblem(tool.outputSchema))
      if (problem) {
        skip(tool.name, problem)
        continue
      }
      const name = publicToolName(server, tool.name)
      const def = this.#define(name, tool, serverVersion)
      const { execute: _body, ...shape } = def
      next.set(name, {
        raw: tool.name,
        tool,
        def,
        fingerprint: JSON.stringify([shape, tool.execution]),
      })
    }
    this.#nextLeftOut = leftOut
    return next
  }

  #define(name: string, tool: Tool, serverVersion?: string): ToolDefinition {
    const { cfg, body } = this
    const spawnOnly = this.#spawnOnly(tool.name)
    const description = tool.description ?? tool.title ?? ''
    // the server's own annotations as they came, and yoke's bookkeeping beside them (the server's
    // version is what tool search shows as a candidate's version)
    const annotations = {
      ...tool.annotations,
      mcpServer: cfg.serverName,
      mcpTool: tool.name,
      ...(serverVersion && { mcpServerVersion: serverVersion }),
    }
    const def: ToolDefinition & UpstreamFields = {
      name,
      description:
        description.length > cfg.descriptionChars
          ? `${description.slice(0, cfg.descriptionChars - 1)}…`
          : description,
      inputSchema: tool.inputSchema as Record<string, unknown>,
      outputSchema: tool.outputSchema as Record<string, unknown> | undefined,
      source: `mcp:${cfg.serverName}`,
      risk: cfg.risk ?? riskOf(tool.annotations),
      concurrency: cfg.concurrency,
      timeoutMs: totalCallMs(cfg),
      annotations,
      ...(spawnOnly && { spawnOnly: true }),
      // as the server sent them, for a gateway to pass on (mcp-server's tools/list)
      ...(tool.title !== undefined && { title: tool.title }),
      ...(tool.execution !== undefined && { execution: tool.execution }),
      execute: (args, ctx) => body(tool, args, ctx, spawnOnly),
    }
    return def
  }

  async #swap(next: Map<string, Entry>): Promise<void> {
    const current = this.#registered
    const fresh = new Map<string, Entry>()
    const cleared = this.#clears
    // between slices the server may be cleared (it gave up, or goes): what this swap made goes too
    const breathe = async () => {
      await pause()
      if (this.#clears !== cleared) throw new Cleared()
    }
    const pause = slices()
    try {
      for (const [name, entry] of next)
        if (!current.has(name)) {
          fresh.set(name, this.#register(entry))
          await breathe()
        }
    } catch (err) {
      await Promise.all([...fresh.values()].map((e) => e.dispose?.()))
      if (err instanceof Cleared) return
      throw new ListProblem(`${messageOf(err)}; the previous tools stay registered`)
    }
    for (const [name, old] of current) {
      const entry = next.get(name)
      if (entry?.fingerprint === old.fingerprint) {
        fresh.set(name, old)
        continue
      }
      void old.dispose?.() // takes the name out at once; calls in flight finish on their own
      if (!entry) continue
      try {
        fresh.set(name, this.#register(entry))
        await breathe()
      } catch (err) {
        if (err instanceof Cleared) {
          await Promise.all([...fresh.values()].map((e) => e.dispose?.()))
          return
        }
        this.problems.push(`dropped tool "${entry.raw}": ${messageOf(err)}`)
        this.warn(
          `MCP server "${this.cfg.serverName}": dropped tool "${entry.raw}": ${messageOf(err)}`,
        )
      }
    }
    this.#registered = fresh
    this.#known = new Set(fresh.keys())
    this.#leftOut = this.#nextLeftOut
  }

  #register(entry: Entry): Entry {
    return { ...entry, dispose: this.runtime.register(entry.def) }
  }
}

/** a swap stopped because the server's tools were cleared meanwhile */
class Cleared extends Error {}

/** how long a swap registers tools before it lets the event loop run */
const SLICE_MS = 8

/**
 * A pause once every SLICE_MS of work: a server's thousands of tools register in slices, so
 * timers, other servers and calls keep running meanwhile (each registration announces its tool at
 * once, so lookups are right throughout).
 */
function slices(): () => Promise<void> | undefined {
  let until = performance.now() + SLICE_MS
  return () => {
    if (performance.now() < until) return undefined
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        until = performance.now() + SLICE_MS
        resolve()
      }),
    )
  }
}

/** What is wrong with an outputSchema: the input schema's limits, and it must compile. */
function outputSchemaProblem(schema: object): string | undefined {
  const problem = checkSchema(schema)
  if (problem) return problem.replace('its input schema', 'its outputSchema')
  const check = tolerantValidator.getValidator(schema as never)(undefined)
  return check.errorMessage?.startsWith(COMPILE_PROBLEM) ? check.errorMessage : undefined
}

/**
 * A tool's risk from its MCP annotations (hints from the server): `destructiveHint: true` is high
 * (the policy plugin asks first), `readOnlyHint: true` low, anything else medium. The spec reads
 * destructiveHint only when readOnlyHint is false; a server that claims both gets the stricter.
 */
export function riskOf(annotations: Tool['annotations']): 'low' | 'medium' | 'high' {
  if (annotations?.destructiveHint === true) return 'high'
  if (annotations?.readOnlyHint === true) return 'low'
  return 'medium'
}

interface Listing {
  /** the tools that are well formed, in the server's order */
  tools: Tool[]
  /** the entries MCP's Tool schema refuses: skipped one by one, never the whole list (wire.ts) */
  malformed: ListingIssues['malformed']
  /** what else was wrong with the list (over maxTools, a repeated cursor) */
  notes: string[]
  /** the first page's cache hint (2026-07-28): the list is not read again before it passes */
  ttlMs: number
}

/** The longest a cache hint is honoured (the SDK's MAX_CACHE_TTL_MS): a server cannot pin its list forever. */
const MAX_TTL_MS = 24 * 60 * 60 * 1000

/**
 * Every page of tools/list, all within `ms`, and no more than `max` entries: the entries past it
 * are left out with a note, so a huge list costs its tail, never the connection. A page that is
 * not a list at all is a ListProblem (the previous tools stay).
 */
async function listAll(client: Client, ms: number, max: number): Promise<Listing> {
  const deadline = Date.now() + ms
  const listing: Listing = { tools: [], malformed: [], notes: [], ttlMs: 0 }
  const cursors = new Set<string>()
  let cursor: string | undefined
  let first = true
  do {
    const page = await client.request(
      { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
      { timeout: Math.max(1, deadline - Date.now()) },
    )
    const issues = (page._meta as Record<string, unknown> | undefined)?.[LISTING_META] as
      ListingIssues | undefined
    if (issues?.notList)
      throw new ListProblem(
        'tools/list answered without a tools array; the previous tools stay registered',
      )
    if (first) listing.ttlMs = typeof page.ttlMs === 'number' ? page.ttlMs : 0
    first = false
    listing.malformed.push(...(issues?.malformed ?? []))
    listing.notes.push(...(issues?.notes ?? []))
    const room = max - listing.tools.length
    listing.tools.push(...page.tools.slice(0, room))
    if (page.tools.length > room) {
      listing.notes.push(
        `tools/list has more than ${max} tools (maxTools): the first ${max} are kept, the rest left out; raise maxTools, or pick tools with enabledTools`,
      )
      break
    }
    const next = page.nextCursor
    if (next !== undefined && cursors.has(next)) {
      listing.notes.push(
        `tools/list repeats the cursor ${JSON.stringify(next.slice(0, 60))}; the pages after it are left out`,
      )
      break
    }
    cursor = next
    if (cursor !== undefined) cursors.add(cursor)
  } while (cursor !== undefined)
  return listing
}
