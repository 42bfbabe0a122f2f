/**
 * openai: provides the `model` service with an OpenAI chat-completions model, or one of any server
 * that speaks the same API (`baseUrl`: DeepSeek, Ollama, vLLM, llama.cpp). The key comes from the
 * variable `apiKeyEnv` names; while it is unset the instance stays pending and says so.
 */
import { z } from 'zod'
import { definePlugin } from 'yoke'
import { apiKeyFromEnv, providerConfig } from '../shared/provider.ts'
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
  apply(ctx, config) {
    const apiKey = apiKeyFromEnv(ctx.key, config.apiKeyEnv)
    ctx.provide('model', createOpenAIModel({ ...config, apiKey, logger: ctx.logger }))
  },
})
