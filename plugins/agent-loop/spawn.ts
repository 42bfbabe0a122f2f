/**
 * The `spawn` tool: runs a child agent on a task, in a child scope of the caller's (a subagent
 * scope: spawn_only tools run synchronously there, and `spawn` itself is masked, so subagents do
 * not nest), on the main model or a sub-provider lane the model picks from the schema. With a
 * `goal`, the `goal_verifier` lane (or the main model) checks whether the answer reaches it.
 */
import type { Logger, RuntimeApi, ToolDefinition } from 'yoke'
import type { ClaudePluginsApi, SubagentDefinition } from '../claude-plugins/api.ts'
import type { ModelClient, ModelRegistry } from '../models/api.ts'
import type { CassetteWriter } from '../replay/api.ts'
import { createLaneModel, GOAL_VERIFIER, type Lane } from './lanes.ts'
import type { AgentRun, Budget, RunOptions, RunResult, RunUsage } from './api.ts'

/** A run in progress, as spawn sees its parent: its model, cassette, scope, and where to count a child's usage. */
export interface LiveRun {
  model: ModelClient
  cassette?: CassetteWriter
  scope: string
  addUsage(usage: RunUsage): void
}

interface SpawnDeps {
  lanes: Lane[]
  budget: Budget
  runtime: RuntimeApi
  live: Map<string, LiveRun>
  start(task: string, options: RunOptions & { cassette?: CassetteWriter }): AgentRun
  logger: Logger
  resolvePath(path: string): string
  /** the `models` registry, read when a lane's model is first made (undefined: none is composed) */
  models(): ModelRegistry | undefined
  /** subagent definitions (Claude Code plugins' agents/*.md), when a plugin offers any */
  agents?(): ClaudePluginsApi | undefined
}

const VERIFY =
  'You check whether a goal was reached. Read the goal and the result. Answer REACHED or NOT REACHED on the first line, then one sentence why.'
let nextChild = 0

export function spawnTool(deps: SpawnDeps): ToolDefinition {
  const laneModel = laneModels(deps)
  const choices = deps.lanes.filter((l) => l.key !== GOAL_VERIFIER)
  const definitions = deps.agents?.()?.agents() ?? []
  return {
    name: 'spawn',
    description:
      'Run a subagent on a self-contained task and return its final answer. The subagent has the same tools (background tools run to completion inside it) but not spawn. Pick a lane for the model it runs on.',
    inputSchema: spawnSchema(choices, definitions),
    risk: 'medium',
    concurrency: 'safe',
    // the child's own budget ends it first; the call's timeout is the backstop
    timeoutMs: deps.budget.maxMs + 10_000,
    async execute(args, ctx) {
      const parent = deps.live.get(ctx.call.caller.replace(/^agent:/, ''))
      const main = parent?.model
      if (!main)
        throw new Error('spawn runs inside an agent run (its caller is not a run in progress)')
      // the child's calls go through the concurrency gate themselves: holding a slot while waiting for them could deadlock
      ctx.release?.()
      const definition = typeof args.agent === 'string' ? findAgent(deps, args.agent) : undefined
      const lane = laneOf(args.lane, definition, deps.lanes)
      const model = laneModel(lane, main)
      const scope = deps.runtime.scope(`${ctx.call.scope}/spawn-${++nextChild}`, {
        parent: ctx.call.scope,
        subagent: true,
      })
      try {
        scope.restrict({ deny: ['spawn'] })
        if (definition?.tools.length) scope.restrict({ allow: definition.tools })
        const task = definition
          ? `${definition.instructions}\n\n---\n\nYour task:\n${String(args.task)}`
          : String(args.task)
        const child = deps.start(task, {
          scope,
          signal: ctx.signal,
          lane,
          model,
          budget: deps.budget,
          cassette: parent.cassette,
          ...(ctx.call.asker && { asker: ctx.call.asker }),
          ...(ctx.call.trace && { trace: ctx.call.trace }),
        })
        for await (const event of child) {
          if (event.type === 'tool-call')
            ctx.progress({ message: `subagent ${child.id}: ${event.name}` })
        }
        const result = await child.result
        parent.addUsage(result.usage)
        const structured = childReport(result, lane, model, definition)
        let text =
          result.status === 'done'
            ? result.text
            : `the subagent ended ${result.status}: ${result.reason}${result.text ? `\n${result.text}` : ''}`
        if (typeof args.goal === 'string' && result.status === 'done') {
          const verifier = laneModel(GOAL_VERIFIER, main)
          const verdict = await verify(
            parent.cassette?.wrap(verifier, GOAL_VERIFIER) ?? verifier,
            args.goal,
            result.text,
            ctx.signal,
          )
          parent.addUsage({ ...verdict.usage, requests: 1 })
          structured.goal = {
            reached: verdict.reached,
            verdict: verdict.text,
            verifier: verdict.model,
          }
          text += `\n\n[goal ${verdict.reached ? 'reached' : 'NOT reached'} according to ${verdict.model}: ${verdict.text}]`
        }
        return { content: [{ type: 'text', text }], structured, isError: result.status !== 'done' }
      } finally {
        scope.dispose()
      }
    },
  }
}

