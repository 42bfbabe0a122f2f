/**
 * anthropic: provides the `model` service with an Anthropic messages model (or a server that
 * speaks the same API at `baseUrl`). The key comes from the variable `apiKeyEnv` names; while it
 * is unset the instance stays pending and says so.
 */
import { definePlugin } from 'yoke'
import { apiKeyFromEnv, providerConfig } from '../shared/provider.ts'
import { createAnthropicModel } from './client.ts'

export {
  createAnthropicModel,
  toWire,
  ANTHROPIC_BASE_URL,
  DEFAULT_MAX_TOKENS,
  type AnthropicOptions,
} from './client.ts'

export const anthropicConfig = providerConfig('ANTHROPIC_API_KEY')

export default definePlugin({
  name: 'anthropic',
  provides: ['model'],
  config: anthropicConfig,
  apply(ctx, config) {
    const apiKey = apiKeyFromEnv(ctx.key, config.apiKeyEnv)
    ctx.provide('model', createAnthropicModel({ ...config, apiKey, logger: ctx.logger }))
  },
})
