/**
 * Sub-provider lanes: named models a subagent may run on (octos's `sub_providers`). A lane is made
 * into a model client when first used; `goal_verifier` is the lane that checks whether a goal was
 * reached. The providers are the built-in ones: openai (and compatible servers), anthropic, replay.
 */
import { z } from 'zod'
import { YokeError } from 'yoke'
import { createAnthropicModel } from '../anthropic/client.ts'
import { createOpenAIModel } from '../openai/client.ts'
import { createReplayModel } from './cassette.ts'
import type { LaneOptions, ModelClient } from './model.ts'

export const GOAL_VERIFIER = 'goal_verifier'

export const laneSchema = z
  .object({
    key: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, 'a lane key is letters, digits, _ and -'),
    provider: z.enum(['openai', 'anthropic', 'replay']),
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

const DEFAULT_KEY_ENV = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  replay: undefined,
} as const

/** Makes a lane's model client; a key variable that is unset is an error naming it. `dir` resolves a relative cassette. */
export function createLaneModel(lane: Lane, resolvePath: (p: string) => string): ModelClient {
  const options: LaneOptions = { ...lane }
  if (lane.provider === 'replay') {
    if (!lane.cassette)
      throw new YokeError('MODEL_FAILED', {
        provider: 'replay',
        model: lane.model,
        reason: `lane "${lane.key}" has no cassette`,
      })
    return createReplayModel({ cassette: resolvePath(lane.cassette), lane: lane.lane ?? lane.key })
  }
  const env = lane.apiKeyEnv ?? DEFAULT_KEY_ENV[lane.provider]
  const apiKey = env && env !== 'none' ? process.env[env] : undefined
  if (env && env !== 'none' && !apiKey)
    throw new YokeError('MODEL_FAILED', {
      provider: lane.provider,
      model: lane.model,
      reason: `lane "${lane.key}": the API key variable ${env} is not set`,
    })
  return lane.provider === 'openai'
    ? createOpenAIModel({ ...options, apiKey })
    : createAnthropicModel({ ...options, apiKey })
}
