/**
 * @module kernel/context
 * The `ctx` a plugin's apply receives. Everything registered through it is an effect of the
 * current activation: labelled, disposed in reverse order on unload, and returned as a Disposer.
 */
import { resolve } from 'node:path'
import { messageOf, YokeError } from '../errors.ts'
import type { Cleanup, EffectScope } from './disposer.ts'
import { faultContext } from './faults.ts'
import { hookName, tapHook, type AnyHook } from './hooks.ts'
import { toPlugin, validateConfig } from './plugin.ts'
import { bindToContext, type ContextBound } from './services.ts'
import type {
  ChildHandle,
  Context,
  ControlHandler,
  FiberHost,
  FiberInfo,
  Logger,
  Plugin,
} from './types.ts'
import { DebouncedWatcher } from './watch.ts'

export type { ChildHandle, ChildOptions, Context, Logger, LogLevel } from './types.ts'

export function createContext(
  fiber: FiberInfo,
  host: FiberHost,
  scope: EffectScope,
  signal: AbortSignal,
): Context {
  const logger = Object.fromEntries(
    (['debug', 'info', 'warn', 'error'] as const).map((level) => [
      level,
      (message: string, error?: unknown) => host.log({ level, fiber, message, error }),
    ]),
  ) as Logger
  const counted = (kind: string, label: string, cleanup: Cleanup, hook?: AnyHook) => {
    host.count(kind, +1, hook)
    return scope.add(label, async () => {
      host.count(kind, -1, hook)
      await cleanup()
    })
  }
  const ctx: Context = {
    key: fiber.key,
    fiberId: fiber.id,
    signal,
    logger,
    hooks: host.hooks,
    runMode: host.runMode,
    command: host.command,
    provide(name, value) {
      return scope.add(`service ${name}`, host.provide(name, value, fiber))
    },
    get(name) {
      const provision = host.service(name)
      return provision && (bind(provision.value) as never)
    },
    tap(hook, name, fn, options) {
      // a tap runs in this instance's fault context, whoever calls the hook
      const untap = tapHook(
        hook,
        name,
        inContext(fn as (...a: unknown[]) => unknown) as typeof fn,
        options,
        {
          instance: fiber.key,
          plugin: fiber.plugin.name,
        },
      )
      return counted('tap', `tap ${name} on ${hookName(hook)}`, untap, hook)
    },
    effect: (label, cleanup) => scope.add(label, cleanup),
    watch(paths, handler, options) {
      const list = [paths].flat().map((p) => resolve(host.baseDir(), p))
      const onError = (err: unknown) =>
        host.fault(fiber, new Error(`a watch handler failed: ${messageOf(err)}`, { cause: err }))
      const watcher = new DebouncedWatcher(list, inContext(handler), onError, options)
      return counted('watcher', `watch ${list.join(', ')}`, () => watcher.close())
    },
    setTimeout(fn, ms) {
      const run = guard(fn, 'timeout')
      const timer = setTimeout(() => {
        void dispose()
        run()
      }, ms)
      const dispose = counted('timer', `timeout ${ms}ms`, () => clearTimeout(timer))
      return dispose
    },
    setInterval(fn, ms) {
      const timer = setInterval(guard(fn, 'interval'), ms)
      return counted('timer', `interval ${ms}ms`, () => clearInterval(timer))
    },
    instances: () => host.fibers,
    controls: () => host.controls(),
    ask: (name, request, timeoutMs) => host.ask(name, request, timeoutMs),
    control(name, handler) {
      const verb =
        name.startsWith(`${fiber.plugin.name}/`) && name.slice(fiber.plugin.name.length + 1)
      if (!verb || !/^[a-z][a-z0-9-]*$/.test(verb))
        throw new YokeError('CONTROL_NAME', { name, owner: fiber.label, plugin: fiber.plugin.name })
      return scope.add(
        `control ${name}`,
        host.control(name, handler as unknown as ControlHandler, fiber),
      )
    },
    keep: (name, init) => host.keep(fiber, name, init) as never,
    reloadGate: (gate) => scope.add(`reload gate ${gate.name}`, host.gates.add(gate)),
    plugin(definition, config, options = {}) {
      const plugin = typeof definition === 'string' ? named(definition) : toPlugin(definition)
      if (typeof plugin === 'string')
        throw new YokeError('PLUGIN_INVALID', {
          file: `the child plugin of ${fiber.label}`,
          reason: plugin,
        })
      const key = `${fiber.key}/${options.key ?? plugin.name}`
      const checked = validateConfig(plugin, config)
      if ('issues' in checked) {
        const reason = checked.issues
          .map((i) => `${i.path.join('.') || 'config'}: ${i.message}`)
          .join('; ')
        throw new YokeError(
          'CONFIG_INVALID',
          { instance: key, plugin: plugin.name, reason },
          { instance: key, plugin: plugin.name },
        )
      }
      const child = host.spawn(plugin, checked.value, { key, parent: fiber, site: fiber.site })
      const tree = () => [{ label: `${child.state} ${child.label}`, children: child.effects() }]
      const dispose = scope.add(`plugin ${child.key}`, () => host.remove(child), tree)
      return Object.assign(dispose, { fiber: child }) as ChildHandle
    },
  }
  // an injected service reads as a property (ctx.runtime). The value is the one this activation
  // started with: a replacement restarts the fiber, and disposers can still use it while unwinding.
  for (const name of fiber.plugin.inject) {
    const provision = host.service(name)
    let view: unknown
    Object.defineProperty(ctx, name, {
      enumerable: true,
      get() {
        if (!provision) throw new YokeError('SERVICE_UNAVAILABLE', { name, who: fiber.label })
        return (view ??= bind(provision.value))
      },
    })
  }
  return ctx

  /** A built-in plugin this one declared in `uses`, composed by name. */
  function named(name: string): Plugin {
    const plugin = fiber.plugin.uses.includes(name) ? host.pluginNamed(name) : undefined
    if (plugin) return plugin
    throw new YokeError('PLUGIN_INVALID', {
      file: `the child plugin "${name}" of ${fiber.label}`,
      reason: fiber.plugin.uses.includes(name)
        ? 'no built-in plugin has that name'
        : `plugin ${fiber.plugin.name} does not declare it in \`uses\``,
    })
  }

  /** A service that binds to its consumer gets this context; others are used as they are. */
  function bind(value: unknown) {
    const binder = (value as Partial<ContextBound> | null)?.[bindToContext]
    return typeof binder === 'function' ? binder.call(value, ctx) : value
  }

  /** A callback of this instance's: it runs in its fault context, and what it throws fails it. */
  function guard(fn: () => unknown, what: string) {
    const fail = (err: unknown) =>
      host.fault(fiber, new Error(`a ${what} callback threw: ${messageOf(err)}`, { cause: err }))
    return inContext(() => {
      try {
        const out = fn()
        if (out instanceof Promise) out.catch(fail)
      } catch (err) {
        fail(err)
      }
    })
  }

  function inContext<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
    return (...args) => faultContext.run({ fiber, host }, () => fn(...args))
  }
}
