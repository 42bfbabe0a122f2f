/**
 * agent-loop: the agent as a plugin. Provides the `agent` service: `run(task, options)` returns
 * the run's events and its result. The loop meets everything else only through services: tools
 * and calls through `runtime`, the system prompt through `prompt`, the model through `model`
 * (any provider plugin, or `replay`), background tasks through `tasks`. A preset may swap this
 * plugin for any other that provides `agent`.
 */
import { z } from 'zod'
import { definePlugin } from 'yoke'
import { AgentLoop } from './agent-loop.ts'
import { laneSchema } from './lanes.ts'

export type * from './api.ts'

const config = z
  .object({
    budget: z
      .object({
        maxTurns: z.number().int().positive().default(24),
        maxTokens: z.number().int().positive().default(500_000),
        maxMs: z
          .number()
          .int()
          .positive()
          .max(2 ** 31 - 1)
          .default(15 * 60_000),
      })
      .strict()
      .default({ maxTurns: 24, maxTokens: 500_000, maxMs: 15 * 60_000 }),
    /** max output tokens per model request (the provider's default when unset) */
    maxTokensPerRequest: z.number().int().positive().optional(),
    temperature: z.number().min(0).max(2).optional(),
    /** where transcripts go (relative: to the project); false: none */
    transcripts: z.union([z.string().min(1), z.literal(false)]).default('.yoke/runs'),
    /** a system prompt section of the loop's own (order 0) */
    instructions: z.string().optional(),
    /** models a subagent may run on; the `spawn` tool offers them, `goal_verifier` checks goals */
    subProviders: z.array(laneSchema).default([]),
    /** how many times one run's end may be turned into a continuation by `stop` taps */
    maxStopContinuations: z.number().int().min(0).max(50).default(3),
    /** register the `spawn` tool (subagents on the main model or a sub-provider lane) */
    spawn: z.boolean().default(true),
    /** a subagent's budget */
    subagentBudget: z
      .object({
        maxTurns: z.number().int().positive().default(12),
        maxTokens: z.number().int().positive().default(200_000),
        maxMs: z
          .number()
          .int()
          .positive()
          .default(5 * 60_000),
      })
      .strict()
      .default({ maxTurns: 12, maxTokens: 200_000, maxMs: 5 * 60_000 }),
  })
  .strict()
export type AgentLoopConfig = z.output<typeof config>

export default definePlugin({
  name: 'agent-loop',
  inject: ['runtime', 'model', 'tasks', 'project'],
  provides: ['agent'],
  config,
  // a lane names a key of the user's and where it goes, as a provider's config does
  sendsSecrets: (cfg) =>
    cfg.subProviders.flatMap((lane, i) =>
      lane.apiKeyEnv === 'none' ? [] : [`subProviders.${i}.apiKeyEnv`, `subProviders.${i}.baseUrl`],
    ),
  apply(ctx, cfg) {
    const loop = new AgentLoop(ctx, cfg)
    ctx.effect('agent runs', () => loop.close())
    loop.start()
  },
})
