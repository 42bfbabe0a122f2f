/**
 * @module kernel/plugin
 * The plugin contract. `definePlugin` only adds types: a plain object of the same shape, or a named
 * function `(ctx, config) => …`, is a plugin too, so a dependency-free .mjs file can be loaded by path.
 */
import type { Cleanup } from './disposer.ts'
import type { Context } from './context.ts'
import type { ServiceName, Services } from './services.ts'

/** The part of the Standard Schema interface yoke uses (zod 4, valibot and arktype implement it). */
export interface ConfigSchema<Output = unknown> {
  readonly '~standard': {
    validate(value: unknown): StandardResult<Output> | Promise<StandardResult<Output>>
    readonly types?: { readonly output: Output }
  }
}
type StandardResult<O> =
  | { value: O; issues?: undefined }
  | {
      issues: ReadonlyArray<{
        message: string
        path?: ReadonlyArray<PropertyKey | { key: PropertyKey }>
      }>
    }

type ConfigOf<S> = S extends ConfigSchema<infer O> ? O : Record<string, unknown>

/** The services an instance injected, typed; other services are read with `ctx.get()`. */
export type InjectedContext<I extends readonly string[]> = Context & {
  readonly [K in I[number]]: K extends keyof Services ? Services[K] : unknown
}

export type ApplyResult = void | Cleanup | Promise<void | Cleanup>

export interface PluginDefinition<
  I extends readonly ServiceName[] = [],
  S extends ConfigSchema | undefined = undefined,
> {
  /** the plugin's name; its instances are keyed in the preset */
  name: string
  /** services that must exist before apply runs; the instance restarts when one is replaced */
  inject?: I
  /** services this plugin provides: lets `yoke inspect` say who would satisfy a waiting instance */
  provides?: readonly string[]
  /** validates and defaults the instance's `config` */
  config?: S
  apply(ctx: InjectedContext<I>, config: ConfigOf<S>): ApplyResult
}

/** A plugin after normalisation: what the kernel runs. */
export interface Plugin {
  name: string
  inject: readonly string[]
  provides: readonly string[]
  config?: ConfigSchema
  apply(ctx: Context, config: unknown): ApplyResult
}

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
    config: config as ConfigSchema | undefined,
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
