/**
 * A kernel with the runtime and the given instances (each config validated as the resolver does),
 * settled: the scaffold of tests that drive plugins without a composition.
 */
import assert from 'node:assert/strict'
import {
  Kernel,
  runtimePlugin,
  toPlugin,
  validateConfig,
  type Plugin,
  type ToolRuntime,
} from '../../src/index.ts'

export async function kernelWith(instances: ReadonlyArray<readonly [string, unknown, unknown?]>) {
  const kernel = new Kernel()
  kernel.spawn(toPlugin(runtimePlugin) as Plugin, {}, { key: 'yoke:runtime' })
  for (const [key, plugin, config = {}] of instances) {
    const p = toPlugin(plugin) as Plugin
    const checked = validateConfig(p, config)
    assert.ok('value' in checked, `${key}: ${JSON.stringify(checked)}`)
    kernel.spawn(p, checked.value, { key })
  }
  await kernel.settled()
  return { kernel, rt: kernel.services.get('runtime')!.value as ToolRuntime }
}

/**
 * Spawns `plugin` as `key` in a running kernel (its config validated as the resolver does) and
 * waits until it settled; it must be active (else the assertion names its error).
 */
export async function spawnActive(kernel: Kernel, plugin: unknown, config: unknown, key: string) {
  const p = toPlugin(plugin) as Plugin
  const checked = validateConfig(p, config)
  assert.ok('value' in checked, `${key}: ${JSON.stringify(checked)}`)
  const fiber = kernel.spawn(p, checked.value, { key })
  await kernel.whenSettled(fiber, 20_000)
  assert.equal(fiber.state, 'active', String(fiber.error?.stack ?? fiber.error))
  return fiber
}
