/**
 * @module models/offer
 * How a provider plugin offers its kind: now, if the `models` registry runs, and again whenever a
 * registry instance (re)starts, so the order instances start in, or a reload of the registry,
 * never leaves a kind missing. A preset without the registry still gets its main model.
 */
import type { Context } from 'yoke'
import type { ModelProvider } from './registry.ts'

export function offerProvider(ctx: Context, provider: ModelProvider): void {
  let offered: (() => unknown) | undefined
  // one offer at a time: the one to a registry that went away is withdrawn, not left in the tree
  const offer = () => {
    void offered?.()
    offered = ctx.get('models')?.register(provider)
  }
  offer()
  ctx.tap(ctx.hooks.state, `${ctx.key}: offer ${provider.kind}`, (fiber) => {
    if (fiber.state === 'active' && fiber.plugin.provides.includes('models')) offer()
  })
}
