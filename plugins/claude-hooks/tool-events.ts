/**
 * @module claude-hooks/tool-events
 * What PreToolUse and PostToolUse replies decide, as pure functions: the verdict of a call's
 * PreToolUse hooks, and the output the model reads after PostToolUse's additions.
 */
import type { ToolCall, ToolOutput, ToolResult } from 'yoke'
import { cap, type HookJson } from './handlers.ts'
import type { Replies } from './claude-hooks.ts'

export interface PreVerdict {
  kind: 'allow' | 'ask' | 'defer' | 'deny' | 'none'
  reason: string
  args?: Record<string, unknown>
  context: string[]
  stop?: HookJson
}

/** Claude Code's precedence: deny > defer > ask > allow */
const RANK = { none: 0, allow: 1, ask: 2, defer: 3, deny: 4 } as const

/**
 * PreToolUse's replies as one verdict: exit 2 or `deny` denies (deny > ask > allow, as Claude
 * Code), `updatedInput` rewrites the arguments when it fits the tool's schema (the last one wins),
 * `additionalContext` joins the result, `continue: false` denies and ends the run.
 */
export function preToolUse(
  replies: Replies,
  call: ToolCall,
  warn: (m: string) => void,
): PreVerdict {
  const verdict: PreVerdict = { kind: 'none', reason: '', context: [] }
  const reasons: Record<string, string[]> = { allow: [], ask: [], defer: [], deny: [] }
  const raise = (kind: 'allow' | 'ask' | 'defer' | 'deny', reason: string | undefined) => {
    if (RANK[kind] > RANK[verdict.kind]) verdict.kind = kind
    if (reason) reasons[kind]!.push(cap(reason))
  }
  for (const { entry, reply } of replies) {
    if (reply.kind === 'block') raise('deny', reply.reason)
    if (reply.kind !== 'ok' || !reply.json) continue
    const { json } = reply
    const out = json.hookSpecificOutput ?? {}
    if (json.continue === false) {
      verdict.stop = json
      raise('deny', json.stopReason ?? `the hook ${entry.label} stopped the run`)
    }
    // the older top-level form: decision approve | block
    const decision =
      out.permissionDecision ??
      (json.decision === 'block' ? 'deny' : json.decision === 'approve' ? 'allow' : undefined)
    const reason = out.permissionDecisionReason ?? json.reason
    if (decision === 'deny' || decision === 'ask' || decision === 'allow')
      raise(
        decision,
        reason ?? (decision === 'allow' ? undefined : `the hook ${entry.label} says ${decision}`),
      )
    else if (decision === 'defer')
      raise('defer', undefined) // its reason is ignored (Claude Code)
    else if (decision !== undefined)
      warn(
        `hook ${entry.label}: permissionDecision ${JSON.stringify(decision)} is not one yoke takes (allow, deny, ask, defer); ignored`,
      )
    // defer ignores additionalContext and updatedInput
    if (decision === 'defer') continue
    if (typeof out.additionalContext === 'string') verdict.context.push(cap(out.additionalContext))
    if (out.updatedInput !== undefined) {
      const args = out.updatedInput
      const fits =
        args && typeof args === 'object' && !Array.isArray(args) && call.tool!.validate(args)
      if (fits) verdict.args = args as Record<string, unknown>
      else
        warn(
          `hook ${entry.label} returned an updatedInput that does not match ${call.name}'s input schema; the call keeps its own arguments`,
        )
    }
  }
  if (verdict.kind !== 'none')
    verdict.reason = reasons[verdict.kind]!.join('\n') || `a PreToolUse hook says ${verdict.kind}`
  return verdict
}

/** What PostToolUse or PostToolUseFailure replies add to the result the model reads. */
export interface PostAdditions {
  added: string[]
  /** `updatedToolOutput` (PostToolUse): the output the model reads instead */
  output?: ToolOutput
  /** a `continue: false`: the run ends when its turn is over */
  stop?: HookJson
}

/**
 * Exit 2's stderr, `decision: block`'s reason and additionalContext join the result (the tool
 * already ran); `continue: false` adds its stopReason and ends the run after the turn.
 */
export function postAdditions(replies: Replies): PostAdditions {
  const post: PostAdditions = { added: [] }
  for (const { reply } of replies) {
    if (reply.kind === 'block') post.added.push(reply.reason)
    if (reply.kind !== 'ok' || !reply.json) continue
    const { json } = reply
    if (json.continue === false) {
      post.stop = json
      post.added.push(json.stopReason ?? 'a hook stopped the run')
    }
    if (json.decision === 'block') post.added.push(cap(json.reason ?? 'a hook blocked it'))
    const out = json.hookSpecificOutput
    if (typeof out?.additionalContext === 'string') post.added.push(cap(out.additionalContext))
    if (out?.updatedToolOutput !== undefined) post.output = out.updatedToolOutput as ToolOutput
  }
  return post
}

export function textOf(result: ToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n')
}

/** `output` with `texts` appended as text parts (what the model reads after the tool's own output). */
export function withText(output: ToolOutput, texts: string[]): ToolOutput {
  const parts = texts.map((text) => ({ type: 'text' as const, text }))
  if (typeof output === 'string') return { content: [{ type: 'text', text: output }, ...parts] }
  if (
    output &&
    typeof output === 'object' &&
    Array.isArray((output as { content?: unknown }).content)
  ) {
    const o = output as { content: unknown[] }
    return { ...o, content: [...o.content, ...parts] }
  }
  if (output === undefined) return { content: parts }
  return { content: [{ type: 'text', text: JSON.stringify(output) }, ...parts], structured: output }
}
