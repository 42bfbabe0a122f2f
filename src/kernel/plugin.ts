/**
 * @module kernel/plugin
 * The plugin contract. `definePlugin` only adds types: a plain object of the same shape, or a named
 * function `(ctx, config) => …`, is a plugin too, so a dependency-free .mjs file can be loaded by path.
 */
import type { ConfigSchema, Plugin, PluginDefinition, ServiceName } from './types.ts'

export type {
  ApplyResult,
  ConfigSchema,
  InjectedContext,
  Plugin,
  PluginDefinition,
} from './types.ts'

/**
 * Declares a plugin with full types for `ctx` and `config`.
 * @example
 * export default definePlugin({
 *   name: 'greeter',
 *   inject: ['clock'],
 *   config: z.object({ greeting: z.string().default('hello') }),
 *   apply(ctx, config) { ctx.provide('greeter', { greet: (who: string) => `${config.greeting}, ${who}` }) },
 * })
 */
export function definePlugin<
  const I extends readonly ServiceName[] = [],
  S extends ConfigSchema | undefined = undefined,
>(definition: PluginDefinition<I, S>): PluginDefinition<I, S> {
  return definition
}

/** Turns a module export into a Plugin, or returns why it is not one. */
export function toPlugin(value: unknown): Plugin | string {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function'))
    return `the export is ${value === null ? 'null' : typeof value}`
  const v = value as Record<string, unknown>
  const apply = typeof value === 'function' ? (value as Plugin['apply']) : v.apply
  if (typeof apply !== 'function') return 'it has no apply function'
  const name = v.name
  if (typeof name !== 'string' || !name) return 'it has no name'
  const inject = v.inject ?? []
  if (!Array.isArray(inject) || inject.some((s) => typeof s !== 'string'))
    return 'inject must be an array of service names'
  const provides = v.provides ?? []
  if (!Array.isArray(provides)) return 'provides must be an array of service names'
  const uses = v.uses ?? []
  if (!Array.isArray(uses) || uses.some((s) => typeof s !== 'string'))
    return 'uses must be an array of built-in plugin names'
  const config = v.config
  if (
    config !== undefined &&
    typeof (config as ConfigSchema)?.['~standard']?.validate !== 'function'
  ) {
    return 'config must be a zod (or other Standard Schema) schema'
  }
  return {
    name,
    inject,
    provides,
    uses,
    config: config as ConfigSchema | undefined,
    exclusive: v.exclusive === true,
    runsProjectCode: v.runsProjectCode as Plugin['runsProjectCode'],
    sendsSecrets: v.sendsSecrets as Plugin['sendsSecrets'],
    ignoredUntilTrusted: v.ignoredUntilTrusted as Plugin['ignoredUntilTrusted'],
    apply: (ctx, cfg) => (apply as Plugin['apply']).call(value, ctx, cfg),
  }
}

/** Validates `raw` against the plugin's schema; returns the output or the issues with their paths. */
export function validateConfig(
  plugin: Plugin,
  raw: unknown,
): { value: unknown } | { issues: Array<{ message: string; path: PropertyKey[] }> } {
  if (!plugin.config) return { value: raw ?? {} }
  const result = plugin.config['~standard'].validate(raw ?? {})
  if (result instanceof Promise)
    return {
      issues: [
        { message: 'the config schema is async; yoke needs a synchronous schema', path: [] },
      ],
    }
  if (!result.issues) return { value: result.value }
  return {
    issues: result.issues.map((i) => ({
      message: i.message,
      path: (i.path ?? []).map((p) =>
        typeof p === 'object' && p !== null && 'key' in p ? p.key : p,
      ),
    })),
  }
}
