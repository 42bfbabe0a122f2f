/**
 * A server's question (MCP elicitation, form or URL mode) put to yoke: through the `mcp` hub's
 * answerers (plugins/mcp/ask.ts: the terminal, a gateway's client, an agent), bounded by the
 * call and by `callMs`. Whatever happens the server gets an answer: `cancel` when nobody could
 * answer or time ran out, `decline` when someone said no. Each question is logged with its answer.
 */
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/client'
import type { Logger, ToolCall } from 'yoke'
import type { McpHub } from '../mcp/api.ts'

/** the `_meta` key with which a 2025-11-25 server names the task a request belongs to */
const RELATED_TASK = 'io.modelcontextprotocol/related-task'

/** A task in flight on the server: the call it runs for, told when a question of it waits and ends. */
export interface TaskAsking {
  call: ToolCall
  /** aborted when that call ends: its question goes with it */
  signal: AbortSignal
  waiting(asking: boolean): void
}

export type Elicit = ((
  params: ElicitRequest['params'],
  call: ToolCall | undefined,
  signal: AbortSignal,
) => Promise<ElicitResult>) & {
  /** the server's tasks in flight, by task id: a question naming one is that task's call's */
  readonly tasks: Map<string, TaskAsking>
}

/** The task a question names (`_meta` related-task), if it names one. */
function relatedTask(params: ElicitRequest['params']): string | undefined {
  const related = (params._meta as Record<string, unknown> | undefined)?.[RELATED_TASK]
  const id = (related as { taskId?: unknown } | undefined)?.taskId
  return typeof id === 'string' ? id : undefined
}

export function elicitThrough(
  server: string,
  hub: McpHub,
  logger: Logger,
  timeoutMs: number,
): Elicit {
  const tasks = new Map<string, TaskAsking>()
  const ask = async (
    params: ElicitRequest['params'],
    call: ToolCall | undefined,
    signal: AbortSignal,
  ): Promise<ElicitResult> => {
    const taskId = relatedTask(params)
    const task = taskId === undefined ? undefined : tasks.get(taskId)
    if (!task) return put(params, call, signal)
    task.waiting(true)
    try {
      return await put(params, task.call, AbortSignal.any([signal, task.signal]))
    } finally {
      task.waiting(false)
    }
  }
  const put = async (
    params: ElicitRequest['params'],
    call: ToolCall | undefined,
    signal: AbortSignal,
  ): Promise<ElicitResult> => {
    const url = params.mode === 'url' ? (params as { url: string }).url : undefined
    // a timer of our own, not AbortSignal.timeout: on Node 20 a timeout signal that only
    // AbortSignal.any refers to can be collected before it fires, leaving the question unbounded
    const late = new AbortController()
    const clock = setTimeout(() => late.abort(), timeoutMs)
    const bounded = AbortSignal.any([signal, late.signal])
    const answer = await hub
      .ask({
        server,
        call,
        mode: url === undefined ? 'form' : 'url',
        message: params.message,
        ...(url === undefined
          ? {
              requestedSchema: (params as { requestedSchema?: Record<string, unknown> })
                .requestedSchema,
            }
          : { url, elicitationId: (params as { elicitationId?: string }).elicitationId }),
        signal: bounded,
      })
      .finally(() => clearTimeout(clock))
    const why =
      bounded.aborted && !signal.aborted ? `no answer within ${timeoutMs} ms` : (answer.why ?? '')
    logger.info(
      `MCP server "${server}" asked${call ? ` during ${call.name}` : ''} (${url === undefined ? 'form' : 'url'}): ${JSON.stringify(params.message.slice(0, 200))} → ${answer.action}${answer.by ? ` by ${answer.by}` : ''}${why ? ` (${why})` : ''}`,
    )
    return answer.action === 'accept' && answer.content
      ? { action: 'accept', content: answer.content }
      : { action: answer.action }
  }
  return Object.assign(ask, { tasks })
}
