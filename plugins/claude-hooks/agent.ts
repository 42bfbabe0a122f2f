/**
 * The session events on the agent loop's hooks: SessionStart (runStart: plain stdout and
 * additionalContext go before the task), UserPromptSubmit (userPrompt: exit 2 or decision block
 * refuses the prompt, stdout and additionalContext join it), Stop and SubagentStop (stop: exit 2,
 * decision block or additionalContext send the model on with that reason), SessionEnd (runEnd,
 * observe only). session_id is the run's id, transcript_path its transcript file.
 */
import type { InjectedContext } from 'yoke'
import type { RunResult, StopDecision, TurnInfo } from '../agent-loop/api.ts'
import { cap } from './handlers.ts'
import type { Hooks, Replies } from './claude-hooks.ts'
import { HOOK_LANE } from './services.ts'
import { claudeTranscriptOf, endTranscript, transcriptFor } from './transcript.ts'
import { postAdditions } from './tool-events.ts'

type Ctx = InjectedContext<['agent']>
type Base = (info: TurnInfo) => Record<string, unknown>

export function tapAgent(ctx: Ctx, hooks: Hooks) {
  const agent = ctx.agent.hooks
  const base: Base = (info) => ({
    session_id: info.runId,
    transcript_path: claudeTranscriptOf(info.runId)?.file ?? null,
    cwd: hooks.projectDir,
    permission_mode: 'default',
    ...(info.subagent ? { agent_id: info.runId, agent_type: info.lane } : {}),
  })
  const missing = (['runStart', 'stop', 'runEnd', 'toolBatch'] as const).filter(
    (name) => !agent[name],
  )
  if (missing.length)
    ctx.logger.warn(
      `${hooks.prefix}the agent loop has no ${missing.join(', ')} hook: the SessionStart, SubagentStart, Stop, SubagentStop, StopFailure, SessionEnd or PostToolBatch handlers that need them do not run`,
    )

  tapTranscript(ctx, hooks)
  tapStart(ctx, hooks, base)
  tapTurns(ctx, hooks, base)
  tapEnd(ctx, hooks, base)
}

/**
 * The run's transcript in Claude Code's shape (transcript.ts): the prompt, each answer, each
 * result and each continuation, written by the first instance to see the run start. A hook's
 * `transcript_path` names it; the hooks that read it wait for what was appended before them.
 */
function tapTranscript(ctx: Ctx, hooks: Hooks) {
  const agent = ctx.agent.hooks
  const owner = hooks
  const mine = (runId: string) => {
    const t = claudeTranscriptOf(runId)
    return t && transcriptFor(runId, owner, undefined, () => {}) === t ? t : undefined
  }
  const failed = (err: unknown) =>
    hooks.logger.warn(
      `${hooks.prefix}the Claude Code transcript could not be written: ${String(err)}`,
    )
  if (agent.runStart)
    ctx.tap(agent.runStart, 'claude-hooks transcript', async (context, info) => {
      // written by an instance with hooks (any may read it), the first to see the run start
      if (info.lane !== HOOK_LANE && hooks.any())
        transcriptFor(info.runId, owner, info.transcript, failed)
      return context
    })
  ctx.tap(agent.beforeModel, 'claude-hooks transcript', async (request, info) => {
    const t = mine(info.runId)
    const last = request.messages.at(-1)
    // the prompt, a continuation, or what toolBatch or a background task added: the last user message
    if (t && last?.role === 'user') t.user(last.content)
    return request
  })
  ctx.tap(agent.afterModel, 'claude-hooks transcript', async (response, info) => {
    mine(info.runId)?.assistant(response)
    return response
  })
  ctx.tap(agent.afterStep, 'claude-hooks transcript', async (step, result) => {
    mine(step.runId)?.user([
      { type: 'tool_result', tool_use_id: result.id, content: result.text, is_error: !result.ok },
    ])
  })
  // the writer goes after SessionEnd (tapEnd), which reads the file
}

/** an agent handler's run: no hook fires inside it */
const ownRun = (hooks: Hooks, info: TurnInfo) => hooks.hookRuns.has(info.runId)

/** SessionStart or SubagentStart (runStart), and UserPromptSubmit (userPrompt). */
function tapStart(ctx: Ctx, hooks: Hooks, base: Base) {
  const agent = ctx.agent.hooks
  const own = (info: TurnInfo) => ownRun(hooks, info)
  if (agent.runStart)
    ctx.tap(agent.runStart, 'claude-hooks SessionStart', async (context, info) => {
      if (info.lane === HOOK_LANE) hooks.hookRuns.add(info.runId)
      if (own(info)) return context
      hooks.runs.set(info.runId, { transcript: info.transcript })
      // a subagent's start is SubagentStart (its context goes to the subagent), not SessionStart
      const event = info.subagent ? 'SubagentStart' : 'SessionStart'
      if (!hooks.has(event)) return context
      const source = info.resumed ? 'resume' : 'startup'
      const replies = info.subagent
        ? await hooks.fire(event, [info.lane], base(info))
        : await hooks.fire(event, [source], { ...base(info), source, model: info.model })
      stopIfAsked(replies, event)
      const added = contextOf(replies, !info.subagent)
      for (const { entry, reply } of replies)
        if (reply.kind === 'block')
          hooks.logger.warn(
            `${hooks.prefix}hook ${entry.label} (${event}, exit 2): ${reply.reason}`,
          )
      return [context, ...added].filter(Boolean).join('\n\n')
    })

  ctx.tap(agent.userPrompt, 'claude-hooks UserPromptSubmit', async (prompt, info) => {
    if (own(info) || !hooks.has('UserPromptSubmit')) return prompt
    const replies = await hooks.fire('UserPromptSubmit', [], { ...base(info), prompt })
    stopIfAsked(replies, 'UserPromptSubmit')
    const blocked = promptBlock(replies)
    if (blocked) throw new Error(blocked)
    const added = contextOf(replies, true)
    return added.length ? `${prompt}\n\n${added.join('\n\n')}` : prompt
  })
}

