/**
 * A server's tools in the runtime. A sync fetches every page of tools/list, builds the whole next
 * generation, then swaps: unchanged tools keep their registration (calls in flight are not
 * disturbed), changed ones are replaced, the rest come and go. A list the server got wrong (two
 * tools with one name, a name another instance holds) leaves the previous generation in place.
 * Syncs run one at a time; a request during one queues at most one more.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ToolSchema, type Tool } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import {
  checkSchema,
  globToRegExp,
  riskyPattern,
  type CallContext,
  type ContentPart,
  type Disposer,
  type RuntimeApi,
  type ToolDefinition,
  type ToolOutput,
} from 'yoke'
import { publicToolName, totalCallMs, type McpClientConfig } from './config.ts'
import { tolerantValidator } from './session.ts'

/** A tools/list the server got wrong: reported, and the previous generation stays. */
export class ListProblem extends Error {}

export type CallBody = (
  raw: string,
  args: Record<string, unknown>,
  ctx: CallContext,
) => Promise<ToolOutput>

interface Entry {
  raw: string
  fingerprint: string
  def: ToolDefinition
  dispose?: Disposer
}

export class ServerTools {
  #registered = new Map<string, Entry>()
  #running?: Promise<void>
  #queued?: Promise<void>
  /** what the last sync skipped or refused, for `yoke mcp list` */
  problems: string[] = []
  readonly #wanted: (raw: string) => boolean

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
  }

  get count(): number {
    return this.#registered.size
  }

  names(): string[] {
    return [...this.#registered.keys()]
  }

  /** Serialized: a sync asked for while one runs waits for it; several such requests share one. */
  sync(client: Client): Promise<void> {
    if (this.#queued) return this.#queued
    if (!this.#running)
      return (this.#running = this.#sync(client).finally(() => (this.#running = undefined)))
    const after = this.#running.catch(() => {})
    return (this.#queued = after.then(() => {
      this.#queued = undefined
      return this.sync(client)
    }))
  }

  /** Unregisters every tool (the server gave up, or is going away). */
  async clear(): Promise<void> {
    const entries = [...this.#registered.values()]
    this.#registered = new Map()
    await Promise.all(entries.map((e) => e.dispose?.()))
  }

  async #sync(client: Client): Promise<void> {
    try {
      const listing = await listAll(client, this.cfg.startupMs, this.cfg.maxTools)
      if (this.signal.aborted) return
      await this.#swap(this.#build(listing))
    } catch (err) {
      if (!(err instanceof ListProblem)) throw err
      this.problems = [err.message]
      this.warn(`MCP server "${this.cfg.serverName}": ${err.message}`)
    }
  }

  #build({ tools: listed, malformed, notes }: Listing): Map<string, Entry> {
    const server = this.cfg.serverName
    const next = new Map<string, Entry>()
    const raws = new Set<string>()
    const before = new Set(this.problems)
    this.problems = []
    const report = (problem: string) => {
      this.problems.push(problem)
      if (!before.has(problem)) this.warn(`MCP server "${server}": ${problem}`) // once, not on every re-sync
    }
    const skip = (raw: string, why: string) => report(`skipped tool "${raw}": ${why}`)
    for (const { label, why } of malformed) report(`skipped tool ${label}: ${why}`)
    for (const note of notes) report(note)
    for (const tool of listed) {
      if (raws.has(tool.name))
        throw new ListProblem(
          `tools/list names "${tool.name}" twice; the previous tools stay registered`,
        )
      raws.add(tool.name)
      if (!this.#wanted(tool.name)) continue
      if (tool.execution?.taskSupport === 'required') {
        skip(tool.name, 'it runs only as an MCP task, which yoke does not support yet')
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
      const def = this.#define(name, tool)
      const { execute: _body, ...shape } = def
      next.set(name, { raw: tool.name, def, fingerprint: JSON.stringify(shape) })
    }
    return next
  }

  #define(name: string, tool: Tool): ToolDefinition {
    const { cfg, body } = this
    const description = tool.description ?? tool.title ?? ''
    const annotations = {
      ...tool.annotations,
      ...(tool.title && { title: tool.title }),
      mcpServer: cfg.serverName,
      mcpTool: tool.name,
    }
    return {
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
      execute: (args, ctx) => body(tool.name, args, ctx),
    }
  }

  async #swap(next: Map<string, Entry>): Promise<void> {
    const current = this.#registered
    const fresh = new Map<string, Entry>()
    try {
      for (const [name, entry] of next)
        if (!current.has(name)) fresh.set(name, this.#register(entry))
    } catch (err) {
      await Promise.all([...fresh.values()].map((e) => e.dispose?.()))
      throw new ListProblem(`${(err as Error).message}; the previous tools stay registered`)
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
      } catch (err) {
        this.problems.push(`dropped tool "${entry.raw}": ${(err as Error).message}`)
        this.warn(
          `MCP server "${this.cfg.serverName}": dropped tool "${entry.raw}": ${(err as Error).message}`,
        )
      }
    }
    this.#registered = fresh
  }

  #register(entry: Entry): Entry {
    return { ...entry, dispose: this.runtime.register(entry.def) }
  }
}

