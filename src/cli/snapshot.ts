/**
 * @module config/snapshot
 * What `yoke inspect` shows: every instance with its state and why (pending on which service and
 * who would provide it; failed with which error, where), services and owners, hooks and their
 * taps, live resources, and the layers the config came from.
 */
import type { YokeError } from '../errors.ts'
import type { EffectNode } from '../kernel/disposer.ts'
import type { Fiber } from '../kernel/fiber.ts'
import type { Composition } from '../config/composer.ts'
import { hookName, tapsOf } from '../kernel/hooks.ts'
import { resolveUse } from '../config/modules.ts'
import { builtinNames } from '../roots.ts'
import { codeFrame } from './output.ts'

const withFrame = (error: YokeError) => {
  const frame = codeFrame(error)
  return { ...error.toJSON(), ...(frame && { frame }) }
}

export interface InstanceInfo {
  key: string
  plugin?: string
  use: string
  state: Fiber['state'] | 'disabled'
  fiber?: number
  parent?: string
  location?: string
  /** its error, with `frame`: where in the plugin's own code it was thrown (cli/output codeFrame) */
  error?: ReturnType<YokeError['toJSON']> & { frame?: string }
  waitingFor?: Array<{
    service: string
    providers: Array<{ instance: string; state: string }>
    hint?: string
  }>
  effects: EffectNode[]
}

export interface Snapshot {
  preset?: string
  layers: Array<{ kind: string; file: string }>
  instances: InstanceInfo[]
  tools: Array<{ name: string; source: string; risk: string; concurrency: string; owner: string }>
  services: Array<{ name: string; owner: string; active: boolean }>
  hooks: Array<{ hook: string; taps: string[] }>
  resources: Record<string, number>
}

export async function snapshot(composition: Composition): Promise<Snapshot> {
  const { kernel, reconciler } = composition
  const stack = composition.current?.stack ?? composition.candidate?.stack
  const providers = await providerIndex(composition)
  const instances: InstanceInfo[] = []
  const byFiber = new Map<Fiber, string>()
  for (const [key, { spec, fiber }] of reconciler.running) {
    if (fiber) byFiber.set(fiber, spec.use)
    const error = fiber?.error ?? spec.error
    instances.push({
      key,
      plugin: spec.module?.plugin.name,
      use: spec.use,
      state: !spec.enabled ? 'disabled' : (fiber?.state ?? 'failed'),
      fiber: fiber?.id,
      location: spec.site.file ? `${spec.site.file}:${spec.site.line}:${spec.site.col}` : undefined,
      error: error && withFrame(error),
      waitingFor: fiber?.state === 'pending' ? waiting(fiber, providers) : undefined,
      effects: fiber?.effects() ?? [],
    })
  }
  // core instances (yoke:runtime) and child plugins are fibers the config does not list
  for (const fiber of kernel.fibers.filter((f) => !byFiber.has(f))) {
    instances.push({
      key: fiber.key,
      plugin: fiber.plugin.name,
      use: fiber.parent ? `child of ${fiber.parent.key}` : 'core',
      parent: fiber.parent?.key,
      state: fiber.state,
      fiber: fiber.id,
      error: fiber.error && withFrame(fiber.error),
      waitingFor: fiber.state === 'pending' ? waiting(fiber, providers) : undefined,
      effects: fiber.effects(),
    })
  }
  return {
    preset: stack?.preset,
    layers: stack?.layers.map((l) => ({ kind: l.kind, file: l.file })) ?? [],
    instances,
    tools: (composition.runtime?.list() ?? []).map((t) => ({
      name: t.name,
      source: t.source,
      risk: t.risk,
      concurrency: t.concurrency,
      owner: t.owner,
    })),
    services: kernel.services
      .list()
      .map((p) => ({ name: p.name, owner: p.owner.key, active: p.owner.state === 'active' })),
    hooks: hooksOf(composition),
    resources: kernel.resources(),
  }

  function waiting(fiber: Fiber, index: Map<string, Array<{ instance: string; state: string }>>) {
    return fiber.plugin.inject
      .filter((name) => !kernel.services.get(name))
      .map((service) => {
        const list = index.get(service) ?? []
        const builtins = index.get(`builtin:${service}`)?.map((p) => p.instance) ?? []
        const hint = list.length
          ? undefined
          : builtins.length
            ? `no instance provides it; add one of the built-in plugins ${builtins.join(', ')} to the preset`
            : 'no instance and no built-in plugin provides it'
        return { service, providers: list, hint }
      })
  }
}

/** service → the config instances (and built-in plugins) that declare `provides` for it. */
async function providerIndex(composition: Composition) {
  const index = new Map<string, Array<{ instance: string; state: string }>>()
  const add = (service: string, instance: string, state: string) =>
    index.set(service, [...(index.get(service) ?? []), { instance, state }])
  for (const [key, { spec, fiber }] of composition.reconciler.running) {
    const state = !spec.enabled ? 'disabled' : (fiber?.state ?? 'failed')
    for (const service of spec.module?.plugin.provides ?? []) add(service, key, state)
  }
  for (const name of builtinNames()) {
    try {
      const module = await composition.loader.load(resolveUse(name, '.', '.'))
      for (const service of module.plugin.provides) add(`builtin:${service}`, name, 'available')
    } catch {
      // a broken built-in shows up where it is used; here it just provides nothing
    }
  }
  return index
}

/** The kernel's and the runtime's hooks (tapped or not), and every other hook a plugin tapped. */
function hooksOf(composition: Composition) {
  const rt = composition.runtime
  const own = rt ? [...Object.values(rt.hooks), ...Object.values(rt.tasks.hooks)] : []
  const listed = composition.kernel.hooksInUse()
  const names = new Set(listed.map((h) => h.hook))
  return [
    ...listed,
    ...own
      .filter((h) => !names.has(hookName(h)))
      .map((h) => ({ hook: hookName(h), taps: tapsOf(h) })),
  ]
}
