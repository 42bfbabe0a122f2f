/**
 * @module claude-hooks/model-handlers
 * The handlers that run inside yoke rather than as a process: `prompt` (the configured model is
 * asked once with the hook input and answers `{ ok, reason }`), `agent` (a short agent run, on
 * read-only tools, answers the same) and `mcp_tool` (a call of that tool through the runtime, in
 * the caller's scope, whose text reads as a command's stdout). What an `{ ok: false }` means is
 * the event's (Claude Code's table), said as the JSON a command hook would print for it.
 */
import { messageOf, type ToolCall, type ToolResult } from 'yoke'
import type { ModelClient } from '../models/api.ts'
import type { AgentHandler, FiredEvent, McpToolHandler, PromptHandler } from './format.ts'
import { cap, deadline, thrown, timedOut, type HookJson, type Reply } from './handlers.ts'

/** What these handlers reach in yoke (absent: the handler says so and does not block). */
export interface HandlerServices {
  model?(): ModelClient | undefined
  /** a bounded agent run for an agent handler: its final text */
  agent?(task: string, options: { timeoutMs: number; call?: ToolCall }): Promise<string>
  /** a tool call through the runtime as the hooks' own caller, in `call`'s scope */
  callTool?(
    name: string,
    args: Record<string, unknown>,
    call: ToolCall | undefined,
    signal: AbortSignal,
  ): Promise<ToolResult>
}

/** What the model is told besides the hook's prompt: how to answer (Claude Code's response schema). */
const ANSWER_RULES =
  'You are evaluating a hook for an AI agent harness. Answer with one JSON object and nothing else: ' +
  '{"ok": true} to allow, or {"ok": false, "reason": "why"} to block' +
  ' (add "impossible": true when the condition can never be satisfied).'

/** The prompt with `$ARGUMENTS` replaced by the hook input (appended when absent); `\$` is a literal `$`. */
export function promptText(prompt: string, input: Record<string, unknown>): string {
  const json = JSON.stringify(input)
  let used = false
  const text = prompt.replace(/\\\$|\$ARGUMENTS/g, (m) => {
    if (m === '\\$') return '$'
    used = true
    return json
  })
  return used ? text : `${text}\n\n${json}`
}

export interface Verdict {
  ok: boolean
  reason?: string
  impossible?: boolean
}

/** The model's answer as a verdict, or why it is none: the first `{` to the last `}` must be `{ ok, … }`. */
export function readVerdict(text: string): Verdict | string {
  const start = text.indexOf('{')
  const end = text.lastIndexOf('}')
  if (start < 0 || end < start)
    return `its answer is not JSON: ${JSON.stringify(text.slice(0, 200))}`
  try {
    const json = JSON.parse(text.slice(start, end + 1)) as Record<string, unknown>
    if (typeof json.ok !== 'boolean') return 'its answer has no boolean "ok"'
    return {
      ok: json.ok,
      ...(typeof json.reason === 'string' && { reason: cap(json.reason) }),
      ...(json.impossible === true && { impossible: true }),
    }
  } catch (err) {
    return `its answer is not JSON (${messageOf(err)})`
  }
}

/**
 * A verdict as the reply a command hook would give for it on `event` (Claude Code's per-event
 * table): ok passes; ok: false denies (PreToolUse), blocks with its reason (Stop, SubagentStop,
 * UserPromptSubmit, PostToolBatch, PostToolUseFailure) or, unless continueOnBlock, ends the turn
 * (a prompt hook's PreToolUse and PostToolUse); an agent hook acts as continueOnBlock.
 */
export function verdictReply(
  event: FiredEvent,
  verdict: Verdict,
  handler: PromptHandler | AgentHandler,
): Reply {
  if (verdict.ok) return { kind: 'ok', text: '' }
  const reason = verdict.reason ?? `the ${handler.type} hook said no`
  const endsTurn = handler.type === 'prompt' && !handler.continueOnBlock
  const stop: HookJson = endsTurn ? { continue: false, stopReason: reason } : {}
  switch (event) {
    case 'PreToolUse':
      return {
        kind: 'ok',
        text: '',
        json: {
          ...stop,
          hookSpecificOutput: {
            hookEventName: event,
            permissionDecision: 'deny',
            permissionDecisionReason: reason,
          },
        },
      }
    case 'PostToolUse':
      return { kind: 'ok', text: '', json: endsTurn ? stop : { decision: 'block', reason } }
    case 'Stop':
    case 'SubagentStop':
      // impossible: the condition can never hold, so the run may end (prompt hooks only)
      if (verdict.impossible && handler.type === 'prompt') return { kind: 'ok', text: '' }
      return { kind: 'ok', text: '', json: { decision: 'block', reason } }
    case 'PermissionRequest':
      return { kind: 'ok', text: '' } // ok: false has no effect there (Claude Code)
    default:
      return { kind: 'ok', text: '', json: { decision: 'block', reason } }
  }
}

