/**
 * One MCP session: a low-level SDK Server (so upstream JSON Schemas pass through untouched) over
 * one transport, serving one view. Every tools/call goes through the runtime's pipeline in the
 * session's own scope, as caller `mcp:<view>:<session>`, with the client's cancellation as the
 * call's signal and the call's progress relayed to the client under the client's progressToken.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js'
import type { ApprovalAnswer, ProgressEvent, ScopeHandle, ToolCall } from 'yoke'
import type { SkillsApi } from '../skills/api.ts'
import { toCallToolResult, toMcpTool } from './result.ts'
import { getPrompt, listPrompts, listResources, readResource } from './skills.ts'
import type { View } from './views.ts'

export interface SessionHost {
  version: string
  skills(): SkillsApi | undefined
  closed(session: McpSession): void
  warn(message: string): void
}

interface InFlight {
  tool: string
  requestId: RequestId
}

const APPROVAL_SCHEMA = {
  type: 'object',
  properties: {
    decision: {
      type: 'string',
      title: 'Allow this call?',
      enum: ['allow-once', 'allow-session', 'deny'],
      enumNames: ['Allow once', 'Allow for this session', 'Deny'],
    },
  },
  required: ['decision'],
} as const

/** How long a person has to answer an approval (the call's own timeout may end it sooner). */
const APPROVAL_MS = 10 * 60_000

export class McpSession {
  readonly server: Server
  readonly caller: string
  readonly scope: ScopeHandle
  /** requests in flight, by JSON-RPC id: an approval is asked on one of their streams */
  readonly requests = new Map<RequestId, InFlight>()
  /** settles once the session has closed (the client went, it was idle, or the server stops) */
  readonly ended: Promise<void>
  #end!: () => void
  #closed = false
  /** notifications wait for the client's notifications/initialized */
  #ready = false

  constructor(
    readonly id: string,
    readonly view: View,
    private readonly host: SessionHost,
  ) {
    this.caller = `mcp:${view.name}:${id}`
    this.ended = new Promise((resolve) => (this.#end = resolve))
    this.scope = view.sessionScope(id)
    const server = (this.server = new Server(
      { name: 'yoke', version: host.version },
      {
        capabilities: {
          tools: { listChanged: true },
          prompts: { listChanged: true },
          resources: { listChanged: true },
        },
      },
    ))
    server.oninitialized = () => (this.#ready = true)
    server.onclose = () => void this.close()
    server.onerror = (err) => host.warn(`MCP session ${id}: ${err.message}`)
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [...view.tools().values()].map(toMcpTool),
    }))
    server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      this.#call(request.params.name, request.params.arguments ?? {}, extra),
    )
    const skills = () => (view.config.skills ? host.skills() : undefined)
    server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: listPrompts(skills()) }))
    server.setRequestHandler(GetPromptRequestSchema, (request) =>
      getPrompt(skills(), request.params.name, request.params.arguments),
    )
    server.setRequestHandler(ListResourcesRequestSchema, () => ({
      resources: listResources(skills()),
    }))
    server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [] }))
    server.setRequestHandler(ReadResourceRequestSchema, (request) =>
      readResource(skills(), request.params.uri),
    )
  }

  connect(transport: Transport): Promise<void> {
    return this.server.connect(transport)
  }

  get closed(): boolean {
    return this.#closed
  }

  async #call(
    name: string,
    args: Record<string, unknown>,
    extra: Parameters<Parameters<Server['setRequestHandler']>[1]>[1],
  ): Promise<CallToolResult> {
    if (this.view.checksCalls && !this.view.admits(name)) {
      // the served scope's own tools are not masked by the runtime: the view's globs refuse them here
      return {
        content: [
          {
            type: 'text',
            text: `UNKNOWN_TOOL: no tool named "${name}" in the MCP view "${this.view.name}"`,
          },
        ],
        isError: true,
      }
    }
    const token = extra._meta?.progressToken
    let onProgress: ((event: ProgressEvent) => void) | undefined
    if (token !== undefined) {
      let last = 0
      onProgress = (event) => {
        // MCP wants progress to increase: a step without a number (or going back) counts one more
        const given =
          typeof event.progress === 'number' && event.progress > last ? event.progress : undefined
        last = given ?? last + 1
        const total =
          given !== undefined && typeof event.total === 'number' ? { total: event.total } : {}
        const message = typeof event.message === 'string' ? { message: event.message } : {}
        extra
          .sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: last, ...total, ...message },
          })
          .catch(() => {})
      }
    }
    this.requests.set(extra.requestId, { tool: name, requestId: extra.requestId })
    try {
      const result = await this.scope.call(name, args, {
        signal: extra.signal,
        caller: this.caller,
        onProgress,
      })
      return toCallToolResult(result, this.view.tools().get(name))
    } finally {
      this.requests.delete(extra.requestId)
    }
  }

  /** Puts a pre-execute `ask` to the client as an elicitation; throws when the client cannot be asked. */
  async approve(call: ToolCall, reason: string, signal: AbortSignal): Promise<ApprovalAnswer> {
    const client = this.server.getClientVersion()?.name ?? 'the MCP client'
    if (!this.server.getClientCapabilities()?.elicitation) {
      throw new Error(
        `${client} cannot be asked: it did not declare the elicitation capability. Allow the tool in the policy plugin's config (allow: ["${call.name}"]) to use it over MCP`,
      )
    }
    // on the stream of a request in flight (HTTP: the one that made this call), so it reaches the client
    const related =
      [...this.requests.values()].find((r) => r.tool === call.name) ??
      this.requests.values().next().value
    const args = JSON.stringify(call.args)
    const message = `${reason}.\nAllow ${call.name} ${args.length > 500 ? `${args.slice(0, 500)}…` : args}?`
    let answer
    try {
      answer = await this.server.elicitInput(
        { mode: 'form', message, requestedSchema: APPROVAL_SCHEMA as never },
        { signal, timeout: APPROVAL_MS, relatedRequestId: related?.requestId },
      )
    } catch (err) {
      if (signal.aborted) throw err
      throw new McpError(
        ErrorCode.InternalError,
        `${client} did not answer the approval: ${(err as Error).message}`,
      )
    }
    const decision = answer.action === 'accept' ? answer.content?.decision : 'deny'
    return decision === 'allow-once' || decision === 'allow-session' ? decision : 'deny'
  }

  notifyTools(): void {
    if (this.#ready && !this.#closed) this.server.sendToolListChanged().catch(() => {})
  }

  notifySkills(): void {
    if (!this.#ready || this.#closed || !this.view.config.skills) return
    this.server.sendPromptListChanged().catch(() => {})
    this.server.sendResourceListChanged().catch(() => {})
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.host.closed(this)
    try {
      await this.scope.dispose()
      await this.server.close()
    } catch {
      // closing is best effort: the session is gone either way
    } finally {
      this.#end()
    }
  }
}
