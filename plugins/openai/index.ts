/**
 * openai: provides the `model` service with an OpenAI chat-completions model, or one of any server
 * that speaks the same API (`baseUrl`: DeepSeek, Ollama, vLLM, llama.cpp). The key comes from the
 * variable `apiKeyEnv` names; while it is unset the instance stays pending and says so. Every
 * instance also offers the `openai` kind to the `models` registry (sub-provider lanes); with
 * `model: false` that is all it does.
 */
import { z } from 'zod'
import { definePlugin } from 'yoke'
import { providerConfig, providerSecrets, sdkProvider, serveProvider } from '../models/api.ts'
import { createOpenAIModel } from './client.ts'

export { createOpenAIModel, toWire, OPENAI_BASE_URL, type OpenAIOptions } from './client.ts'

export const openaiConfig = providerConfig('OPENAI_API_KEY').extend({
  /** default: max_completion_tokens for api.openai.com, max_tokens with a baseUrl */
  maxTokensParam: z.enum(['max_tokens', 'max_completion_tokens']).optional(),
})

/** The `openai` kind: a lane's model from the lane's own options, and the instance's main model. */
const openai = sdkProvider('openai', 'OPENAI_API_KEY', createOpenAIModel)

export default definePlugin({
  name: 'openai',
  provides: ['model'],
  config: openaiConfig,
  sendsSecrets: providerSecrets,
  apply: (ctx, config) => serveProvider(ctx, config, openai),
})
