/**
 * A server's question (MCP elicitation, form or URL mode) put to yoke: through the `mcp` hub's
 * answerers (plugins/mcp/ask.ts: the terminal, a gateway's client, an agent), bounded by the
 * call and by `callMs`. Whatever happens the server gets an answer: `cancel` when nobody could
 * answer or time ran out, `decline` when someone said no. Each question is logged with its answer.
 */
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/client'
import type { Logger, ToolCall } from 'yoke'
import type { McpHub } from '../mcp/api.ts'

export type Elicit = (
  params: ElicitRequest['params'],
  call: ToolCall | undefined,
  signal: AbortSignal,
) => Promise<ElicitResult>

export function elicitThrough(
  server: string,
  hub: McpHub,
  logger: Logger,
  timeoutMs: number,
): Elicit {
  return async (params, call, signal) => {
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
}