/** What is wrong with an outputSchema: the input schema's limits, and it must compile. */
function outputSchemaProblem(schema: object): string | undefined {
  const problem = checkSchema(schema)
  if (problem) return problem.replace('its input schema', 'its outputSchema')
  const check = tolerantValidator.getValidator(schema as never)(undefined)
  return check.errorMessage?.startsWith("the server's outputSchema does not compile")
    ? check.errorMessage
    : undefined
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
  /** the entries the SDK's Tool schema refuses: skipped one by one, never the whole list */
  malformed: Array<{ label: string; why: string }>
  /** what else was wrong with the list (over maxTools, a repeated cursor) */
  notes: string[]
}

/** A page of tools/list read loosely, so one bad entry is skipped alone (the SDK's schema refuses the whole page). */
const LoosePage = z.looseObject({ tools: z.unknown(), nextCursor: z.unknown().optional() })

/** How one malformed entry is named in a warning: its name when it has one, else its place. */
function labelOf(entry: unknown, index: number): string {
  const name = (entry as { name?: unknown } | null)?.name
  if (typeof name === 'string' && name) return JSON.stringify(name.slice(0, 100))
  const shown = name === undefined ? 'no name' : `name ${JSON.stringify(name)?.slice(0, 60)}`
  return `#${index + 1} of tools/list (${shown})`
}

/** What the Tool schema says about an entry, briefly: `inputSchema: expected object, received undefined`. */
function whyMalformed(error: { issues: Array<{ path: PropertyKey[]; message: string }> }): string {
  const issues = error.issues.slice(0, 3).map((i) => {
    const at = i.path.map(String).join('.')
    return `${at ? `${at}: ` : ''}${i.message.replace(/^Invalid input: /, '')}`
  })
  const more = error.issues.length > 3 ? ` (and ${error.issues.length - 3} more)` : ''
  return `it does not match MCP's Tool shape (${issues.join('; ')}${more})`
}

/**
 * Every page of tools/list, all within `ms`, and no more than `max` entries: the entries past it
 * are left out with a note, so a huge list costs its tail, never the connection. A page that is
 * not a list at all is a ListProblem (the previous tools stay).
 */
