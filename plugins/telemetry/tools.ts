/**
 * One `execute_tool` span per call: started in the runtime's `trace` hook (its parent the caller's
 * context; the call and its far side run under the span's), the pipeline's folded decisions as
 * events (taps at stage 1000: after every other tap), ended in `result`. What no hook shows is
 * read off the result: which stage refused a DENIED call (its error's `stage`: a pre-execute
 * denial, whose final decision skips the later taps; a refused approval; a guard's denial), and
 * an executable's exit code (`process.exit.code`, from its structured result).
 */
import { basename } from 'node:path'
import type {
  AnyHook,
  PreDecision,
  TapFn,
  TapOptions,
  ToolCall,
  ToolResult,
  RuntimeApi,
  TraceContext,
} from 'yoke'
import type { McpServerStatus } from '../mcp/api.ts'
import { capped, json, type Attributes, type Span } from './spans.ts'

/** Taps a hook under the instance's name; returns the removal. */
export type Tap = <H extends AnyHook>(hook: H, fn: TapFn<H>, options?: TapOptions) => () => void

export interface ToolSpanHost {
  start(
    name: string,
    parent: TraceContext | Span | undefined,
    attributes: Attributes,
    kind?: 'internal' | 'client',
  ): Span
  content: { capture: boolean; maxLength: number }
  /** the duration metric, when metrics are exported */
  duration: ((seconds: number, attributes: Record<string, string>) => void) | undefined
  /** an MCP server's status by name (the mcp hub's), for the protocol version and session */
  mcpStatus(name: string): McpServerStatus | undefined
}

/** What a span saw of its call before the result. */
interface Seen {
  span: Span
  decided?: PreDecision['kind']
  asked?: boolean
}

const LAST = { stage: 1000 }

/** The taps that make tool-call spans; returns their removal (open spans end unset). */
export function tapTools(rt: RuntimeApi, host: ToolSpanHost, tap: Tap): () => void {
  const open = new Map<string, Seen>()
  const removals = [
    tap(rt.hooks.trace, (from, call) => {
      const span = host.start(spanName(call), from, startAttributes(call, host))
      open.set(call.id, { span })
      return span.context()
    }),
    tap(
      rt.hooks.preExecute,
      (decision, call) => {
        const seen = open.get(call.id)
        if (!seen) return undefined
        seen.decided = decision.kind
        seen.span.event('yoke.pre_execute', {
          'yoke.decision': decision.kind,
          ...('reason' in decision && { 'yoke.reason': decision.reason }),
        })
        if (decision.kind === 'ask') {
          seen.asked = true
          seen.span.event('yoke.approval.asked', { 'yoke.reason': decision.reason })
        }
        return undefined
      },
      LAST,
    ),
    tap(
      rt.hooks.around,
      (_executor, call) => {
        const seen = open.get(call.id)
        if (!seen) return undefined
        if (seen.asked) seen.span.event('yoke.approval.answered', { 'yoke.answer': 'allowed' })
        return undefined
      },
      LAST,
    ),
    tap(
      rt.hooks.postExecute,
      (decision, call) => {
        open.get(call.id)?.span.event('yoke.post_execute', { 'yoke.decision': decision.kind })
        return undefined
      },
      LAST,
    ),
    tap(rt.hooks.result, (call, result) => {
      const seen = open.get(call.id)
      if (!seen) return undefined
      open.delete(call.id)
      finish(seen, call, result, host)
      return Promise.resolve()
    }),
  ]
  return () => {
    for (const remove of removals) remove()
    for (const { span } of open.values()) span.end()
    open.clear()
  }
}

function spanName(call: ToolCall): string {
  const skill = skillOf(call)
  if (!skill) return `execute_tool ${call.name}`
  return `execute_tool ${call.name} ${skill.name}${skill.resource ? ` ${skill.resource}` : ''}`
}

/** The skills plugin's `skill_read`: a SKILL.md load, or one of the skill's resources. */
function skillOf(call: ToolCall): { name: string; resource?: string } | undefined {
  if (call.tool?.source !== 'skills' || call.name !== 'skill_read') return undefined
  const { name, file } = call.args
  if (typeof name !== 'string') return undefined
  return typeof file === 'string' ? { name, resource: file } : { name }
}

