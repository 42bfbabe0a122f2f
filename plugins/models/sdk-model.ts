/**
 * @module models/sdk-model
 * What the SDK-backed provider plugins (openai, anthropic) share, so each keeps only its wire
 * format (a `ProviderWire`): the SDK client's options (bounds, retries, no key header for a keyless
 * server, a capped retry-after, the logger), the model whose `complete` sends one bounded request
 * and reads the answer streamed or whole, usage with its cost, and the plugin's apply (offer the
 * kind; provide the main model with the key from its variable).
 */
import type { Context } from 'yoke'
import type {
  CompleteOptions,
  ModelClient,
  ModelRequest,
  ModelResponse,
  ModelToolCall,
  StopReason,
} from './model.ts'
import { offerProvider } from './offer.ts'
import {
  apiKeyFromEnv,
  parseJson,
  withCost,
  type ProviderConfig,
  type ProviderOptions,
} from './provider.ts'
import type { ModelProvider } from './registry.ts'
import {
  cappedRetryFetch,
  request,
  sdkLogger,
  type Attempt,
  type RequestInfo,
  type SdkErrors,
} from './request.ts'

/** One request's output bounds: the request's own, else the provider instance's config. */
export interface OutputBounds {
  maxTokens?: number
  temperature?: number
}

/** What a provider keeps its own: its API's wire format and the SDK calls that carry it. */
export interface ProviderWire<Body> {
  /** the SDK's error classes (both SDKs export the same four) */
  readonly errors: SdkErrors
  /** the neutral request as this API's body, with the bounds that are set */
  body(request: ModelRequest, bounds: OutputBounds): Body
  /** asks for a streamed answer: the SDK's iterable of events */
  stream(body: Body, signal: AbortSignal): Promise<AsyncIterable<unknown>>
  /** asks for one JSON answer: the HTTP response, whose body is read and checked here */
  whole(body: Body, signal: AbortSignal): Promise<Response>
  /** a reader for a streamed answer, fed event by event */
  reader(): AnswerReader
  /** a reader that has read a whole JSON answer */
  readJson(json: unknown): AnswerReader
}

/** One answer being read in a provider's wire format. */
export interface AnswerReader {
  /** reads one stream event; text goes to `onText` as it arrives */
  add(event: unknown, onText: (delta: string) => void): void
  /** the text read so far */
  text(): string
  /** the answer; a WireError when the stream ended before the answer did */
  finish(): WireAnswer
}

/** An answer as the wire said it: before its cost, and the model only if the server named it. */
export interface WireAnswer {
  text: string
  toolCalls: ModelToolCall[]
  stopReason: StopReason
  usage: { inputTokens: number; outputTokens: number }
  model?: string
}

/**
 * The options both SDK clients take (Stainless-generated): the request's bounds and retries, the
 * key (none: `keyHeaders` are left out), a fetch that caps retry-after, and the SDK's log lines.
 */
export function sdkClientOptions(
  info: RequestInfo,
  options: ProviderOptions,
  keyHeaders: readonly string[],
) {
  return {
    apiKey: info.apiKey ?? 'unused',
    baseURL: info.baseUrl,
    timeout: info.timeoutMs,
    maxRetries: info.maxRetries,
    // a null header is left out: no key header at all for a keyless server
    defaultHeaders: info.apiKey
      ? undefined
      : Object.fromEntries(keyHeaders.map((header) => [header, null])),
    fetch: cappedRetryFetch(options.maxRetryDelayMs ?? 30_000),
    ...sdkLogger(options.logger),
  }
}

/**
 * A model over a provider's wire: `complete` sends one request under the bounds of `info` (see
 * request.ts for the errors it rejects with), streamed (`options.stream`, default true) or whole,
 * and resolves to the neutral response, its usage priced at `options.pricing`.
 */
export function sdkModel<Body>(
  info: RequestInfo,
  options: ProviderOptions,
  wire: ProviderWire<Body>,
): ModelClient {
  const read = (options.stream ?? true) ? readStream : readWhole
  return {
    provider: info.provider,
    model: info.model,
    complete(req: ModelRequest, { signal, onText }: CompleteOptions = {}): Promise<ModelResponse> {
      const body = wire.body(req, {
        maxTokens: req.maxTokens ?? options.maxTokens,
        temperature: req.temperature ?? options.temperature,
      })
      return request(info, wire.errors, signal, async (attempt) => {
        const answer = (await read(wire, body, attempt, onText)).finish()
        return {
          ...answer,
          usage: withCost(answer.usage, options.pricing),
          model: answer.model || info.model,
        }
      })
    },
  }
}

async function readStream<Body>(
  wire: ProviderWire<Body>,
  body: Body,
  attempt: Attempt,
  onText: CompleteOptions['onText'],
): Promise<AnswerReader> {
  const events = await wire.stream(body, attempt.signal)
  attempt.alive()
  const reader = wire.reader()
  for await (const event of events) {
    attempt.alive()
    reader.add(event, (delta) => attempt.callback(onText, delta))
  }
  return reader
}

async function readWhole<Body>(
  wire: ProviderWire<Body>,
  body: Body,
  attempt: Attempt,
  onText: CompleteOptions['onText'],
): Promise<AnswerReader> {
  const response = await wire.whole(body, attempt.signal)
  attempt.alive()
  const reader = wire.readJson(parseJson(await response.text()))
  const text = reader.text()
  if (text) attempt.callback(onText, text)
  return reader
}

/** A provider kind over an SDK: what the registry makes for a lane, and its plugin's main model. */
export interface SdkProvider extends ModelProvider {
  readonly defaultKeyEnv: string
  /** a model from an instance's config or a lane's spec, the key already read */
  make(options: ProviderOptions): ModelClient
}

export function sdkProvider(
  kind: string,
  defaultKeyEnv: string,
  make: (options: ProviderOptions) => ModelClient,
): SdkProvider {
  return { kind, defaultKeyEnv, make, create: (spec) => make(spec) }
}

/**
 * A provider plugin's apply: offers its kind to the `models` registry and, unless `model: false`,
 * provides the main `model` with the key read from the variable its config names (unset: the
 * instance waits with PLUGIN_WAITING naming it). Config keys of the provider's own (openai's
 * `maxTokensParam`) travel on to `make`.
 */
export function serveProvider(ctx: Context, config: ProviderConfig, provider: SdkProvider): void {
  offerProvider(ctx, provider)
  if (config.model === false) return
  const apiKey = apiKeyFromEnv(ctx.key, config.apiKeyEnv)
  ctx.provide(
    'model',
    provider.make({ ...config, model: config.model, apiKey, logger: ctx.logger }),
  )
}
