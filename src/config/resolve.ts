/**
 * @module config/resolve
 * From layers to instances: merge, check, resolve each instance's `use`, import its module and
 * validate its `config` with the plugin's schema. Two kinds of trouble come out separately:
 * config errors (the whole candidate is invalid) and code errors (one module failed to load,
 * which affects only its instance). A `${VAR}` with no value inside one instance's entry is
 * neither: that instance waits (PLUGIN_WAITING, naming the variable) and the rest runs.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { parse } from 'yaml'
import { asYokeError, YokeError, type ErrorSite } from '../errors.ts'
import { BUILTIN_PRESETS } from '../roots.ts'
import { toPlugin, validateConfig, type Plugin } from '../kernel/plugin.ts'
import { runtimeSettings, type RuntimeSettings } from '../runtime/runtime.ts'
import type { MissingVar } from './interpolate.ts'
import { loadLayers, type LayerStack, type LoadOptions } from './layers.ts'
import { mergeLayers, type Merged } from './merge.ts'
import { baseOf, resolveUse, type LoadedModule, type ModuleLoader } from './modules.ts'
import { checkInstances, type InstanceEntry } from './shape.ts'
import { trustGate, type GatedInstance } from './trust.ts'
import { locate, pathKey } from './yaml.ts'

export interface InstanceSpec extends GatedInstance {
  enabled: boolean
  module?: LoadedModule
  /** the module file `use` resolved to (watched when local) */
  file?: string
  /** the module could not be imported: only this instance is affected */
  error?: YokeError
  /**
   * its entry has a `${VAR}` with no value: the instance is spawned with a stand-in of its plugin
   * (same name and provides) that waits with this error, and its config is not validated
   */
  waiting?: YokeError
}

export interface ResolvedConfig {
  stack: LayerStack
  merged: Merged
  instances: InstanceSpec[]
  /** the core runtime's settings (the `runtime:` key), validated */
  runtime: RuntimeSettings
  /** config errors: a candidate with any of these is not applied */
  errors: YokeError[]
}

export async function resolveConfig(
  options: LoadOptions,
  loader: ModuleLoader,
): Promise<ResolvedConfig> {
  loader.newPass()
  const stack = await loadLayers(options)
  const merged = mergeLayers(stack.errors.length ? [] : stack.layers)
  const errors = [...stack.errors]
  const plugins = (merged.value.plugins ?? {}) as Record<string, InstanceEntry>
  if (!errors.length)
    errors.push(...checkInstances(plugins, merged.origins, presetsDefining(stack)))
  const instances: InstanceSpec[] = []
  const runtime = validateRuntime(merged, errors)
  if (errors.length) return { stack, merged, instances, runtime, errors }
  const unset = unsetVars(stack.missing, merged)

  const pass: Pass = { loader, stack, merged, errors, untrusted: trustGate(options, stack, merged) }
  for (const [key, entry] of Object.entries(plugins)) {
    const site: ErrorSite = {
      ...merged.origins.get(pathKey(['plugins', key, 'use'])),
      instance: key,
    }
    const use = entry.use ?? ''
    const spec: InstanceSpec = {
      key,
      use,
      enabled: entry.enabled !== false,
      raw: entry.config ?? {},
      site,
    }
    instances.push(spec)
    await resolveInstance(spec, unset.get(key), pass)
  }
  return { stack, merged, instances, runtime, errors }
}

/** What one resolve pass hands each instance's resolution. */
interface Pass {
  loader: ModuleLoader
  stack: LayerStack
  merged: Merged
  /** config errors: the candidate is not applied */
  errors: YokeError[]
  untrusted: ReturnType<typeof trustGate>
}

/**
 * Resolves one instance: its module (or a stand-in that waits: for a variable, for trust), then
 * its config by the plugin's schema. `vars`: the `${VAR}`s of its entry that have no value.
 */
async function resolveInstance(spec: InstanceSpec, vars: MissingVar[] | undefined, pass: Pass) {
  const { loader, stack, errors, untrusted } = pass
  const { key, site } = spec
  const target = () => resolveUse(spec.use, baseOf(site.file, stack.projectDir), stack.projectDir)
  if (spec.enabled && vars?.some((v) => v.path[2] === 'use')) {
    // which module is not known yet: the stand-in is named by the use: as written
    spec.waiting = waitingError(key, spec.use, vars)
    spec.module = waitingModule(notLoaded(spec), spec)
    return
  }
  if (!spec.enabled) {
    if (!spec.use) return // disabled in a patch for presets that may not have it: fine
    // a disabled instance is not run, but knowing its plugin lets inspect name it as a provider
    // (not in an untrusted project: importing a module runs it)
    if (untrusted(spec, true)) return
    spec.module = await (async () => loader.load(target()))().catch(() => undefined)
    return
  }
  try {
    const resolved = target()
    spec.file = resolved.file
    spec.local = resolved.kind === 'local'
    // importing a module runs it: an untrusted project's own module waits unimported
    spec.waiting = untrusted(spec)
    if (spec.waiting) {
      spec.module = waitingModule(notLoaded(spec), spec)
      return
    }
    spec.module = await loader.load(resolved)
  } catch (err) {
    const error = asYokeError(err, 'PLUGIN_IMPORT_FAILED', { file: spec.use }, site)
    if (error.code === 'PLUGIN_NOT_FOUND')
      errors.push(error) // a typo in the config, not broken code
    else spec.error = error
    return
  }
  site.plugin = spec.module.plugin.name
  if (vars) {
    spec.waiting = waitingError(key, site.plugin, vars)
    spec.module = waitingModule(spec.module, spec)
    return
  }
  validateInstance(spec as InstanceSpec & { module: LoadedModule }, pass)
}

