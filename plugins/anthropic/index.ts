/**
 * anthropic: provides the `model` service with an Anthropic messages model (or a server that
 * speaks the same API at `baseUrl`). The key comes from the variable `apiKeyEnv` names; while it
 * is unset the instance stays pending and says so. Every instance also offers the `anthropic`
 * kind to the `models` registry (sub-provider lanes); with `model: false` that is all it does.
 */
import { definePlugin } from 'yoke'
import { providerConfig, providerSecrets, sdkProvider, serveProvider } from '../models/api.ts'
import { createAnthropicModel } from './client.ts'

export {
  createAnthropicModel,
  toWire,
  ANTHROPIC_BASE_URL,
  DEFAULT_MAX_TOKENS,
  type AnthropicOptions,
} from './client.ts'

export const anthropicConfig = providerConfig('ANTHROPIC_API_KEY')

/** The `anthropic` kind: a lane's model from the lane's own options, and the instance's main model. */
const anthropic = sdkProvider('anthropic', 'ANTHROPIC_API_KEY', createAnthropicModel)

export default definePlugin({
  name: 'anthropic',
  provides: ['model'],
  config: anthropicConfig,
  sendsSecrets: providerSecrets,
  apply: (ctx, config) => serveProvider(ctx, config, anthropic),
})
