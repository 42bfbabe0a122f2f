/**
 * @module kernel/context
 * The `ctx` a plugin's apply receives. Everything registered through it is an effect of the
 * current activation: labelled, disposed in reverse order on unload, and returned as a Disposer.
 */
import { YokeError } from '../errors.ts'
import type { Cleanup, Disposer, EffectScope } from './disposer.ts'
import type { Fiber } from './fiber.ts'
import type { Kernel } from './kernel.ts'
import { hookName, tapHook, type AnyHook, type TapFn, type TapOptions } from './hooks.ts'
import { toPlugin, validateConfig } from './plugin.ts'
import { bindToContext, type ContextBound, type ServiceName, type Services } from './services.ts'
import { DebouncedWatcher, type WatchHandler, type WatchOptions } from './watch.ts'

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'
export type Logger = Record<LogLevel, (message: string, error?: unknown) => void>

export interface ChildOptions {
  /** the child's key under its parent (default: the plugin's name) */
  key?: string
}

/** A child plugin's disposer, with the child's fiber for inspection and awaiting. */
export interface ChildHandle extends Disposer {
  readonly fiber: Fiber
}

export interface Context {
  /** the instance key from the preset */
  readonly key: string
  /** aborted when this activation ends: long setup work should stop on it */
  readonly signal: AbortSignal
  readonly logger: Logger
  /** the kernel's hooks: `state` (a fiber changed state) and `log` */
  readonly hooks: Kernel['hooks']
  /** Provides a service under `name`; a second provider of the same name is SERVICE_CONFLICT. */
  provide<K extends ServiceName>(
    name: K,
    value: K extends keyof Services ? Services[K] : unknown,
  ): Disposer
  /** Optional read of any service: undefined when it is absent or its provider is not active. */
  get<K extends ServiceName>(
    name: K,
  ): (K extends keyof Services ? Services[K] : unknown) | undefined
  /** Taps a tapable hook; the disposer takes the tap out for good. */
  tap<H extends AnyHook>(hook: H, name: string, fn: TapFn<H>, options?: TapOptions): Disposer
  /** Records any cleanup as an effect. */
  effect(label: string, cleanup: Cleanup): Disposer
  /** Watches files or directories (chokidar), calling `handler` with the debounced changes. */
  watch(paths: string | string[], handler: WatchHandler, options?: WatchOptions): Disposer
  setTimeout(fn: () => void, ms: number): Disposer
  setInterval(fn: () => void, ms: number): Disposer
  /** Runs a child plugin (any plugin shape) whose lifetime ends with this activation. */
  plugin(plugin: unknown, config?: unknown, options?: ChildOptions): ChildHandle
}

export function createContext(fiber: Fiber, scope: EffectScope, signal: AbortSignal): Context {
  const { kernel } = fiber
  const logger = Object.fromEntries(
    (['debug', 'info', 'warn', 'error'] as const).map((level) => [
      level,
      (message: string, error?: unknown) => kernel.log({ level, fiber, message, error }),
    ]),
  ) as Logger
  const counted = (kind: string, label: string, cleanup: Cleanup, hook?: AnyHook) => {
    kernel.count(kind, +1, hook)
    return scope.add(label, async () => {
      kernel.count(kind, -1, hook)
      await cleanup()
    })
  }
  const ctx: Context = {
    key: fiber.key,
    signal,
    logger,
    hooks: kernel.hooks,
    provide(name, value) {
      return scope.add(`service ${name}`, kernel.services.provide(name, value, fiber))
    },
    get(name) {
      const provision = kernel.services.get(name)
      return provision && (bind(provision.value) as never)
    },
    tap(hook, name, fn, options) {
      const untap = tapHook(hook, name, fn, options, {
        instance: fiber.key,
        plugin: fiber.plugin.name,
      })
      return counted('tap', `tap ${name} on ${hookName(hook)}`, untap, hook)
    },
    effect: (label, cleanup) => scope.add(label, cleanup),
    watch(paths, handler, options) {
      const list = [paths].flat()
      const onError = (err: unknown) =>
        logger.error(`watch handler failed: ${(err as Error)?.message ?? err}`, err)
      const watcher = new DebouncedWatcher(list, handler, onError, options)
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
    plugin(definition, config, options = {}) {
      const plugin = toPlugin(definition)
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
      const child = kernel.spawn(plugin, checked.value, { key, parent: fiber, site: fiber.site })
      const tree = () => [{ label: `${child.state} ${child.label}`, children: child.effects() }]
      const dispose = scope.add(`plugin ${child.key}`, () => kernel.remove(child), tree)
      return Object.assign(dispose, { fiber: child }) as ChildHandle
    },
  }
  // an injected service reads as a property (ctx.runtime). The value is the one this activation
  // started with: a replacement restarts the fiber, and disposers can still use it while unwinding.
  for (const name of fiber.plugin.inject) {
    const provision = kernel.services.get(name)
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

  /** A service that binds to its consumer gets this context; others are used as they are. */
  function bind(value: unknown) {
    const binder = (value as Partial<ContextBound> | null)?.[bindToContext]
    return typeof binder === 'function' ? binder.call(value, ctx) : value
  }

  function guard(fn: () => void, what: string) {
    return () => {
      try {
        fn()
      } catch (err) {
        logger.error(`${what} callback threw: ${(err as Error)?.message ?? err}`, err)
      }
    }
  }
}
