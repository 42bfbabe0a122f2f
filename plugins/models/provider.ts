/**
 * The toolkit of model provider plugins (openai, anthropic): their config schema, the API key rule
 * (an unset key variable keeps the instance pending), one request's abort, timeout and error
 * mapping around an official SDK call, and the small readers that refuse a response of the wrong
 * shape with a clear reason instead of a crash.
 *
 * Retries stay with the SDKs (`maxRetries`: 429, 408, 409, 5xx and connection errors, with backoff
 * that honours `retry-after-ms` / `retry-after`); `retryAfterCap` bounds how long a server may ask
 * a client to wait. The SDKs time out only the wait for the response headers (each attempt), so
 * `request()` adds an idle watchdog over the body; and it rejects the moment the caller aborts,
 * even while an SDK sleeps before a retry.
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

// ---- one request ----------------------------------------------------------------------------------

/** The error classes both SDKs export (Stainless-generated, same names and meaning). */
/* eslint-disable @typescript-eslint/no-explicit-any -- constructor signatures of the SDKs' classes */
export interface SdkErrors {
  APIError: new (...args: any[]) => Error & { status?: number; error?: unknown }
  APIUserAbortError: new (...args: any[]) => Error
  APIConnectionError: new (...args: any[]) => Error
  APIConnectionTimeoutError: new (...args: any[]) => Error
}
/* eslint-enable @typescript-eslint/no-explicit-any */

export interface RequestInfo {
  provider: string
  model: string
  baseUrl: string
  timeoutMs: number
  maxRetries: number
  /** never appears in an error: replaced by *** */
  apiKey?: string
}

/** A provider's request info from its options, with the defaults filled in. */
export function requestInfo(
  provider: string,
  options: ProviderOptions,
  defaultBaseUrl: string,
): RequestInfo {
  return {
    provider,
    model: options.model,
    baseUrl: options.baseUrl ?? defaultBaseUrl,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
    apiKey: options.apiKey,
  }
}

/** What a request body gets: the signal for the SDK, and `alive()` whenever the server sent something. */
export interface Attempt {
  readonly signal: AbortSignal
  /** (re)starts the idle watchdog: call it when the response starts and on each event */
  alive(): void
  /** runs the caller's callback; what it throws rejects the request unchanged */
  callback<A extends unknown[]>(fn: ((...args: A) => void) | undefined, ...args: A): void
}

class CallbackError {
  constructor(readonly error: unknown) {}
}

/**
 * Runs `body` (one SDK call and the reading of its answer) under the caller's signal and the
 * timeout, and maps whatever goes wrong to the catalogue:
 * - the caller's signal fired → ABORTED (at once, even mid-retry), the HTTP request is cancelled;
 * - no answer within timeoutMs (per attempt, retried by the SDK), or silence of timeoutMs
 *   once it started → MODEL_TIMEOUT;
 * - an HTTP error after the retries, a connection that failed or broke, a response of the wrong
 *   shape → MODEL_FAILED naming provider, model and the reason (the API key is never in it).
 */
export async function request<T>(
  info: RequestInfo,
  errors: SdkErrors,
  signal: AbortSignal | undefined,
  body: (attempt: Attempt) => Promise<T>,
): Promise<T> {
  const aborted = () =>
    new YokeError(
      'ABORTED',
      { name: `${info.provider} model ${info.model}` },
      { cause: signal?.reason },
    )
  if (signal?.aborted) throw aborted()
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  let onAbort: (() => void) | undefined
  try {
    return await new Promise<T>((resolve, reject) => {
      const stop = (error: unknown) => {
        controller.abort(error)
        reject(error)
      }
      onAbort = () => stop(aborted())
      signal?.addEventListener('abort', onAbort, { once: true })
      const attempt: Attempt = {
        signal: controller.signal,
        alive() {
          clearTimeout(timer)
          timer = setTimeout(
            () =>
              stop(
                new YokeError('MODEL_TIMEOUT', {
                  provider: info.provider,
                  model: info.model,
                  ms: info.timeoutMs,
                }),
              ),
            info.timeoutMs,
          )
        },
        callback(fn, ...args) {
          try {
            fn?.(...args)
          } catch (err) {
            throw new CallbackError(err)
          }
        },
      }
      body(attempt).then(resolve, (err) =>
        reject(
          controller.signal.aborted ? controller.signal.reason : toYokeError(err, info, errors),
        ),
      )
    })
  } finally {
    clearTimeout(timer)
    if (onAbort) signal?.removeEventListener('abort', onAbort)
    if (!controller.signal.aborted) controller.abort() // a body that stopped reading early frees its connection
  }
}

