/**
 * @module claude-hooks/approvals
 * PermissionRequest, Notification and Elicitation on the approval service: a racing bridge, asked
 * alongside whoever would be asked (the CLI's terminal, the console, an MCP session). When a call
 * needs approval it tells Notification (`permission_prompt`, observe only) and asks the
 * PermissionRequest hooks: `decision.behavior` allow or deny answers for the person; no decision
 * leaves the question to the others (this bridge steps aside). An MCP server's question
 * (elicitation) goes the same way: Notification (`elicitation_dialog`, `elicitation_url_dialog`)
 * and Elicitation hooks, whose `action` (and `content`) answer it, exit 2 declining.
 */
import type { ApprovalBridge, ApprovalReply, Question, QuestionAnswer, ToolCall } from 'yoke'
import type { ClaudeHooks } from './claude-hooks.ts'
import { runOf } from './claude-hooks.ts'

/** Thrown when no hook decided: the approval service then waits for the other bridges. */
const NO_DECISION = 'no PermissionRequest hook decided; the others asked answer'

export function approvalBridge(hooks: ClaudeHooks): ApprovalBridge {
  const tell = (type: string, message: string, title: string, call?: ToolCall) => {
    if (!hooks.has('Notification')) return
    void hooks.fire('Notification', [type], {
      ...hooks.sessionInput(call),
      message,
      title,
      notification_type: type,
    })
  }
  return {
    name: `claude-hooks${hooks.prefix ? ` ${hooks.prefix.slice(0, -2)}` : ''}`,
    race: true,
    handles: (call) =>
      !hooks.skips(call) &&
      (hooks.has('PermissionRequest') || hooks.has('Notification') || hooks.has('Elicitation')),
    async ask({ call, reason }): Promise<ApprovalReply> {
      tell(
        'permission_prompt',
        `yoke needs your permission to use ${call.name} (${reason})`,
        'Permission needed',
        call,
      )
      if (!hooks.has('PermissionRequest')) throw new Error(NO_DECISION)
      const replies = await hooks.fire(
        'PermissionRequest',
        hooks.subjects(call),
        { ...hooks.sessionInput(call), tool_name: call.name, tool_input: call.args },
        call,
      )
      const decided = permissionDecision(replies.map((r) => r.reply))
      if (!decided) throw new Error(NO_DECISION)
      if (decided.updatedInput !== undefined)
        hooks.logger.warn(
          `${hooks.prefix}a PermissionRequest hook returned updatedInput for ${call.name}; yoke's approval cannot change a call's arguments (a PreToolUse hook's updatedInput can), so the call keeps its own`,
        )
      if (decided.behavior === 'deny' && decided.interrupt)
        hooks.stopRequests.set(
          runOf(call),
          decided.message ?? 'a PermissionRequest hook interrupted the run',
        )
      return decided.behavior === 'allow'
        ? { answer: 'allow-once' }
        : { answer: 'deny', reason: decided.message ?? 'a PermissionRequest hook denied it' }
    },
    async answer(question: Question): Promise<QuestionAnswer> {
      const server = /"([^"]+)"/.exec(question.from)?.[1] ?? question.from
      tell(
        question.mode === 'url' ? 'elicitation_url_dialog' : 'elicitation_dialog',
        question.message,
        `${question.from} asks`,
        question.call,
      )
      if (!hooks.has('Elicitation')) throw new Error('no Elicitation hook answers')
      const replies = await hooks.fire('Elicitation', [server], {
        ...hooks.sessionInput(question.call),
        mcp_server_name: server,
        message: question.message,
        mode: question.mode,
        ...(question.url && { url: question.url }),
        ...(question.id && { elicitation_id: question.id }),
        ...(question.schema && { requested_schema: question.schema }),
      })
      const answer = elicitationAnswer(replies.map((r) => r.reply))
      if (!answer) throw new Error('no Elicitation hook answered')
      return answer
    },
  }
}

interface PermissionDecision {
  behavior: 'allow' | 'deny'
  message?: string
  interrupt?: boolean
  updatedInput?: unknown
}

/** The PermissionRequest replies' decision (deny wins); exit 2 is not honoured there (Claude Code). */
export function permissionDecision(replies: ReadonlyArray<import('./handlers.ts').Reply>) {
  let decided: PermissionDecision | undefined
  for (const reply of replies) {
    if (reply.kind !== 'ok' || !reply.json) continue
    if (reply.json.continue === false)
      return {
        behavior: 'deny',
        interrupt: true,
        message: reply.json.stopReason,
      } as PermissionDecision
    const d = reply.json.hookSpecificOutput?.decision as Record<string, unknown> | undefined
    if (!d || (d.behavior !== 'allow' && d.behavior !== 'deny')) continue
    const next: PermissionDecision = {
      behavior: d.behavior,
      ...(typeof d.message === 'string' && { message: d.message }),
      ...(d.interrupt === true && { interrupt: true }),
      ...(d.updatedInput !== undefined && { updatedInput: d.updatedInput }),
    }
    if (!decided || next.behavior === 'deny') decided = next
  }
  return decided
}

/** The Elicitation replies' answer: exit 2 declines; `action` (with `content` on accept) answers. */
export function elicitationAnswer(
  replies: ReadonlyArray<import('./handlers.ts').Reply>,
): QuestionAnswer | undefined {
  for (const reply of replies) {
    if (reply.kind === 'block') return { action: 'decline' }
    if (reply.kind !== 'ok' || !reply.json) continue
    const out = reply.json.hookSpecificOutput ?? {}
    const action = out.action
    if (action !== 'accept' && action !== 'decline' && action !== 'cancel') continue
    const content = out.content
    const fits =
      action === 'accept' && !!content && typeof content === 'object' && !Array.isArray(content)
    return fits ? { action, content: content as QuestionAnswer['content'] } : { action }
  }
  return undefined
}