async function listAll(client: Client, ms: number, max: number): Promise<Listing> {
  const deadline = Date.now() + ms
  const listing: Listing = { tools: [], malformed: [], notes: [] }
  const cursors = new Set<string>()
  let seen = 0
  let full = false
  let cursor: string | undefined
  do {
    const page = await client.request(
      { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
      LoosePage,
      { timeout: Math.max(1, deadline - Date.now()) },
    )
    if (!Array.isArray(page.tools))
      throw new ListProblem(
        'tools/list answered without a tools array; the previous tools stay registered',
      )
    for (const entry of page.tools) {
      if (seen === max) {
        full = true
        listing.notes.push(
          `tools/list has more than ${max} tools (maxTools): the first ${max} are kept, the rest left out; raise maxTools, or pick tools with enabledTools`,
        )
        break
      }
      const checked = ToolSchema.safeParse(entry)
      if (checked.success) listing.tools.push(checked.data as Tool)
      else listing.malformed.push({ label: labelOf(entry, seen), why: whyMalformed(checked.error) })
      seen++
    }
    if (full) break
    const next = page.nextCursor
    if (next !== undefined && typeof next !== 'string') {
      listing.notes.push(
        `tools/list gave a nextCursor that is not a string; the pages after it are left out`,
      )
      break
    }
    if (next !== undefined && cursors.has(next)) {
      listing.notes.push(
        `tools/list repeats the cursor ${JSON.stringify(next.slice(0, 60))}; the pages after it are left out`,
      )
      break
    }
    cursor = next
    if (cursor !== undefined) cursors.add(cursor)
  } while (cursor !== undefined)
  // what the SDK's own listTools does with a list: the output validators for callTool's structuredContent
  const sdk = client as unknown as { cacheToolMetadata?: (tools: Tool[]) => void }
  sdk.cacheToolMetadata?.(listing.tools)
  return listing
}

type McpContent = {
  type: string
  text?: string
  data?: string
  mimeType?: string
  uri?: string
  name?: string
  resource?: { uri: string; mimeType?: string; text?: string; blob?: string }
}

/** The alternative text of an image or audio part (its `alt`, also the text part before it), for readers of text only. */
export function mediaPlaceholder(part: { type: string; data?: string; mimeType?: string }): string {
  return `[${part.type} ${part.mimeType ?? ''}, ${Math.floor(((part.data ?? '').length * 3) / 4)} bytes]`
}

/**
 * An MCP call result as tool output: text parts joined with newlines; images and audio are kept
 * (an MCP gateway passes them on), each with a short alternative text (`alt`) that also stands as
 * the text part before it, for text-only readers (their base64 would flood a model's context);
 * embedded resources become links; structuredContent is kept; isError makes it an error result.
 */
export function toOutput(result: {
  content?: unknown
  structuredContent?: unknown
  isError?: unknown
  toolResult?: unknown
}): ToolOutput {
  if (!Array.isArray(result.content) && 'toolResult' in result)
    return { content: [{ type: 'text', text: JSON.stringify(result.toolResult) }] }
  const parts: ContentPart[] = []
  let text: string | undefined // text parts in a row, joined
  for (const item of (result.content ?? []) as McpContent[]) {
    let line: string | undefined
    let link: ContentPart | undefined
    if (item.type === 'text') line = item.text ?? ''
    else if (
      (item.type === 'image' || item.type === 'audio') &&
      typeof item.data === 'string' &&
      item.mimeType
    ) {
      if (text !== undefined) parts.push({ type: 'text', text })
      text = undefined
      const alt = mediaPlaceholder(item)
      parts.push(
        { type: 'text', text: alt },
        { type: item.type, data: item.data, mimeType: item.mimeType, alt },
      )
      continue
    } else if (item.type === 'image' || item.type === 'audio') line = mediaPlaceholder(item)
    else if (item.type === 'resource' && item.resource)
      link = {
        type: 'resource_link',
        uri: item.resource.uri,
        ...(item.resource.mimeType && { mimeType: item.resource.mimeType }),
      }
    else if (item.type === 'resource_link' && item.uri)
      link = {
        type: 'resource_link',
        uri: item.uri,
        ...(item.name && { name: item.name }),
        ...(item.mimeType && { mimeType: item.mimeType }),
      }
    else line = `[${String(item.type)} content]`
    if (line !== undefined) text = text === undefined ? line : `${text}\n${line}`
    else {
      if (text !== undefined) parts.push({ type: 'text', text })
      text = undefined
      parts.push(link!)
    }
  }
  if (text !== undefined) parts.push({ type: 'text', text })
  return { content: parts, structured: result.structuredContent, isError: result.isError === true }
}