/** A prompt handler: the model is asked once, with the hook input, and its JSON verdict read. */
export async function runPrompt(
  event: FiredEvent,
  handler: PromptHandler,
  input: Record<string, unknown>,
  services: HandlerServices,
  timeoutMs: number,
): Promise<Reply> {
  const model = services.model?.()
  if (!model)
    return {
      kind: 'error',
      why: 'no model is composed (a prompt handler asks the `model` service)',
    }
  let text: string
  try {
    const response = await model.complete(
      {
        system: ANSWER_RULES,
        messages: [{ role: 'user', content: promptText(handler.prompt, input) }],
        tools: [],
      },
      { signal: deadline(timeoutMs) },
    )
    text = response.text
  } catch (err) {
    return thrown(err, timeoutMs, 'the model')
  }
  const verdict = readVerdict(text)
  return typeof verdict === 'string'
    ? { kind: 'error', why: `the model's ${verdict.replace(/^its /, '')}` }
    : verdictReply(event, verdict, handler)
}

/** An agent handler: a short agent run (read-only tools, bounded turns and time) answers `{ ok, reason }`. */
export async function runAgent(
  event: FiredEvent,
  handler: AgentHandler,
  input: Record<string, unknown>,
  services: HandlerServices,
  timeoutMs: number,
  call?: ToolCall,
): Promise<Reply> {
  if (!services.agent)
    return { kind: 'error', why: 'no agent loop is composed (an agent handler runs an agent)' }
  let text: string
  try {
    text = await services.agent(`${promptText(handler.prompt, input)}\n\n${ANSWER_RULES}`, {
      timeoutMs,
      ...(call && { call }),
    })
  } catch (err) {
    return { kind: 'error', why: messageOf(err) }
  }
  const verdict = readVerdict(text)
  return typeof verdict === 'string'
    ? { kind: 'error', why: `the agent's ${verdict.replace(/^its /, '')}` }
    : verdictReply(event, verdict, handler)
}

/** The yoke name of a Claude Code server's tool: `mcp__<server>__<tool>`, a plugin's `mcp__plugin_<p>_<s>__<tool>`. */
export function mcpToolName(server: string, tool: string): string {
  const scoped = /^plugin:([^:]+):(.+)$/.exec(server)
  return scoped ? `mcp__plugin_${scoped[1]}_${scoped[2]}__${tool}` : `mcp__${server}__${tool}`
}

/** `${a.b}` in the input's strings, read from the hook input; a string that is only `${…}` takes the value itself. */
export function fillInput(value: unknown, input: Record<string, unknown>): unknown {
  const at = (path: string) =>
    path
      .split('.')
      .reduce<unknown>(
        (v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined),
        input,
      )
  if (typeof value === 'string') {
    const whole = /^\$\{([\w.]+)\}$/.exec(value)
    if (whole) return at(whole[1]!) ?? ''
    return value.replace(/\$\{([\w.]+)\}/g, (_, p: string) => {
      const v = at(p)
      return v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v)
    })
  }
  if (Array.isArray(value)) return value.map((v) => fillInput(v, input))
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillInput(v, input)]))
  return value
}

/**
 * An mcp_tool handler: the tool called through the whole pipeline in the caller's scope; its text
 * reads as a command's stdout. A tool that is not there, or an error result, is a non-blocking error.
 */
export async function runMcpTool(
  handler: McpToolHandler,
  input: Record<string, unknown>,
  services: HandlerServices,
  timeoutMs: number,
  readStdout: (text: string) => Reply,
  call?: ToolCall,
): Promise<Reply> {
  if (!services.callTool) return { kind: 'error', why: 'no runtime to call the tool through' }
  const name = mcpToolName(handler.server, handler.tool)
  const args = fillInput(handler.input ?? {}, input) as Record<string, unknown>
  // the timeout aborts the call itself (its body gets the signal; an MCP server is told)
  const signal = deadline(timeoutMs)
  const result = await services.callTool(name, args, call, signal)
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n')
  if (!result.ok)
    return {
      kind: 'error',
      why: signal.aborted
        ? timedOut(timeoutMs)
        : `${name} answered ${result.status}${result.error ? `: ${result.error.message}` : ''}${text ? ` ${text.slice(0, 200)}` : ''}`,
    }
  return readStdout(text)
}
