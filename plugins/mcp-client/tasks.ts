/**
 * MCP tasks, as a client (`@modelcontextprotocol/ext-tasks`), in both shapes:
 *
 * - 2025-11-25: a tool whose `execution.taskSupport` is `required` (or `optional`, for a tool the
 *   entry marks spawnOnly) is called as a task (`call`). Its status messages come through as
 *   progress; the wait is bounded like any call (callMs without a status change, maxCallMs in
 *   all); an abort or a timeout cancels the task on the server (`tasks/cancel`).
 * - 2026-07-28 (the `io.modelcontextprotocol/tasks` extension, which yoke declares): the server
 *   decides per call whether it becomes a task, and tools carry no taskSupport. The wire
 *   (wire.ts) hands such an answer to `drive`, which follows the task to its end; the extension's
 *   requests go out raw, past the Client that refuses them.
 */
import type {
  CallToolResult,
  ClientCapabilities,
  ServerCapabilities,
  Tool,
} from '@modelcontextprotocol/client'
import { SdkError, SdkErrorCode } from '@modelcontextprotocol/client'
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
  TaskCancelledError,
  toolDeclarationFromMcpTool,
  type ApplicationElicitResult,
  type CreateTaskSessionFromClientOptions,
  type TaskEnabledSession,
  type TaskExecutionEvent,
} from '@modelcontextprotocol/ext-tasks/client'
import { messageOf, settledWithin, type CallContext, type ToolCall } from 'yoke'
import { z } from 'zod'
import type { RawResponse } from './wire.ts'
import type { SdkCall } from './call.ts'
import { totalCallMs, type McpClientConfig } from './config.ts'
import type { Elicit } from './elicit.ts'
import { Unanswerable } from './failures.ts'
import type { Session } from './session.ts'
import { traceMeta } from './trace.ts'

type Result = CallToolResult

/** The 2026-07-28 tasks extension, as servers advertise it and yoke declares it. */
export const TASKS = 'io.modelcontextprotocol/tasks'

/**
 * Whether a call of this tool runs as a 2025-11-25 task: `required`, or `optional` for a tool the
 * entry marks spawnOnly, when the server offers tasks for tools/call. A tool that needs a task
 * from a server that offers none is the call's clear error.
 */
export function runsAsTask(
  tool: Tool,
  spawnOnly: boolean,
  server: ServerCapabilities | undefined,
  name: string,
): boolean {
  const support = tool.execution?.taskSupport
  const offered = server?.tasks?.requests?.tools?.call !== undefined
  if (support === 'required' && !offered)
    throw new Unanswerable(
      `${tool.name} runs only as an MCP task, and MCP server "${name}" offers no tasks on this connection (the 2025 era without the tasks capability; over 2026-07-28, protocol: auto or 2026-07-28, tasks are an extension)`,
    )
  return offered && (support === 'required' || (support === 'optional' && spawnOnly))
}

/** One connection's task session, made on its first task call and closed with the connection. */
export class TaskCalls {
  #tasks?: TaskEnabledSession<ToolCall | undefined>

  constructor(
    private readonly session: Session,
    private readonly cfg: McpClientConfig,
    private readonly info: { name: string; version: string },
    private readonly capabilities: ClientCapabilities,
    private readonly elicit: Elicit,
    /** the call a task's question belongs to, when that can be told */
    private readonly callOf: () => ToolCall | undefined,
  ) {}

