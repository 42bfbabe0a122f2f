/**
 * One tools/call, in either era. On 2026-07-28 a server that needs input answers
 * `input_required`; the bridge answers each embedded request itself (elicitation through the hub,
 * sampling when opted in, roots when listed) and retries with the answers and the server's
 * `requestState`, so the question is known to belong to this call. The round trips share the
 * call's budget (callMs without progress, maxCallMs in all). The result's structuredContent is
 * checked against the tool's outputSchema here, on yoke's validator, once compiled per schema.
 */
import {
  isInputRequiredResult,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  type CallToolResult,
  type InputRequiredResult,
  type Tool,
} from '@modelcontextprotocol/client'
import type { CallContext } from 'yoke'
import type { SdkCall } from './call.ts'
import { totalCallMs, type McpClientConfig } from './config.ts'
import type { Session } from './session.ts'
import { tolerantValidator } from './validator.ts'

/** Answers one embedded request of an `input_required` result (its result, or a clear error). */
export type AnswerInput = (
  request: { method: string; params?: Record<string, unknown> },
  call: CallContext,
) => Promise<Record<string, unknown>>

/** The most rounds of input a call may take (the SDK's own default cap). */
const MAX_ROUNDS = 10

/**
 * What the SDK gets of a listed tool: only for a tool that declares `x-mcp-header`s (SEP-2243,
 * mirrored into HTTP headers on 2026-07-28), and without its outputSchema (checked here
 * instead). Any other call skips the SDK's per-call walk of the input schema.
 */
const wireTools = new WeakMap<Tool, Tool | null>()
function wireTool(tool: Tool): Tool | undefined {
  let wire = wireTools.get(tool)
  if (wire === undefined) {
    const { outputSchema: _checkedHere, ...rest } = tool
    wire = JSON.stringify(tool.inputSchema).includes('"x-mcp-header"') ? (rest as Tool) : null
    wireTools.set(tool, wire)
  }
  return wire ?? undefined
}

export async function callTool(
  session: Session,
  cfg: McpClientConfig,
  tool: Tool,
  args: Record<string, unknown>,
  call: CallContext,
  link: SdkCall,
  answer: AnswerInput,
): Promise<CallToolResult> {
  const started = Date.now()
  const modern = session.era === 'modern'
  const options = {
    timeout: cfg.callMs,
    resetTimeoutOnProgress: true,
    maxTotalTimeout: totalCallMs(cfg),
    signal: link as unknown as AbortSignal,
    onprogress: link.onprogress,
    ...(modern && { toolDefinition: wireTool(tool) }),
    ...(modern && { allowInputRequired: true }),
  }
  let params: Record<string, unknown> = { name: tool.name, arguments: args }
  for (let round = 1; ; round++) {
    const result = (await session.client.callTool(params as never, options)) as
      CallToolResult | InputRequiredResult
    if (!isInputRequiredResult(result)) return checkOutput(tool, result as CallToolResult)
    if (round > MAX_ROUNDS)
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `it asked for input ${MAX_ROUNDS} times in a row without a result; yoke gave up`,
      )
    const requests = Object.entries(result.inputRequests ?? {})
    const answers = await Promise.all(
      requests.map(async ([key, request]) => [key, await answer(request as never, call)] as const),
    )
    if (link.aborted) throw link.reason
    const left = totalCallMs(cfg) - (Date.now() - started)
    if (left <= 0) throw new SdkError(SdkErrorCode.RequestTimeout, 'Maximum total timeout exceeded')
    options.maxTotalTimeout = left
    params = {
      name: tool.name,
      arguments: args,
      ...(answers.length && { inputResponses: Object.fromEntries(answers) }),
      ...(result.requestState !== undefined && { requestState: result.requestState }),
    }
  }
}

/** The SDK's own rule for a tool with an outputSchema, on yoke's validator. */
function checkOutput(tool: Tool, result: CallToolResult): CallToolResult {
  if (!tool.outputSchema || result.isError) return result
  if (result.structuredContent === undefined)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidRequest,
      `Tool ${tool.name} has an output schema but did not return structured content`,
    )
  const check = tolerantValidator.getValidator(tool.outputSchema as never)(result.structuredContent)
  if (!check.valid)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `Structured content does not match the tool's output schema: ${check.errorMessage}`,
    )
  return result
}