/** A lane's model, made once: the main model's own choice first (replay: the same cassette's lane, so offline stays offline). */
function laneModels(deps: SpawnDeps): (key: string, main: ModelClient) => ModelClient {
  const models = new Map<string, ModelClient>()
  return (key, main) => {
    const lane = deps.lanes.find((l) => l.key === key)
    if (!lane) return main
    if (main.forLane) return main.forLane(key)
    let model = models.get(key)
    if (!model) models.set(key, (model = createLaneModel(lane, deps.resolvePath, deps.models())))
    return model
  }
}

/** The lane a subagent runs on: the one asked for, else its definition's model when that is a lane, else main. */
export function laneOf(
  asked: unknown,
  definition: SubagentDefinition | undefined,
  lanes: readonly Lane[],
): string {
  if (typeof asked === 'string') return asked
  return definition?.model && lanes.some((l) => l.key === definition.model)
    ? definition.model
    : 'main'
}

/** What spawn's structured result says of the child run. */
function childReport(
  result: RunResult,
  lane: string,
  model: ModelClient,
  definition: SubagentDefinition | undefined,
): Record<string, unknown> {
  return {
    runId: result.runId,
    status: result.status,
    lane,
    ...(definition && { agent: definition.name }),
    model: model.model,
    turns: result.turns,
    usage: result.usage,
    transcript: result.transcript,
  }
}

/** spawn's input: the task, a lane (main or a sub-provider), an optional goal and subagent definition. */
function spawnSchema(
  choices: Lane[],
  definitions: SubagentDefinition[],
): ToolDefinition['inputSchema'] {
  const laneHelp = [
    'main: the model this agent runs on',
    ...choices.map((l) => `${l.key}: ${l.description || `${l.provider} ${l.model}`}`),
  ].join('; ')
  return {
    type: 'object',
    properties: {
      task: {
        type: 'string',
        minLength: 1,
        description: 'everything the subagent needs to know: it does not see this conversation',
      },
      lane: {
        type: 'string',
        enum: ['main', ...choices.map((l) => l.key)],
        description: laneHelp,
      },
      goal: {
        type: 'string',
        description: 'optional: a goal the answer must reach; a verifier checks it',
      },
      ...(definitions.length && {
        agent: {
          type: 'string',
          enum: definitions.map((d) => d.name),
          description: `optional: a subagent definition to run it as (its instructions and tools): ${definitions
            .map((d) => `${d.name}: ${d.description.split('\n')[0]!.slice(0, 160)}`)
            .join('; ')}`,
        },
      }),
    },
    required: ['task'],
    additionalProperties: false,
  }
}

/** A definition by name; an unknown one is the model's mistake, told with the names there are. */
function findAgent(deps: SpawnDeps, name: string): SubagentDefinition {
  const plugins = deps.agents?.()
  const found = plugins?.agent(name)
  if (found) return found
  const names = plugins?.agents().map((d) => d.name) ?? []
  throw new Error(
    `no subagent definition "${name}"${names.length ? `; there are: ${names.join(', ')}` : ' (no plugin offers any)'}`,
  )
}

async function verify(model: ModelClient, goal: string, answer: string, signal: AbortSignal) {
  const response = await model.complete(
    {
      system: VERIFY,
      messages: [{ role: 'user', content: `Goal:\n${goal}\n\nResult:\n${answer}` }],
      tools: [],
    },
    { signal },
  )
  const text = response.text.trim()
  return {
    reached: /^REACHED\b/i.test(text),
    text,
    model: `${model.provider} ${model.model}`,
    usage: response.usage,
  }
}
