/**
 * The public face of the models plugin: the model contract (messages, requests, responses, the
 * `ModelClient` a provider makes), the `models` registry service through which provider plugins
 * offer their kinds and anyone gets a model by kind, and the toolkit provider plugins are built
 * with (config schema, API key rule, one SDK request with abort, timeout and error mapping, and
 * the model and apply an SDK provider shares, so each provider keeps only its wire format).
 */
import type { ModelClient } from './model.ts'
import type { ModelRegistry } from './registry.ts'

export type * from './model.ts'
export { offerProvider } from './offer.ts'
// the codes this face's users throw (MODEL_FAILED, MODEL_TIMEOUT) are declared with it
export { errors as modelErrors } from './errors.ts'
export type { ModelProvider, ModelRegistry, ModelSpec, ProviderSpec } from './registry.ts'
export {
  apiKeyFromEnv,
  costOf,
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  isRecord,
  optArray,
  optCount,
  optString,
  parseArgs,
  parseJson,
  providerConfig,
  providerSecrets,
  record,
  WireError,
  withCost,
  type ProviderConfig,
  type ProviderOptions,
} from './provider.ts'
export {
  cappedRetryFetch,
  request,
  requestInfo,
  sdkLogger,
  type Attempt,
  type RequestInfo,
  type SdkErrors,
} from './request.ts'
export {
  sdkClientOptions,
  sdkModel,
  sdkProvider,
  serveProvider,
  type AnswerReader,
  type OutputBounds,
  type ProviderWire,
  type SdkProvider,
  type WireAnswer,
} from './sdk-model.ts'

declare module 'yoke' {
  interface Services {
    /** the main model: provided by one provider instance (openai, anthropic, replay, …) */
    model: ModelClient
    /** the registry of model provider kinds (the models plugin) */
    models: ModelRegistry
  }
}
