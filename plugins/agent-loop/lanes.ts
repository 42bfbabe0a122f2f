/**
 * Sub-provider lanes: named models a subagent may run on (octos's `sub_providers`). A lane is made
 * into a model client when first used, through the `models` registry: any provider kind an
 * instance offers (openai, anthropic, replay, …), without importing a provider's code.
 * `goal_verifier` is the lane that checks whether a goal was reached.
 */
import { z } from 'zod'
import { YokeError } from 'yoke'
import type { ModelClient, ModelRegistry } from '../models/api.ts'
import '../models/api.ts' // declares MODEL_FAILED, thrown below

export const GOAL_VERIFIER = 'goal_verifier'

export const laneSchema = z
  .object({
    key: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, 'a lane key is letters, digits, _ and -'),
    /** a provider kind offered to the `models` registry: openai, anthropic, replay, … */
    provider: z
      .string()
      .regex(/^[a-z0-9-]{1,40}$/, 'a provider kind: openai, anthropic, replay, …'),
    model: z.string().min(1).default('replay'),
    apiKeyEnv: z.string().min(1).optional(),
    baseUrl: z.string().url().optional(),
    /** what the lane is good for: goes into the spawn tool's schema so the model can choose */
    description: z.string().default(''),
    timeoutMs: z.number().int().positive().optional(),
    maxRetries: z.number().int().nonnegative().optional(),
    maxTokens: z.number().int().positive().optional(),
    pricing: z
      .object({ inputPerMTok: z.number().nonnegative(), outputPerMTok: z.number().nonnegative() })
      .strict()
      .optional(),
    /** replay only: the cassette and which of its lanes to play (default this lane's key) */
    cassette: z.string().min(1).optional(),
    lane: z.string().min(1).optional(),
  })
  .strict()
export type Lane = z.output<typeof laneSchema>

/**
 * Makes a lane's model through the registry; a key variable that is unset, or a kind no instance
 * offers, is an error naming it. `resolvePath` resolves a relative cassette.
 */
export function createLaneModel(
  lane: Lane,
  resolvePath: (p: string) => string,
  registry: ModelRegistry | undefined,
): ModelClient {
  const who = `lane "${lane.key}"`
  if (!registry)
    throw new YokeError('MODEL_FAILED', {
      provider: lane.provider,
      model: lane.model,
      reason: `${who}: no model registry is composed (add the models plugin: models: { use: models })`,
    })
  return registry.create(
    {
      ...lane,
      cassette: lane.cassette && resolvePath(lane.cassette),
      lane: lane.lane ?? lane.key,
    },
    who,
  )
}
