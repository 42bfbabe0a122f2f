/**
 * models: the registry of model providers, as the `models` service. Each instance of a provider
 * plugin (openai, anthropic, replay) offers its kind here; the agent loop's sub-provider lanes ask
 * for a model by kind, so no plugin imports a provider's code. The main model stays the `model`
 * service, provided by one provider instance. In the `base` preset.
 */
import { bindToContext, definePlugin, type Disposer } from 'yoke'
import { ProviderRegistry } from './registry.ts'

export default definePlugin({
  name: 'models',
  provides: ['models'],
  apply(ctx) {
    const registry = new ProviderRegistry()
    // the host (CLI, tests) gets plain disposers; each consuming instance a view whose offers are its effects
    ctx.provide(
      'models',
      Object.assign(registry.hostView(), {
        [bindToContext]: (c: { key: string; effect: (l: string, f: () => void) => Disposer }) =>
          registry.view(c.key, c.effect),
      }),
    )
  },
})