  /** Follows a task the server made of a tools/call (2026-07-28) to the call's final answer. */
  async drive(
    created: Record<string, unknown>,
    progress: (message: string) => void,
    signal: AbortSignal,
  ): Promise<RawResponse> {
    const stop = new AbortController()
    const execution = await this.#session().resumeTask<Result>(
      {
        endpointId: this.#endpoint,
        generation: 'v2',
        taskId: String(created.taskId) as never,
        originalOperation: 'tools/call',
      },
      { requestTimeoutMs: this.cfg.callMs, applicationContext: this.callOf(), signal: stop.signal },
    )
    const onAbort = () => void settledWithin(execution.cancel(), 2000).then(() => stop.abort())
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
    try {
      const { outcome } = await execution.settle({
        onEvent: (event) => {
          if (event.type === 'task') progress(event.task.statusMessage ?? event.task.status)
        },
      })
      if (outcome.status === 'completed')
        return { kind: 'result', result: outcome.result as Record<string, unknown> }
      if (outcome.status === 'failed')
        return {
          kind: 'error',
          error: { code: outcome.error.code ?? -32603, message: outcome.error.message },
        }
      return { kind: 'error', error: { code: -32603, message: 'the task was cancelled' } }
    } finally {
      signal.removeEventListener('abort', onAbort)
      stop.abort()
    }
  }

  get #endpoint(): string {
    return `yoke:${this.cfg.serverName}`
  }

  async call(
    tool: Tool,
    args: Record<string, unknown>,
    call: CallContext,
    link: SdkCall,
  ): Promise<Result> {
    const { cfg } = this
    const stop = new AbortController() // ends the local wait; the task is cancelled explicitly
    const execution = await this.#session().callTool<Result>(tool.name, args as never, {
      declaration: toolDeclarationFromMcpTool(tool),
      task: { preference: tool.execution?.taskSupport === 'required' ? 'require' : 'prefer' },
      applicationContext: call.call,
      requestTimeoutMs: cfg.callMs,
      signal: stop.signal,
      metadata: traceMeta(call.call.trace), // the call's trace context, as `_meta` (trace.ts)
    })
    if (execution.kind === 'immediate') return resultFromTaskOutcome(await execution.result())
    const taskId = String(execution.handle.taskId)
    let idle: NodeJS.Timeout | undefined
    let gaveUp = false
    let asking = 0 // the task's questions waiting for an answer: callMs waits for them (elicit bounds each)
    let fetching = false // tasks/result, on which the server delivers the task's questions, was sent
    let end!: (why: unknown) => void
    const rearm = () => {
      clearTimeout(idle)
      // a question withdrawn as the call ends arms nothing
      if (!asking && !stop.signal.aborted)
        idle = setTimeout(
          () => end(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out')),
          cfg.callMs,
        )
    }
    const ended = new Promise<never>((_, reject) => {
      end = (why: unknown) => {
        gaveUp = true
        reject(why)
      }
    })
    rearm()
    const total = setTimeout(
      () => end(new SdkError(SdkErrorCode.RequestTimeout, 'Maximum total timeout exceeded')),
      totalCallMs(cfg),
    )
    if (link.aborted) end(link.reason)
    else link.addEventListener('abort', () => end(link.reason))
    const onEvent = (event: TaskExecutionEvent<Result>) => {
      rearm()
      if (event.type !== 'task') return
      const { status } = event.task
      call.progress({ message: event.task.statusMessage ?? status, taskId, status })
      if (status !== 'input_required' || fetching) return
      fetching = true
      this.#questions(taskId, stop.signal).catch((err) => {
        if (!stop.signal.aborted)
          end(
            new Unanswerable(
              `${tool.name} waits for input (its MCP task is input_required), and tasks/result, on which MCP server "${cfg.serverName}" sends its question, failed: ${messageOf(err)}`,
            ),
          )
      })
    }
    const waiting = (on: boolean) => ((asking += on ? 1 : -1), rearm())
    this.elicit.tasks.set(taskId, { call: call.call, signal: stop.signal, waiting })
    try {
      const settled = execution.settle({ onEvent })
      const { outcome } = await Promise.race([settled, ended])
      if (outcome.status === 'cancelled') throw new TaskCancelledError()
      return resultFromTaskOutcome(outcome)
    } catch (err) {
      if (gaveUp) await settledWithin(execution.cancel(), 2000) // tasks/cancel, bounded
      throw err
    } finally {
      this.elicit.tasks.delete(taskId)
      clearTimeout(idle)
      clearTimeout(total)
      stop.abort() // the local wait and its polling end with the call
    }
  }

  /**
   * A 2025-11-25 task that needs input is `input_required`, and its server sends the question
   * (elicitation/create naming the task) only on a pending `tasks/result` (the spec's "SHOULD
   * call tasks/result" on input_required), which answers once the task ends. The tasks library
   * polls tasks/get until the end and so never hears the question: this request is what lets
   * it come (elicit.ts gives it to the task's call). It ends with the call (`signal`).
   */
  #questions(taskId: string, signal: AbortSignal): Promise<unknown> {
    return this.session.client.request(
      { method: 'tasks/result', params: { taskId } },
      z.looseObject({}),
      { signal, timeout: totalCallMs(this.cfg) },
    )
  }

  async close(): Promise<void> {
    const tasks = this.#tasks
    this.#tasks = undefined
    if (tasks) await settledWithin(tasks.close(), 1000)
  }

  #session(): TaskEnabledSession<ToolCall | undefined> {
    if (this.#tasks) return this.#tasks
    const { session, cfg } = this
    const modern = session.era === 'modern'
    const onInputRequest = async (
      request: { kind: string; params?: Readonly<Record<string, unknown>> },
      context: { applicationContext: ToolCall | undefined; signal?: AbortSignal },
    ): Promise<never> => {
      if (request.kind !== 'elicitation')
        throw new Error(`the task asked for ${request.kind}, which yoke does not answer for tasks`)
      const answer: ApplicationElicitResult = await this.elicit(
        request.params as never,
        context.applicationContext,
        context.signal ?? new AbortController().signal, // elicit bounds it by callMs itself
      )
      return answer as never
    }
    const base = { endpointId: this.#endpoint, onInputRequest: onInputRequest as never }
    const options: CreateTaskSessionFromClientOptions<ToolCall | undefined> = modern
      ? {
          ...base,
          // the extension's requests in the 2026 envelope, past the Client that refuses them
          rawDispatch: (request, dispatch) =>
            session.wire.request(request as never, {
              signal: dispatch?.signal,
              ms: dispatch?.context?.requestTimeoutMs ?? cfg.callMs,
              headers: dispatch?.context?.headers as Record<string, string> | undefined,
            }) as never,
          v2RequestFraming: {
            protocolVersion: session.protocol.version,
            clientInfo: this.info,
            clientCapabilities: this.capabilities as never,
          },
        }
      : base
    this.#tasks = createTaskSessionFromClient(session.client, options)
    return this.#tasks
  }
}
