/**
 * What a hook sees and what its answer decides, as pure functions: the payload fields (sensitive
 * tools redacted, long strings cut as octos cuts them) and a before_tool_call's answer read into
 * the pipeline's decision (exit 1 denies, exit 2 replaces the arguments).
 */
import { nestsDeeper, type PreDecision, type ToolCall, type ToolResult } from 'yoke'
import type { Outcome } from './runner.ts'

/** Tools whose arguments and results never leave yoke in a payload (octos's list). */
const SENSITIVE = new Set(['shell', 'write_file', 'read_file'])
const MAX_FIELD = 1024
/** How deep a hook's replacement arguments may nest: the runtime's own bound on arguments. */
const MAX_DEPTH = 64

/**
 * A before_tool_call hook's answer as the call's decision: exit 1 denies (stdout, or the command,
 * is the reason); exit 2 replaces the arguments with stdout's JSON object when it matches the
 * tool's schema, else the call keeps its own and `warning` says why. No outcome (the hook failed,
 * or was disabled) and exit 0 leave the decision as it was.
 */
export function beforeToolDecision(
  hook: { name: string; command: string },
  outcome: Outcome | undefined,
  call: Pick<ToolCall, 'name' | 'tool'>,
  decision: PreDecision,
): { decision: PreDecision; warning?: string } {
  if (outcome?.code === 1)
    return {
      decision: {
        kind: 'deny',
        reason: outcome.stdout.trim() || `the hook ${hook.command} denied it`,
      } as PreDecision,
    }
  if (outcome?.code !== 2) return { decision }
  // the runtime puts them into the call before approval and guards, so both see what will run
  const args = parseArgs(outcome.stdout)
  if (typeof args === 'object' && (!call.tool || call.tool.validate(args)))
    return { decision: { ...decision, args } }
  return {
    decision,
    warning: `hook ${hook.name} returned arguments that ${typeof args === 'string' ? args : `are not a JSON object matching ${call.name}'s schema`}; the call keeps its own`,
  }
}

/** A hook's replacement arguments: the object, undefined when it is none, or why they are refused. */
export function parseArgs(text: string): Record<string, unknown> | string | undefined {
  let value: unknown
  try {
    value = JSON.parse(text) // JSON.parse does not recurse; the schema check after it does
  } catch {
    return undefined
  }
  if (nestsDeeper(value, MAX_DEPTH)) return `are nested deeper than ${MAX_DEPTH} levels`
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined
}

export function redactArgs(call: ToolCall): unknown {
  return SENSITIVE.has(call.name)
    ? { redacted: true, reason: 'sensitive tool' }
    : truncate(call.args)
}

export function redactResult(call: ToolCall, result: ToolResult): string {
  if (SENSITIVE.has(call.name)) return '[redacted: sensitive tool output]'
  return truncate(
    result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n'),
  ) as string
}

/** Strings over 1 KiB are cut (octos: "... (truncated)"). */
export function truncate(value: unknown): unknown {
  if (typeof value === 'string')
    return Buffer.byteLength(value) > MAX_FIELD
      ? `${Buffer.from(value).subarray(0, MAX_FIELD).toString('utf8')}... (truncated)`
      : value
  if (Array.isArray(value)) return value.map(truncate)
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, truncate(v)]))
  return value
}
