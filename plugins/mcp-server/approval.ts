/**
 * Approvals for MCP clients: each call the gateway runs carries its exchange's asker
 * (Exchange.asker), which the runtime asks before any global bridge, so a terminal's or an
 * agent's bridge keeps answering its own calls and never sees these. The question goes to the
 * client that made the call: as an elicitation on a 2025-era connection, as an `input_required`
 * result on a 2026-07-28 one; a client that can do neither is refused with the hint to allow the
 * tool in the policy. This file holds the form, the message and how an answer reads.
 */
import type { ApprovalAnswer, ToolCall } from 'yoke'

/** The asker's name: approvals refused through it say so. */
export const ASKER = 'mcp-server (elicitation)'

/** How long a person has to answer an approval (the call's own timeout may end it sooner). */
export const APPROVAL_MS = 10 * 60_000

/** The form: one field, `decision`; "for this session" only where there is a session to keep it. */
export function approvalSchema(session: boolean) {
  const choices = session
    ? (['allow-once', 'allow-session', 'deny'] as const)
    : (['allow-once', 'deny'] as const)
  const names = {
    'allow-once': 'Allow once',
    'allow-session': 'Allow for this session',
    deny: 'Deny',
  }
  return {
    type: 'object' as const,
    properties: {
      decision: {
        type: 'string' as const,
        title: 'Allow this call?',
        enum: [...choices],
        enumNames: choices.map((c) => names[c]),
      },
    },
    required: ['decision'],
  }
}

/**
 * The most characters of arguments a question shows. The arguments are shown whole or not at all:
 * a cut could hide the part that matters, so a call whose arguments are longer is not put to the
 * person (approvalMessage throws: the call is denied, saying why).
 */
export const APPROVAL_ARGS_CHARS = 16_384

/** Characters that reorder or hide text where they are shown (bidi controls, zero-width marks). */
const INVISIBLE = /[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g

/** The question: the policy's reason and the whole call (JSON escapes the control characters). */
export function approvalMessage(call: ToolCall, reason: string): string {
  const args = (JSON.stringify(call.args) ?? '{}').replace(
    INVISIBLE,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )
  if (args.length > APPROVAL_ARGS_CHARS)
    throw new Error(
      `the arguments of ${call.name} are ${args.length} characters, more than an approval shows whole (${APPROVAL_ARGS_CHARS}), so the call was not put to the person; allow the tool in the policy plugin's config (allow: ["${call.name}"]) to use it with arguments this long over MCP`,
    )
  return `${reason}.\nAllow ${call.name} ${args}?`
}

/** An elicitation's answer as an approval: anything but an accepted allow is a deny. */
export function decisionOf(
  answer: { action?: string; content?: Record<string, unknown> } | undefined,
  session: boolean,
): ApprovalAnswer {
  const decision = answer?.action === 'accept' ? answer.content?.decision : 'deny'
  if (decision === 'allow-once' || (session && decision === 'allow-session')) return decision
  return 'deny'
}

export function cannotAsk(client: string, call: ToolCall): Error {
  return new Error(
    `${client} cannot be asked: it did not declare the elicitation capability. Allow the tool in the policy plugin's config (allow: ["${call.name}"]) to use it over MCP`,
  )
}
