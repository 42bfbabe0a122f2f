/**
 * The toolkit of model provider plugins (openai, anthropic): their config schema, the API key rule
 * (an unset key variable keeps the instance pending), usage and cost, and the small readers that
 * refuse a response of the wrong shape with a clear reason instead of a crash. One request's
 * bounds and error mapping are in request.ts; the model a provider's wire format makes, in sdk-model.ts.
 */
import { z } from 'zod'
import { YokeError, type Logger } from 'yoke'
import type { LaneOptions, Pricing, Usage } from './model.ts'
import './errors.ts'

/** How createOpenAIModel / createAnthropicModel are configured. */
export interface ProviderOptions extends LaneOptions {
  /** the API key itself; absent: no key is sent (local servers). The environment is not read here. */
  apiKey?: string
  temperature?: number
  /** stream the answer (default true); false asks for one JSON response */
  stream?: boolean
  /** where the SDK's own log lines go (retries at debug); default: nowhere */
  logger?: Logger
  /** at most this long between retries, whatever `retry-after` says (default 30 s) */
  maxRetryDelayMs?: number
}

export const DEFAULT_TIMEOUT_MS = 60_000
export const DEFAULT_MAX_RETRIES = 3

/**
 * The config every provider plugin takes; `apiKeyEnv: none` is for keyless local servers.
 * `model: false` makes an instance that provides no `model` and only offers its kind to the
 * `models` registry (for sub-provider lanes on a provider that is not the main model's).
 */
export function providerConfig(defaultKeyEnv: string) {
  return z
    .object({
      model: z.union([z.string().min(1), z.literal(false)]),
      /** the variable that holds the key; `none`: send no key */
      apiKeyEnv: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a variable name, or none')
        .default(defaultKeyEnv),
      baseUrl: z.url({ protocol: /^https?$/ }).optional(),
      timeoutMs: z.number().int().positive().default(DEFAULT_TIMEOUT_MS),
      maxRetries: z.number().int().min(0).max(10).default(DEFAULT_MAX_RETRIES),
      maxTokens: z.number().int().positive().optional(),
      temperature: z.number().min(0).max(2).optional(),
      pricing: z
        .object({ inputPerMTok: z.number().nonnegative(), outputPerMTok: z.number().nonnegative() })
        .strict()
        .optional(),
      stream: z.boolean().default(true),
    })
    .strict()
}

/** A provider instance's config, as providerConfig reads it. */
export type ProviderConfig = z.output<ReturnType<typeof providerConfig>>

/**
 * The paths of a provider's config that say which key of the user's it sends and where (its
 * `sendsSecrets`): when a cloned project's config sets them, the instance waits for `yoke trust`,
 * so a `baseUrl` of the project's cannot collect OPENAI_API_KEY. An instance that only offers its
 * kind (`model: false`) sends nothing; `none` sends no key.
 */
export const providerSecrets = (config: { model: string | false; apiKeyEnv: string }) =>
  config.model === false || config.apiKeyEnv === 'none' ? [] : ['apiKeyEnv', 'baseUrl']

/**
 * The key from `config.apiKeyEnv`; undefined for `none`. An unset (or empty) variable throws
 * PLUGIN_WAITING, so the kernel keeps the instance pending with a message that names the variable.
 */
export function apiKeyFromEnv(
  instance: string,
  apiKeyEnv: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (apiKeyEnv === 'none') return undefined
  const key = env[apiKeyEnv]
  if (key) return key
  throw new YokeError('PLUGIN_WAITING', {
    instance,
    reason: `the API key variable ${apiKeyEnv} is not set`,
    // a running yoke cannot see a variable exported later: restart, not reload
    what: `export ${apiKeyEnv}=… and restart yoke (or set apiKeyEnv; apiKeyEnv: none for a server without keys)`,
  })
}

/** The cost of `usage` at `pricing`, in US dollars (undefined without pricing). */
export function costOf(
  usage: Pick<Usage, 'inputTokens' | 'outputTokens'>,
  pricing: Pricing | undefined,
): number | undefined {
  if (!pricing) return undefined
  return (
    (usage.inputTokens * pricing.inputPerMTok + usage.outputTokens * pricing.outputPerMTok) /
    1_000_000
  )
}

/** `usage` with `costUsd` when `pricing` is known (the key is absent otherwise). */
export function withCost(
  usage: { inputTokens: number; outputTokens: number },
  pricing: Pricing | undefined,
): Usage {
  const costUsd = costOf(usage, pricing)
  return costUsd === undefined ? { ...usage } : { ...usage, costUsd }
}

/** Tool-call arguments: the JSON object, or the raw text when it is not a JSON object ("" is {}). */
export function parseArgs(text: string): Record<string, unknown> | string {
  if (!text.trim()) return {}
  try {
    const value: unknown = JSON.parse(text)
    return isRecord(value) ? value : text
  } catch {
    return text
  }
}

// ---- reading responses of unknown shape ---------------------------------------------------------

/** A response the client cannot read: becomes MODEL_FAILED with this reason. */
export class WireError extends Error {}

/** A JSON body, or a WireError quoting the start of what came instead. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new WireError(
      `the body is not JSON: ${JSON.stringify(text.slice(0, 80))}${text.length > 80 ? '…' : ''}`,
    )
  }
}

export const isRecord = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x)

/** `x` as an object, or a WireError naming `what`. */
export function record(x: unknown, what: string): Record<string, unknown> {
  if (!isRecord(x)) throw new WireError(`${what} is ${describe(x)}, not an object`)
  return x
}

/** An optional string field: undefined/null pass, anything else but a string is a WireError. */
export function optString(x: unknown, what: string): string | undefined {
  if (x === undefined || x === null) return undefined
  if (typeof x !== 'string') throw new WireError(`${what} is ${describe(x)}, not a string`)
  return x
}

/** An optional count (tokens): a non-negative number, else undefined (servers differ; never fatal). */
export function optCount(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) && x >= 0 ? x : undefined
}

export function optArray(x: unknown, what: string): unknown[] {
  if (x === undefined || x === null) return []
  if (!Array.isArray(x)) throw new WireError(`${what} is ${describe(x)}, not an array`)
  return x
}

function describe(x: unknown): string {
  if (x === null) return 'null'
  if (Array.isArray(x)) return 'an array'
  const text = JSON.stringify(x) ?? String(x)
  return `${typeof x} ${text.length > 40 ? text.slice(0, 40) + '…' : text}`
}