/** Validates an instance's config by its plugin's schema: CONFIG_INVALID at each issue's place. */
function validateInstance(spec: InstanceSpec & { module: LoadedModule }, pass: Pass) {
  const { key, site } = spec
  const result = validateConfig(spec.module.plugin, spec.raw)
  if ('value' in result) {
    spec.config = result.value
    spec.waiting = pass.untrusted(spec)
    if (spec.waiting) spec.module = waitingModule(spec.module, spec)
  } else {
    for (const issue of result.issues) {
      const path = ['plugins', key, 'config', ...issue.path.map(String)]
      const at = locate(pass.merged.origins, path) ?? locate(pass.merged.origins, ['plugins', key])
      const reason = `${issue.path.length ? `config.${issue.path.join('.')}: ` : ''}${issue.message}`
      pass.errors.push(
        new YokeError(
          'CONFIG_INVALID',
          { instance: key, plugin: site.plugin, reason },
          { ...at, instance: key, plugin: site.plugin },
        ),
      )
    }
  }
}

/**
 * The `${VAR}`s with no value that are still in the merged config, by instance key: one that a
 * higher layer replaced or deleted (its origin is another position now) no longer counts.
 */
function unsetVars(missing: MissingVar[], merged: Merged): Map<string, MissingVar[]> {
  const byKey = new Map<string, MissingVar[]>()
  for (const m of missing) {
    const origin = merged.origins.get(pathKey(m.path))
    const same =
      origin &&
      m.at &&
      origin.file === m.at.file &&
      origin.line === m.at.line &&
      origin.col === m.at.col
    if (!same) continue
    const key = String(m.path[1])
    byKey.set(key, [...(byKey.get(key) ?? []), m])
  }
  return byKey
}

/** PLUGIN_WAITING for an instance whose entry needs variables that are not set, at the first one. */
function waitingError(instance: string, plugin: string, vars: MissingVar[]): YokeError {
  const names = [...new Set(vars.map((v) => v.name))]
  const list = names.join(', ')
  const where = [...new Set(vars.map((v) => v.path.slice(2).join('.')))].join(', ')
  return new YokeError(
    'PLUGIN_WAITING',
    {
      instance,
      reason: `the environment variable${names.length > 1 ? 's' : ''} ${list} ${names.length > 1 ? 'are' : 'is'} not set (${where})`,
      what: `set ${list} in the environment yoke runs in (a running yoke dev sees a new variable only after a restart), or write a value or a default (\${${names[0]}:-…}) in the config: the reload that follows starts it`,
    },
    { ...vars[0]!.at, instance, plugin },
  )
}

/**
 * The module of a waiting instance: its plugin's name and provides (so `yoke inspect` can name it
 * as a provider), an apply that only waits, and a version of its own, so the instance counts as
 * changed (and restarts for real) once its variables are set or its entry is fixed.
 */
function waitingModule(loaded: LoadedModule, spec: InstanceSpec): LoadedModule {
  const error = spec.waiting!
  const plugin: Plugin = {
    ...loaded.plugin,
    inject: [],
    config: undefined,
    apply: () => {
      throw error
    },
  }
  return { ...loaded, plugin, version: `${loaded.version}\0waiting:${error.message}` }
}

/** The stand-in of a module that is not loaded (yet): named by the `use:` as written. */
const notLoaded = (spec: InstanceSpec): LoadedModule => ({
  plugin: toPlugin({ name: spec.use, apply: () => {} }) as Plugin,
  file: spec.use,
  version: 'unresolved',
  deps: [],
})

function validateRuntime(merged: Merged, errors: YokeError[]): RuntimeSettings {
  const result = runtimeSettings.safeParse(merged.value.runtime ?? {})
  if (result.success) return result.data
  for (const issue of result.error.issues) {
    const path = ['runtime', ...issue.path.map(String)]
    const reason = `${path.join('.')}: ${issue.message}`
    errors.push(
      new YokeError(
        'CONFIG_INVALID',
        { instance: 'yoke:runtime', plugin: 'runtime', reason },
        { ...locate(merged.origins, path), instance: 'yoke:runtime' },
      ),
    )
  }
  return runtimeSettings.parse({})
}

/** Which built-in preset not in effect defines `key` with a use:, as the end of a sentence. */
function presetsDefining(stack: LayerStack) {
  const inEffect = new Set(stack.layers.map((l) => l.file))
  const files = readdirSync(BUILTIN_PRESETS).map((f) => join(BUILTIN_PRESETS, f))
  return (key: string) => {
    const file = files.find(
      (f) => !inEffect.has(f) && parse(readFileSync(f, 'utf8'))?.plugins?.[key]?.use,
    )
    const name = file && basename(file, '.yaml')
    return name
      ? `; the preset "${name}" defines it: this layer was written for it, which is not in effect (add \`preset: ${name}\` to the project config, or pass --preset ${name})`
      : ''
  }
}
