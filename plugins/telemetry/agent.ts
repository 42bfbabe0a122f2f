/**
 * Agent spans from the agent service's hooks: `invoke_agent` per run (its `trace` hook: the parent
 * is the run's caller, a spawn call's or an MCP request's; the run's tool calls run under it) and
 * `chat` per model request (beforeModel → afterModel, a child of the run's span). A run's tool
 * calls are the run's children beside its chat spans, as the GenAI conventions draw an agent.
 */
import type { AgentApi, RunResult, RunStartInfo, TurnInfo } from '../agent-loop/api.ts'
import { capped, json, type Span } from './spans.ts'
import type { Tap, ToolSpanHost } from './tools.ts'

/** The taps that make agent spans; returns their removal (open spans end unset). */
export function tapAgent(agent: AgentApi, host: ToolSpanHost, tap: Tap): () => void {
  const { hooks } = agent
  // a replacement loop without the trace hook: no agent spans (its calls keep their callers' traces)
  if (!hooks.trace) return () => {}
  const runs = new Map<string, Span>()
  const chats = new Map<string, Span>()
  const { content } = host
  const removals = [
    tap(hooks.trace, (from, info: RunStartInfo) => {
      const span = host.start(`invoke_agent ${info.lane}`, from, {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.id': info.runId,
        'gen_ai.agent.name': info.lane,
        'gen_ai.provider.name': info.provider,
        'gen_ai.request.model': info.model,
        'yoke.scope': info.scope,
        ...(info.subagent && { 'yoke.agent.subagent': true }),
        ...(content.capture && { 'yoke.agent.task': capped(info.task, content.maxLength) }),
      })
      runs.set(info.runId, span)
      return span.context()
    }),
    tap(
      hooks.beforeModel,
      (request, info: TurnInfo) => {
        const run = runs.get(info.runId)
        if (!run) return undefined
        const key = `${info.runId}\0${info.turn}`
        chats.get(key)?.end()
        const span = host.start(
          `chat ${info.model}`,
          run,
          {
            'gen_ai.operation.name': 'chat',
            'gen_ai.provider.name': info.provider,
            'gen_ai.request.model': info.model,
            'yoke.agent.turn': info.turn,
            ...(content.capture && {
              'gen_ai.input.messages': capped(json(request.messages), content.maxLength),
              'gen_ai.system_instructions': capped(request.system, content.maxLength),
            }),
          },
          'client',
        )
        chats.set(key, span)
        return undefined
      },
      { stage: 1000 },
    ),
    tap(hooks.afterModel, (response, info) => {
      const key = `${info.runId}\0${info.turn}`
      const span = chats.get(key)
      if (!span) return undefined
      chats.delete(key)
      span.set({
        'gen_ai.response.model': response.model,
        'gen_ai.response.finish_reasons': [response.stopReason],
        'gen_ai.usage.input_tokens': response.usage.inputTokens,
        'gen_ai.usage.output_tokens': response.usage.outputTokens,
        ...(content.capture && {
          'gen_ai.output.messages': capped(
            json([{ role: 'assistant', text: response.text, toolCalls: response.toolCalls }]),
            content.maxLength,
          ),
        }),
      })
      span.end()
      return undefined
    }),
  ]
  if (hooks.runEnd)
    removals.push(tap(hooks.runEnd, (result, info) => endRun(runs, chats, result, info)))
  return () => {
    for (const remove of removals) remove()
    for (const span of [...chats.values(), ...runs.values()]) span.end()
    chats.clear()
    runs.clear()
  }
}

/** A run ended: its span (and a chat span whose request never answered) ends with its status. */
function endRun(
  runs: Map<string, Span>,
  chats: Map<string, Span>,
  result: RunResult,
  info: TurnInfo,
) {
  const span = runs.get(info.runId)
  if (!span) return undefined
  runs.delete(info.runId)
  // a model request that failed never reached afterModel
  for (const [key, chat] of chats)
    if (key.startsWith(`${info.runId}\0`)) {
      chats.delete(key)
      chat.fail(result.reason ?? 'the model request did not answer')
      chat.end()
    }
  span.set({
    'yoke.agent.status': result.status,
    'yoke.agent.turns': result.turns,
    'gen_ai.usage.input_tokens': result.usage.inputTokens,
    'gen_ai.usage.output_tokens': result.usage.outputTokens,
  })
  if (result.status === 'failed') {
    // a catalogue error leads the reason with its code (MODEL_FAILED, REPLAY_MISMATCH, …)
    const code = /^[A-Z][A-Z0-9_]+\b/.exec(result.reason ?? '')?.[0]
    span.set({ 'error.type': code ?? '_OTHER' })
    span.fail(result.reason ?? 'failed')
  }
  span.end()
  return undefined
}
