/**
 * @module kernel/faults
 * A plugin's failure is that plugin's. Each instance's apply runs in an async context that names
 * it, and so does everything apply starts (timers, promise chains, callbacks registered through
 * `ctx`); a module's import runs in one that names its file. With the process guard installed
 * (the CLI installs it; an embedding application calls `guardProcess()`), a stray rejection or
 * exception from such a context fails that instance alone, and `process.exit()` called from one
 * throws instead of ending yoke. What runs in no plugin's context (a plain emitter callback from
 * a library's own socket, say) cannot be blamed on one: it is logged, and yoke keeps running.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { messageOf, YokeError } from '../errors.ts'
import type { FiberHost, FiberInfo } from './types.ts'

export type FaultContext = { fiber: FiberInfo; host: FiberHost } | { module: string }

/**
 * The plugin code that is running now: an instance, or a module being imported. Its `run` enters
 * the context only while the process guard is installed: an AsyncLocalStorage turns on promise
 * hooks for every promise in the process (~0.2 µs each on Node 20, more than the whole pipeline
 * of a tool call), and without the guard nothing reads the context. Install the guard before
 * composing: what started before it carries no context.
 */
class GuardedContext extends AsyncLocalStorage<FaultContext> {
  override run<R, A extends unknown[]>(
    store: FaultContext,
    callback: (...args: A) => R,
    ...args: A
  ): R {
    return installed ? super.run(store, callback, ...args) : callback(...args)
  }
}
export const faultContext: AsyncLocalStorage<FaultContext> = new GuardedContext()

/** Raised in place of process.exit() called from plugin code. */
export class PluginExit extends Error {}

let installed: (() => void) | undefined

/**
 * Catches stray rejections and exceptions and blames the instance whose context they come from;
 * turns process.exit() from plugin code into an error. Idempotent; returns the uninstaller.
 */
export function guardProcess(
  report: (message: string, err: unknown) => void = (message) =>
    process.stderr.write(`yoke: ${message}\n`),
): () => void {
  if (installed) return installed
  const exit = process.exit
  const onFault = (err: unknown) => {
    const where = faultContext.getStore()
    if (where && 'fiber' in where) return where.host.fault(where.fiber, err)
    report(
      `${where ? `while importing ${where.module}: ` : ''}an error no plugin instance can be blamed for (yoke keeps running): ${messageOf(err)}`,
      err,
    )
  }
  process.on('unhandledRejection', onFault)
  process.on('uncaughtException', onFault)
  process.exit = ((code?: number | string | null) => {
    const where = faultContext.getStore()
    if (!where) return exit.call(process, code ?? undefined)
    const who = 'fiber' in where ? where.fiber.label : where.module
    throw new PluginExit(
      `${who} called process.exit(${code ?? ''}); yoke does not end for a plugin`,
    )
  }) as typeof process.exit
  installed = () => {
    process.off('unhandledRejection', onFault)
    process.off('uncaughtException', onFault)
    process.exit = exit
    installed = undefined
    faultContext.disable() // the promise hooks go with the guard
  }
  return installed
}

/** The error an instance fails with when something it started threw after apply. */
export function faultError(fiber: FiberInfo, err: unknown): YokeError {
  return new YokeError(
    'PLUGIN_FAULT',
    { instance: fiber.key, plugin: fiber.plugin.name, reason: messageOf(err) },
    { ...fiber.site, instance: fiber.key, plugin: fiber.plugin.name, cause: err },
  )
}
