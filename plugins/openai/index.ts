/**
 * openai: provides the `model` service with an OpenAI chat-completions model, or one of any server
 * that speaks the same API (`baseUrl`: DeepSeek, Ollama, vLLM, llama.cpp). The key comes from the
 * variable `apiKeyEnv` names; while it is unset the instance stays pending and says so. Every
 * instance also offers the `openai` kind to the `models` registry (sub-provider lanes); with
 * `model: false` that is all it does.
 */
import { z } from 'zod'
import { definePlugin } from 'yoke'
import {
  apiKeyFromEnv,
  providerConfig,
  providerSecrets,
  type ModelProvider,
  offerProvider,
} from '../models/api.ts'
import { createOpenAIModel } from './client.ts'

export { createOpenAIModel, toWire, OPENAI_BASE_URL, type OpenAIOptions } from './client.ts'

export const openaiConfig = providerConfig('OPENAI_API_KEY').extend({
  /** default: max_completion_tokens for api.openai.com, max_tokens with a baseUrl */
  maxTokensParam: z.enum(['max_tokens', 'max_completion_tokens']).optional(),
})

export default definePlugin({
  name: 'openai',
  provides: ['model'],
  config: openaiConfig,
  sendsSecrets: providerSecrets,
  apply(ctx, config) {
    offerProvider(ctx, openaiProvider)
    if (config.model === false) return
    const apiKey = apiKeyFromEnv(ctx.key, config.apiKeyEnv)
    ctx.provide(
      'model',
      createOpenAIModel({ ...config, model: config.model, apiKey, logger: ctx.logger }),
    )
  },
})

/** The `openai` kind in the `models` registry: a lane's model from the lane's own options. */
const openaiProvider: ModelProvider = {
  kind: 'openai',
  defaultKeyEnv: 'OPENAI_API_KEY',
  create: (spec) => createOpenAIModel(spec),
}
