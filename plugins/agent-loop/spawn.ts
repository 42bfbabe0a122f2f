/**
 * The `spawn` tool: runs a child agent on a task, in a child scope of the caller's (a subagent
 * scope: spawn_only tools run synchronously there, and `spawn` itself is masked, so subagents do
 * not nest), on the main model or a sub-provider lane the model picks from the schema. With a
 * `goal`, the `goal_verifier` lane (or the main model) checks whether the answer reaches it.
 */
import type { Logger, RuntimeApi, ToolCall, ToolDefinition } from 'yoke'
import type { CassetteWriter } from '../shared/cassette.ts'
import { createLaneModel, GOAL_VERIFIER, type Lane } from '../shared/lanes.ts'
import type { ModelClient } from '../shared/model.ts'
import type { AgentRun, Budget, RunOptions } from './types.ts'

interface SpawnDeps {
  lanes: Lane[]
  budget: Budget
  runtime: RuntimeApi
  live: Map<string, { model: ModelClient; cassette?: CassetteWriter; scope: string }>
  start(task: string, options: RunOptions & { cassette?: CassetteWriter; parentCall?: ToolCall }): AgentRun
  logger: Logger
  resolvePath(path: string): string
}

const VERIFY = 'You check whether a goal was reached. Read the goal and the result. Answer REACHED or NOT REACHED on the first line, then one sentence why.'
let nextChild = 0

export function spawnTool(deps: SpawnDeps): ToolDefinition {
  const models = new Map<string, ModelClient>()
  const laneModel = (key: string, fallback: ModelClient): ModelClient => {
    const lane = deps.lanes.find((l) => l.key === key)
    if (!lane) return fallback
    let model = models.get(key)
    if (!model) models.set(key, (model = createLaneModel(lane, deps.resolvePath)))
    return model
  }
  const choices = deps.lanes.filter((l) => l.key !== GOAL_VERIFIER)
  const laneHelp = ['main: the model this agent runs on', ...choices.map((l) => `${l.key}: ${l.description || `${l.provider} ${l.model}`}`)].join('; ')
  return {
    name: 'spawn',
    description: 'Run a subagent on a self-contained task and return its final answer. The subagent has the same tools (background tools run to completion inside it) but not spawn. Pick a lane for the model it runs on.',
    inputSchema: {
      type: 'object',
      properties: {
        task: { type: 'string', minLength: 1, description: 'everything the subagent needs to know: it does not see this conversation' },
        lane: { type: 'string', enum: ['main', ...choices.map((l) => l.key)], description: laneHelp },
        goal: { type: 'string', description: 'optional: a goal the answer must reach; a verifier checks it' },
      },
      required: ['task'],
      additionalProperties: false,
    },
    risk: 'medium',
    concurrency: 'safe',
    async execute(args, ctx) {
      const parent = deps.live.get(ctx.call.caller.replace(/^agent:/, ''))
      const main = parent?.model
      if (!main) throw new Error('spawn runs inside an agent run (its caller is not a run in progress)')
      const lane = typeof args.lane === 'string' ? args.lane : 'main'
      const model = laneModel(lane, main)
      const scope = deps.runtime.scope(`${ctx.call.scope}/spawn-${++nextChild}`, { parent: ctx.call.scope, subagent: true })
      try {
        scope.restrict({ deny: ['spawn'] })
        const child = deps.start(String(args.task), { scope, signal: ctx.signal, lane, model, budget: deps.budget, cassette: parent.cassette, parentCall: ctx.call })
        for await (const event of child) {
          if (event.type === 'tool-call') ctx.progress({ message: `subagent ${child.id}: ${event.name}` })
        }
        const result = await child.result
        const structured: Record<string, unknown> = { runId: result.runId, status: result.status, lane, model: model.model, turns: result.turns, usage: result.usage, transcript: result.transcript }
        let text = result.status === 'done' ? result.text : `the subagent ended ${result.status}: ${result.reason}${result.text ? `\n${result.text}` : ''}`
        if (typeof args.goal === 'string' && result.status === 'done') {
          const verdict = await verify(laneModel(GOAL_VERIFIER, main), args.goal, result.text, ctx.signal)
          structured.goal = { reached: verdict.reached, verdict: verdict.text, verifier: verdict.model }
          text += `\n\n[goal ${verdict.reached ? 'reached' : 'NOT reached'} according to ${verdict.model}: ${verdict.text}]`
        }
        return { content: [{ type: 'text', text }], structured, isError: result.status !== 'done' }
      } finally {
        scope.dispose()
      }
    },
  }
}

async function verify(model: ModelClient, goal: string, answer: string, signal: AbortSignal) {
  const response = await model.complete({ system: VERIFY, messages: [{ role: 'user', content: `Goal:\n${goal}\n\nResult:\n${answer}` }], tools: [] }, { signal })
  const text = response.text.trim()
  return { reached: /^REACHED\b/i.test(text), text, model: `${model.provider} ${model.model}` }
}
