/**
 * One tools/call, in either era. On 2026-07-28 a server that needs input answers
 * `input_required`; the bridge answers each embedded request itself (elicitation through the hub,
 * sampling when opted in, roots when listed) and retries with the answers and the server's
 * `requestState`, so the question is known to belong to this call. The round trips share the
 * call's budget (callMs without progress; maxCallMs in all, the runtime's deadline for the tool). The result's structuredContent is
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
import { traceMeta } from './trace.ts'
import { tolerantValidator } from './validator.ts'

/** Answers one embedded request of an `input_required` result (its result, or a clear error). */
export type AnswerInput = (
  request: { method: string; params?: Record<string, unknown> },
  call: CallContext,
) => Promise<Record<string, unknown>>

/** The most rounds of input a call may take (the SDK's own default cap). */
const MAX_ROUNDS = 10

/**
 * What the SDK gets of a listed tool: the tool without its outputSchema (checked here instead).
 * Given a definition, the SDK's callTool looks nothing up in its response cache, which never
 * holds yoke's tools/list (tools.ts reads it raw): two awaited probes per call, each building a
 * key string. On 2026-07-28 it walks the definition's input schema per call for `x-mcp-header`s
 * (SEP-2243, mirrored into HTTP headers): there only a tool that declares one is given, so any
 * other call skips that walk and keeps the SDK's own recovery from a header mismatch.
 */
interface WireTool {
  tool: Tool
  mirrored: boolean
}
const wireTools = new WeakMap<Tool, WireTool>()
function wireTool(tool: Tool, modern: boolean): Tool | undefined {
  let wire = wireTools.get(tool)
  if (wire === undefined) {
    const { outputSchema: _checkedHere, ...rest } = tool
    const mirrored = JSON.stringify(tool.inputSchema).includes('"x-mcp-header"')
    wireTools.set(tool, (wire = { tool: rest as Tool, mirrored }))
  }
  return !modern || wire.mirrored ? wire.tool : undefined
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
  // maxCallMs in all is the runtime's deadline for the tool (tools.ts: timeoutMs), whose end
  // aborts the link, and the SDK sends notifications/cancelled. Not the SDK's maxTotalTimeout: it
  // notices the total passed on a progress notification and then rejects the request without
  // telling the server (bench/sdk-repro/README.md); the runtime's end came after and found
  // nothing to cancel, so a busy server went on with a call nobody waited for
  const options = {
    timeout: cfg.callMs,
    resetTimeoutOnProgress: true,
    signal: link as unknown as AbortSignal,
    onprogress: link.onprogress,
    toolDefinition: wireTool(tool, modern),
    allowInputRequired: modern || undefined,
  }
  // the call's trace context rides in `_meta` of every round (the SDK adds its progressToken)
  const meta = traceMeta(call.call.trace)
  let params: Record<string, unknown> = meta
    ? { name: tool.name, arguments: args, _meta: meta }
    : { name: tool.name, arguments: args }
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
    params = {
      name: tool.name,
      arguments: args,
      ...(meta && { _meta: meta }),
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
