/**
 * The session events on the agent loop's hooks: SessionStart (runStart: plain stdout and
 * additionalContext go before the task), UserPromptSubmit (userPrompt: exit 2 or decision block
 * refuses the prompt, stdout and additionalContext join it), Stop and SubagentStop (stop: exit 2,
 * decision block or additionalContext send the model on with that reason), SessionEnd (runEnd,
 * observe only). session_id is the run's id, transcript_path its transcript file.
 */
import type { InjectedContext } from 'yoke'
import type { StopDecision, TurnInfo } from '../agent-loop/api.ts'
import { cap } from './handlers.ts'
import type { Hooks, Replies } from './claude-hooks.ts'

export function tapAgent(ctx: InjectedContext<['agent']>, hooks: Hooks) {
  const agent = ctx.agent.hooks
  const base = (info: TurnInfo) => ({
    session_id: info.runId,
    transcript_path: info.transcript ?? hooks.runs.get(info.runId)?.transcript ?? null,
    cwd: hooks.projectDir,
    permission_mode: 'default',
    ...(info.subagent ? { agent_id: info.runId, agent_type: info.lane } : {}),
  })
  const missing = (['runStart', 'stop', 'runEnd'] as const).filter((name) => !agent[name])
  if (missing.length)
    ctx.logger.warn(
      `${hooks.prefix}the agent loop has no ${missing.join(', ')} hook: SessionStart, Stop, SubagentStop and SessionEnd handlers that need them do not run`,
    )

  if (agent.runStart)
    ctx.tap(agent.runStart, 'claude-hooks SessionStart', async (context, info) => {
      hooks.runs.set(info.runId, { transcript: info.transcript })
      if (!hooks.has('SessionStart')) return context
      const source = info.resumed ? 'resume' : 'startup'
      const replies = await hooks.fire('SessionStart', [source], { ...base(info), source })
      stopIfAsked(replies, 'SessionStart')
      const added = contextOf(replies, true)
      for (const { entry, reply } of replies)
        if (reply.kind === 'block')
          hooks.logger.warn(
            `${hooks.prefix}hook ${entry.label} (SessionStart, exit 2): ${reply.reason}`,
          )
      return [context, ...added].filter(Boolean).join('\n\n')
    })

  ctx.tap(agent.userPrompt, 'claude-hooks UserPromptSubmit', async (prompt, info) => {
    if (!hooks.has('UserPromptSubmit')) return prompt
    const replies = await hooks.fire('UserPromptSubmit', [], { ...base(info), prompt })
    stopIfAsked(replies, 'UserPromptSubmit')
    const blocked = promptBlock(replies)
    if (blocked) throw new Error(blocked)
    const added = contextOf(replies, true)
    return added.length ? `${prompt}\n\n${added.join('\n\n')}` : prompt
  })

  if (agent.stop)
    ctx.tap(
      agent.stop,
      'claude-hooks Stop',
      async (decision: StopDecision, info): Promise<StopDecision> => {
        const event = info.subagent ? 'SubagentStop' : 'Stop'
        if (!hooks.has(event)) return decision
        const replies = await hooks.fire(event, info.subagent ? [info.lane] : [], {
          ...base(info),
          stop_hook_active: info.continued > 0,
          last_assistant_message: info.text,
        })
        return stopVerdict(replies, decision)
      },
    )

  // a tool hook's continue: false ends the run once the turn is over
  ctx.tap(agent.turnEnd, 'claude-hooks stop requests', async (info) => {
    const reason = hooks.stopRequests.get(info.runId)
    if (reason === undefined) return
    hooks.stopRequests.delete(info.runId)
    throw new Error(`a hook stopped the run: ${reason}`)
  })

  if (agent.runEnd)
    ctx.tap(agent.runEnd, 'claude-hooks SessionEnd', async (result, info) => {
      hooks.runs.delete(info.runId)
      hooks.stopRequests.delete(info.runId)
      if (!hooks.has('SessionEnd')) return
      await hooks.fire('SessionEnd', ['other'], {
        ...base(info),
        reason: 'other',
        yoke_status: result.status,
      })
    })
}

/** `continue: false` from a session event ends the run with its stopReason. */
function stopIfAsked(replies: Replies, event: string) {
  for (const { entry, reply } of replies)
    if (reply.kind === 'ok' && reply.json?.continue === false)
      throw new Error(
        `the ${event} hook ${entry.label} stopped the run: ${reply.json.stopReason ?? 'no reason given'}`,
      )
}

/**
 * What Stop (or SubagentStop) replies decide: `continue: false` ends the run whatever else was
 * said; exit 2, `decision: block` and additionalContext send the model on, their reasons joined
 * (after an earlier tap's reason); none of them leaves the decision as it came.
 */
export function stopVerdict(replies: Replies, decision: StopDecision): StopDecision {
  if (replies.some(({ reply }) => reply.kind === 'ok' && reply.json?.continue === false))
    return { kind: 'stop' }
  const reasons: string[] = decision.kind === 'continue' ? [decision.reason] : []
  for (const { reply } of replies) {
    if (reply.kind === 'block') reasons.push(reply.reason)
    if (reply.kind !== 'ok' || !reply.json) continue
    if (reply.json.decision === 'block') reasons.push(cap(reply.json.reason ?? 'continue'))
    const more = reply.json.hookSpecificOutput?.additionalContext
    if (typeof more === 'string' && more) reasons.push(cap(more))
  }
  return reasons.length ? { kind: 'continue', reason: reasons.join('\n') } : decision
}

/** Why a UserPromptSubmit hook refused the prompt (exit 2, or `decision: block`), if one did. */
export function promptBlock(replies: Replies): string | undefined {
  for (const { entry, reply } of replies) {
    const blocked =
      reply.kind === 'block'
        ? reply.reason
        : reply.kind === 'ok' && reply.json?.decision === 'block'
          ? (reply.json.reason ?? 'no reason given')
          : undefined
    if (blocked !== undefined)
      return `the UserPromptSubmit hook ${entry.label} blocked the prompt: ${cap(blocked)}`
  }
  return undefined
}

/** What the replies add to the context: additionalContext, and (where Claude Code takes it) plain stdout. */
function contextOf(replies: Replies, plainStdout: boolean): string[] {
  const out: string[] = []
  for (const { reply } of replies) {
    if (reply.kind !== 'ok') continue
    if (plainStdout && reply.text) out.push(reply.text)
    const more = reply.json?.hookSpecificOutput?.additionalContext
    if (typeof more === 'string' && more) out.push(cap(more))
  }
  return out
}
