/**
 * shell-hooks: octos-style hooks, programs run on tool events. Each hook is an argv (no shell)
 * that gets a JSON payload on stdin. `before_tool_call`: exit 0 allows, 1 denies with stdout as the
 * reason, 2 replaces the arguments with stdout's JSON object. `after_tool_call` observes. A hook
 * that fails or times out never blocks; three failures in a row disable it with a warning
 * (runner.ts: one HookRunner per hook holds that count). Hooks are taps on the runtime's hooks, so
 * they apply to every tool source. The LLM events (before_llm_call, after_llm_call, on_turn_end,
 * user_prompt_submit) tap the agent loop's hooks from a child instance that waits for the `agent`
 * service, so they attach whenever a loop runs.
 */
import {
  definePlugin,
  type Context,
  type InjectedContext,
  type PreDecision,
  type ToolCall,
  type ToolResult,
} from 'yoke'
import type { ModelInfo, TurnInfo } from '../agent-loop/api.ts'
import type { ModelRequest, ModelResponse } from '../models/api.ts'
import { shellHooksConfig } from './api.ts'
import { beforeToolDecision, redactArgs, redactResult, truncate } from './payload.ts'
import { HookRunner, type Outcome } from './runner.ts'

/** Events the agent loop brings: they attach once an `agent` service exists (a child instance waits for it). */
const AGENT_EVENTS = new Set([
  'before_llm_call',
  'after_llm_call',
  'on_turn_end',
  'user_prompt_submit',
])

export default definePlugin({
  name: 'shell-hooks',
  inject: ['runtime', 'project'],
  config: shellHooksConfig,
  runsProjectCode: (cfg) => cfg.hooks.length > 0, // its programs wait for `yoke trust`
  apply(ctx, cfg) {
    const baseDir = cfg.baseDir ?? ctx.project.dir
    // a hook still running when the instance goes (an after_tool_call nobody awaits) is killed with it
    const runners = cfg.hooks.map((h, i) => new HookRunner(h, i, baseDir, ctx.logger, ctx.signal))
    for (const h of runners) {
      if (h.event === 'before_tool_call') tapBeforeTool(ctx, h)
      else if (h.event === 'after_tool_call') tapAfterTool(ctx, h)
      else if (!AGENT_EVENTS.has(h.event))
        ctx.logger.info(
          `hook ${h.name}: ${h.event} has no source yet (spawn verification events); it waits`,
        )
    }
    const agentHooks = runners.filter((h) => AGENT_EVENTS.has(h.event))
    if (agentHooks.length)
      ctx.plugin(
        {
          name: 'shell-hooks-agent',
          inject: ['agent'],
          apply: (child: InjectedContext<['agent']>) => {
            for (const h of agentHooks) AGENT_TAPS[h.event]!(child, h, `shell-hook ${h.name}`)
          },
        },
        {},
        { key: 'agent-events' },
      )
  },
})

type ToolsContext = Context & InjectedContext<['runtime']>

/** before_tool_call: allow (exit 0), deny (1) or replace the arguments (2), as payload.ts decides. */
function tapBeforeTool(ctx: ToolsContext, h: HookRunner) {
  ctx.tap(
    ctx.runtime.hooks.preExecute,
    `shell-hook ${h.name}`,
    async (decision: PreDecision, call: ToolCall) => {
      if (!h.applies(call.name)) return decision
      const outcome = await h.run(
        { tool_name: call.name, tool_id: call.id, arguments: redactArgs(call) },
        [0, 1, 2],
      )
      const next = beforeToolDecision(h, outcome, call, decision)
      if (next.warning) ctx.logger.warn(next.warning)
      return next.decision
    },
  )
}

/** after_tool_call: observes every result but an unknown tool's. */
function tapAfterTool(ctx: ToolsContext, h: HookRunner) {
  ctx.tap(
    ctx.runtime.hooks.result,
    `shell-hook ${h.name}`,
    async (call: ToolCall, result: ToolResult) => {
      if (!h.applies(call.name) || result.status === 'UNKNOWN_TOOL') return
      await h.run(
        {
          tool_name: call.name,
          tool_id: call.id,
          result: redactResult(call, result),
          success: result.ok,
          duration_ms: result.durationMs,
        },
        [0],
      )
    },
  )
}

type AgentContext = InjectedContext<['agent']>

const denied = (h: HookRunner, outcome: Outcome) =>
  new Error(
    `${h.event} hook ${h.command} denied it${outcome.stdout.trim() ? `: ${outcome.stdout.trim()}` : ''}`,
  )

/**
 * The LLM events, with octos's payload fields, one tap each. Exit 1 denies before_llm_call and
 * user_prompt_submit; user_prompt_submit's stdout (exit 0) is added to the prompt.
 */
const AGENT_TAPS: Record<string, (ctx: AgentContext, h: HookRunner, tapName: string) => void> = {
  before_llm_call(ctx, h, tapName) {
    ctx.tap(ctx.agent.hooks.beforeModel, tapName, async (request: ModelRequest, info: TurnInfo) => {
      const outcome = await h.run(
        {
          model: info.model,
          message_count: request.messages.length,
          iteration: info.turn,
          session_id: info.runId,
        },
        [0, 1],
      )
      if (outcome?.code === 1) throw denied(h, outcome)
      return request
    })
  },
  after_llm_call(ctx, h, tapName) {
    ctx.tap(
      ctx.agent.hooks.afterModel,
      tapName,
      async (response: ModelResponse, info: ModelInfo) => {
        const { usage } = info
        await h.run(
          {
            model: response.model,
            iteration: info.turn,
            stop_reason: response.stopReason,
            has_tool_calls: response.toolCalls.length > 0,
            input_tokens: response.usage.inputTokens,
            output_tokens: response.usage.outputTokens,
            provider_name: info.provider,
            latency_ms: info.latencyMs,
            cumulative_input_tokens: usage.inputTokens,
            cumulative_output_tokens: usage.outputTokens,
            session_cost: usage.costUsd,
            response_cost: response.usage.costUsd,
            session_id: info.runId,
          },
          [0],
        )
        return response
      },
    )
  },
  on_turn_end(ctx, h, tapName) {
    ctx.tap(ctx.agent.hooks.turnEnd, tapName, async (info: TurnInfo, response: ModelResponse) => {
      await h.run(
        {
          iteration: info.turn,
          model: info.model,
          has_tool_calls: response.toolCalls.length > 0,
          session_id: info.runId,
        },
        [0],
      )
    })
  },
  user_prompt_submit(ctx, h, tapName) {
    ctx.tap(ctx.agent.hooks.userPrompt, tapName, async (prompt: string, info: TurnInfo) => {
      const outcome = await h.run({ prompt: truncate(prompt), session_id: info.runId }, [0, 1])
      if (outcome?.code === 1) throw denied(h, outcome)
      const context = outcome?.stdout.trim()
      return context ? `${prompt}\n\n${context}` : prompt
    })
  },
}
