/**
 * @module claude-hooks/services
 * What prompt, agent and mcp_tool handlers reach, read from the services the child instances hand
 * over while they are there: the main model, the agent loop (a bounded run on the caller's
 * read-only tools, marked so no hook fires inside it), the runtime (a call as the hooks' own
 * caller, in the caller's scope, through the whole pipeline).
 */
import { GLOBAL } from 'yoke'
import type { HookServices } from './claude-hooks.ts'
import type { HandlerServices } from './model-handlers.ts'

/** The caller of the calls mcp_tool handlers make: the hooks do not fire on them again. */
export const HOOK_CALLER = 'claude-hooks'
/** The lane of an agent handler's run: the hooks do not fire inside it. */
export const HOOK_LANE = 'claude-hooks-agent'
/** Claude Code's bound on an agent hook: up to 50 turns. */
const AGENT_TURNS = 50

let scopes = 0

export function hookServices(hooks: { services: HookServices }): HandlerServices {
  return {
    model: () => hooks.services.model?.(),
    callTool: async (name, args, call, signal) => {
      const runtime = hooks.services.runtime
      if (!runtime) throw new Error('no runtime')
      return runtime.call(name, args, {
        caller: HOOK_CALLER,
        signal,
        scope: call?.scope ?? GLOBAL,
        ...(call?.asker && { asker: call.asker }),
        ...(call?.trace && { trace: call.trace }),
      })
    },
    agent: async (task, { timeoutMs, call }) => {
      const { agent, runtime } = hooks.services
      if (!agent || !runtime)
        throw new Error('no agent loop is composed (an agent handler runs an agent)')
      const parent = call?.scope ?? GLOBAL
      const scope = runtime.scope(`claude-hooks-agent-${++scopes}`, { parent, subagent: true })
      // the tools it may use: the caller's read-only ones (Claude Code's Read, Grep, Glob)
      const readOnly = scope
        .list()
        .filter((t) => t.annotations?.readOnlyHint === true)
        .map((t) => t.name)
      const unmask = scope.restrict({ allow: readOnly.length ? readOnly : ['\0none'] })
      try {
        const run = agent.run(task, {
          scope,
          lane: HOOK_LANE,
          caller: HOOK_CALLER,
          budget: { maxTurns: AGENT_TURNS, maxMs: Math.max(1, Math.round(timeoutMs)) },
          ...(call?.asker && { asker: call.asker }),
        })
        const result = await run.result
        if (result.status === 'budget')
          throw new Error(`it timed out or ran out of turns: ${result.reason}`)
        if (result.status !== 'done')
          throw new Error(`its run ended ${result.status}: ${result.reason}`)
        return result.text
      } finally {
        unmask()
        scope.dispose()
      }
    },
  }
}