function startAttributes(call: ToolCall, host: ToolSpanHost): Attributes {
  const { content } = host
  const source = call.tool?.source ?? 'unknown'
  const attributes: Attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': call.name,
    'gen_ai.tool.call.id': call.id,
    'gen_ai.tool.type': source === 'native' || source === 'unknown' ? 'function' : 'extension',
    'yoke.tool.source': source,
    'yoke.scope': call.scope,
    'yoke.caller': call.caller,
  }
  if (call.tool) attributes['yoke.tool.owner'] = call.tool.owner
  if (source.startsWith('mcp:')) Object.assign(attributes, mcpAttributes(source.slice(4), host))
  const skill = skillOf(call)
  if (skill) {
    attributes['gen_ai.skill.name'] = skill.name
    if (skill.resource) attributes['gen_ai.skill.resource.name'] = skill.resource
  }
  const executable = call.tool?.annotations?.executable
  if (source.startsWith('exec:') && typeof executable === 'string')
    attributes['process.executable.name'] = basename(executable)
  if (content.capture)
    attributes['gen_ai.tool.call.arguments'] = capped(json(call.args), content.maxLength)
  return attributes
}

/** The events no tap saw, the status, the result's content (when captured), the metric; then the end. */
function finish(seen: Seen, call: ToolCall, result: ToolResult, host: ToolSpanHost) {
  const { span } = seen
  denials(seen, result)
  const exit = (result.structured as { exitCode?: unknown } | undefined)?.exitCode
  if (call.tool?.source.startsWith('exec:') && Number.isInteger(exit))
    span.set({ 'process.exit.code': exit as number })
  const message = result.error?.message ?? ''
  span.event('yoke.result', { 'yoke.status': result.status })
  if (!result.ok) {
    span.set({ 'error.type': result.status })
    span.fail(message || result.status)
  }
  if (host.content.capture) {
    const text = result.content.map((p) => ('text' in p ? p.text : `[${p.type}]`)).join('\n')
    span.set({ 'gen_ai.tool.call.result': capped(text, host.content.maxLength) })
  }
  span.end()
  host.duration?.(result.durationMs / 1000, {
    'gen_ai.tool.name': call.name,
    'gen_ai.tool.type': String(span.attributes['gen_ai.tool.type']),
    ...(!result.ok && { 'error.type': result.status }),
  })
}

/** The decisions a DENIED call's taps did not see, by the stage its error says refused it. */
function denials({ span, decided, asked }: Seen, result: ToolResult) {
  const { stage, message: reason = '' } = result.error ?? {}
  // a deny is final: the taps after the one that gave it (this plugin's last) do not see it
  if (stage === 'pre-execute' && !decided)
    span.event('yoke.pre_execute', { 'yoke.decision': 'deny', 'yoke.reason': reason })
  if (stage === 'approval' && asked)
    span.event('yoke.approval.answered', { 'yoke.answer': 'refused', 'yoke.reason': reason })
  // allowed, then refused by a guard: the body (where `around` says allowed) never came
  if (stage === 'guard' && asked) span.event('yoke.approval.answered', { 'yoke.answer': 'allowed' })
  if (stage === 'guard') span.event('yoke.guard.denied', { 'yoke.reason': reason })
}

/** The MCP instrumentation's attributes, on the tool's span (one span, not two). */
export function mcpAttributes(server: string, host: Pick<ToolSpanHost, 'mcpStatus'>): Attributes {
  const status = host.mcpStatus(server)
  return {
    'mcp.method.name': 'tools/call',
    'yoke.mcp.server': server,
    ...(status?.protocol && { 'mcp.protocol.version': status.protocol.version }),
    ...(status?.sessionId && { 'mcp.session.id': status.sessionId }),
    ...(status && { 'network.transport': status.transport === 'stdio' ? 'pipe' : 'tcp' }),
  }
}