function toYokeError(err: unknown, info: RequestInfo, errors: SdkErrors): unknown {
  if (err instanceof CallbackError) return err.error
  if (err instanceof YokeError) return err
  // the SDK's error keeps the server's body: one that echoes the key does not travel on as the cause
  const cause = leaks(err, info.apiKey)
    ? new Error(redact((err as Error).message, info.apiKey))
    : err
  const failed = (reason: string) =>
    new YokeError(
      'MODEL_FAILED',
      { provider: info.provider, model: info.model, reason: redact(reason, info.apiKey) },
      { cause },
    )
  const retried = info.maxRetries
    ? ` (after ${info.maxRetries} ${info.maxRetries === 1 ? 'retry' : 'retries'})`
    : ''
  if (err instanceof errors.APIConnectionTimeoutError)
    return new YokeError(
      'MODEL_TIMEOUT',
      { provider: info.provider, model: info.model, ms: info.timeoutMs },
      { cause: err },
    )
  if (err instanceof errors.APIUserAbortError) return failed('the request was cancelled')
  if (err instanceof errors.APIConnectionError)
    return failed(`cannot reach ${info.baseUrl}${retried}: ${causeText(err)}`)
  if (err instanceof errors.APIError) {
    const detail = errorDetail(err)
    if (err.status === undefined) return failed(`the server sent an error in the stream: ${detail}`)
    const again =
      err.status === 429 || err.status >= 500 || err.status === 408 || err.status === 409
        ? retried
        : ''
    return failed(`HTTP ${err.status}${again}: ${detail}`)
  }
  if (err instanceof WireError) return failed(`unexpected response: ${err.message}`)
  if (err instanceof SyntaxError)
    return failed(`the server sent something that is not JSON (${err.message})`)
  return failed(`the response broke off: ${causeText(err)}`)
}

/** The server's own error message (OpenAI `{error: {message}}`, Anthropic `{error: {message}}`), else the SDK's. */
function errorDetail(err: Error & { error?: unknown }): string {
  const body = err.error
  const inner = isRecord(body) && isRecord(body.error) ? body.error : body
  const message =
    isRecord(inner) && typeof inner.message === 'string'
      ? inner.message
      : err.message.replace(/^\d{3}\s+/, '')
  return message.length > 500 ? message.slice(0, 500) + '…' : message
}

function causeText(err: unknown): string {
  const parts: string[] = []
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++)
    if (!parts.includes(e.message)) parts.push(e.message)
  return parts.join(': ') || String(err)
}

function leaks(err: unknown, key: string | undefined): boolean {
  if (!key || key.length < 4 || !(err instanceof Error)) return false
  let body = ''
  try {
    body = JSON.stringify((err as { error?: unknown }).error) ?? ''
  } catch {
    // a body that cannot be serialised is not echoed anywhere either
  }
  return err.message.includes(key) || body.includes(key) || causeText(err).includes(key)
}

function redact(text: string, key: string | undefined): string {
  return key && key.length >= 4 ? text.split(key).join('***') : text
}

/**
 * A fetch for the SDKs that caps `retry-after` / `retry-after-ms` on error responses at `maxMs`:
 * the SDKs wait for whatever a server asks (the openai SDK without limit, in a sleep that an abort
 * does not end), so a server answering `retry-after: 3600` would hold the agent for an hour.
 */
export function cappedRetryFetch(maxMs: number, inner?: typeof fetch): typeof fetch {
  return async (input, init) => {
    const response = await (inner ?? globalThis.fetch)(input, init)
    if (response.ok) return response
    const ms = retryAfterMs(response.headers)
    if (ms === undefined || ms <= maxMs) return response
    const headers = new Headers(response.headers)
    headers.delete('retry-after')
    headers.set('retry-after-ms', String(maxMs))
    return new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    })
  }
}

function retryAfterMs(headers: Headers): number | undefined {
  const ms = parseFloat(headers.get('retry-after-ms') ?? '')
  if (Number.isFinite(ms)) return ms
  const after = headers.get('retry-after')
  if (!after) return undefined
  const seconds = parseFloat(after)
  if (Number.isFinite(seconds)) return seconds * 1000
  const date = Date.parse(after)
  return Number.isFinite(date) ? date - Date.now() : undefined
}

/** The SDKs' `logger` option writing to a yoke logger (their info lines, e.g. retries, at debug). */
export function sdkLogger(logger: Logger | undefined) {
  if (!logger) return { logLevel: 'off' as const }
  const line =
    (level: keyof Logger) =>
    (message: string, ...rest: unknown[]) =>
      logger[level](
        rest.length
          ? `${message} ${rest.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join(' ')}`
          : message,
      )
  return {
    logLevel: 'info' as const,
    logger: { debug: line('debug'), info: line('debug'), warn: line('warn'), error: line('debug') },
  }
}