/** The turn: the calls it asked for (defer), PostToolBatch, Stop and SubagentStop, stop requests. */
function tapTurns(ctx: Ctx, hooks: Hooks, base: Base) {
  const agent = ctx.agent.hooks
  const own = (info: TurnInfo) => ownRun(hooks, info)
  // defer needs to know how many calls the turn asked for
  ctx.tap(agent.afterModel, 'claude-hooks turn calls', async (response, info) => {
    const run = hooks.runs.get(info.runId)
    if (run) run.tools = response.toolCalls.length
    return response
  })

  if (agent.toolBatch)
    ctx.tap(agent.toolBatch, 'claude-hooks PostToolBatch', async (added, info) => {
      if (own(info) || !hooks.has('PostToolBatch')) return added
      const replies = await hooks.fire('PostToolBatch', [], {
        ...base(info),
        tool_calls: info.calls.map(({ call, result }) => ({
          tool_name: call.name,
          tool_input: call.args,
          tool_use_id: call.id,
          tool_response: result.text,
        })),
      })
      // decision block, continue: false or exit 2 stop the loop before the next model request
      for (const { entry, reply } of replies) {
        const why =
          reply.kind === 'block'
            ? reply.reason
            : reply.kind === 'ok' &&
                (reply.json?.continue === false || reply.json?.decision === 'block')
              ? (reply.json.stopReason ?? reply.json.reason ?? 'no reason given')
              : undefined
        if (why !== undefined)
          throw new Error(`the PostToolBatch hook ${entry.label} stopped the run: ${cap(why)}`)
      }
      return [...added, ...postAdditions(replies).added]
    })

  if (agent.stop)
    ctx.tap(
      agent.stop,
      'claude-hooks Stop',
      async (decision: StopDecision, info): Promise<StopDecision> => {
        const event = info.subagent ? 'SubagentStop' : 'Stop'
        if (own(info)) return decision
        // the run does not end while a tool event's asyncRewake handler still runs: it may wake it
        await hooks.settleRewakes(info.runId)
        const woken = hooks.takeRewakes(info.runId)
        if (woken.length)
          decision = {
            kind: 'continue',
            reason: [decision.kind === 'continue' ? decision.reason : '', ...woken]
              .filter(Boolean)
              .join('\n'),
          }
        if (!hooks.has(event)) return decision
        await claudeTranscriptOf(info.runId)?.flushed()
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
}

/** StopFailure and SessionEnd (runEnd). */
function tapEnd(ctx: Ctx, hooks: Hooks, base: Base) {
  const agent = ctx.agent.hooks
  if (agent.runEnd)
    ctx.tap(agent.runEnd, 'claude-hooks SessionEnd', async (result, info) => {
      hooks.runs.delete(info.runId)
      hooks.stopRequests.delete(info.runId)
      await claudeTranscriptOf(info.runId)?.flushed()
      try {
        await endEvents(hooks, base, result, info)
      } finally {
        endTranscript(info.runId, hooks)
      }
    })
}

/** StopFailure (a run the model failed) and SessionEnd (a main run's end). */
async function endEvents(hooks: Hooks, base: Base, result: RunResult, info: TurnInfo) {
  if (hooks.hookRuns.delete(info.runId)) return
  // a run the model failed (after its retries) ends with StopFailure, observe only
  const failure = result.status === 'failed' ? modelFailure(result.reason ?? '') : undefined
  if (failure && hooks.has('StopFailure'))
    await hooks.fire('StopFailure', [failure], {
      ...base(info),
      error: failure,
      error_details: result.reason,
      last_assistant_message: `API Error: ${result.reason}`,
    })
  if (info.subagent || !hooks.has('SessionEnd')) return
  await hooks.fire('SessionEnd', ['other'], {
    ...base(info),
    reason: 'other',
    yoke_status: result.status,
  })
}

/**
 * StopFailure's error type, from a run's reason when the model failed (MODEL_FAILED,
 * MODEL_TIMEOUT, …; the provider's status in the message), else undefined: not a model's failure.
 */
export function modelFailure(reason: string): string | undefined {
  if (!/^MODEL_\w+/.test(reason)) return undefined
  const rules: Array<[RegExp, string]> = [
    [/\b429\b|rate.?limit/i, 'rate_limit'],
    [/\b529\b|overloaded/i, 'overloaded'],
    [/\b40[13]\b|auth|api key/i, 'authentication_failed'],
    [/\b402\b|billing|credit/i, 'billing_error'],
    [/\b404\b|model.*not.?found|no such model/i, 'model_not_found'],
    [/\b400\b|invalid.?request/i, 'invalid_request'],
    [/\b5\d\d\b|server error/i, 'server_error'],
    [/max.?(output.?)?tokens/i, 'max_output_tokens'],
  ]
  return rules.find(([re]) => re.test(reason))?.[1] ?? 'unknown'
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
