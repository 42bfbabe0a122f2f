/**
 * @module kernel/hooks
 * Tapping tapable hooks with a way back. tapable has no untap and compiles taps into a function,
 * so removal splices the tap out, resets the compiled call, and also flips a flag the wrapper
 * checks: a call already in flight when the tap was removed skips it too.
 */
import { messageOf, YokeError, type ErrorSite } from '../errors.ts'
import type { Cleanup } from './disposer.ts'

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-function-type --
   tapable's hooks are generic in their tap signatures: matching any of them needs `any` here */

/** Any tapable hook: its tap's arguments and return type are read off its `tap` method. */
export interface AnyHook {
  name: string | undefined
  taps: Array<{ name: string; fn: Function }>
  tap(options: any, fn: (...args: any[]) => any): void
}

export type HookArgs<H> = H extends { tap(o: any, fn: (...args: infer A) => any): void } ? A : never
export type HookReturn<H> = H extends { tap(o: any, fn: (...args: any[]) => infer R): void }
  ? R
  : never
/* eslint-enable @typescript-eslint/no-explicit-any */

/** A tap's handler: async hooks may return a promise; returning undefined keeps a waterfall's value. */
export type TapFn<H> = (
  ...args: HookArgs<H>
) => HookReturn<H> | undefined | Promise<HookReturn<H> | undefined>

export interface TapOptions {
  /** lower runs first (tapable's stage) */
  stage?: number
  /** run before the taps with these names */
  before?: string | string[]
}

const hookNames = new WeakMap<object, string>()
/** Marks our taps so removal finds them even after a `register` interceptor replaced the tap object. */
const TAP_ID = Symbol('yoke.tap')
let nextTap = 0

/** Gives hooks their owner-qualified names (`runtime.preExecute`) and freezes the table. */
export function defineHooks<T extends Record<string, AnyHook>>(
  owner: string,
  hooks: T,
): Readonly<T> {
  for (const [key, hook] of Object.entries(hooks)) hookNames.set(hook, `${owner}.${key}`)
  return Object.freeze(hooks)
}

export function hookName(hook: AnyHook): string {
  return hookNames.get(hook) ?? hook.name ?? 'anonymous hook'
}

/**
 * Calls a SyncHook whose taps only observe (a state change, a log record, a finished task): a tap
 * that throws is handed to `report` with `a <hook> tap failed: <why>`, and the caller goes on.
 */
export function notify<A extends unknown[]>(
  hook: { call(...args: A): unknown },
  args: A,
  report: (message: string, err: unknown) => void,
): void {
  try {
    hook.call(...args)
  } catch (err) {
    report(`a ${hookName(hook as unknown as AnyHook)} tap failed: ${messageOf(err)}`, err)
  }
}

function isSyncHook(hook: AnyHook): boolean {
  return hook.constructor.name.startsWith('Sync')
}

/**
 * Taps `hook` under `name` and returns the cleanup that removes the tap for good.
 * Errors the handler throws are wrapped in HOOK_FAILED naming the tap and hook.
 */
export function tapHook<H extends AnyHook>(
  hook: H,
  name: string,
  fn: TapFn<H>,
  options: TapOptions = {},
  site: ErrorSite = {},
): Cleanup {
  if (!name) throw new TypeError('a tap needs a name: the plugin instance it belongs to')
  let live = true
  const fail = (err: unknown) => {
    if (err instanceof YokeError && err.code === 'HOOK_FAILED') return err
    const hook_ = hookName(hook)
    return new YokeError(
      'HOOK_FAILED',
      { tap: name, hook: hook_, reason: messageOf(err) },
      { ...site, hook: hook_, cause: err },
    )
  }
  // a removed tap answers undefined: "no opinion" for waterfall, bail and loop hooks alike
  const wrapped = isSyncHook(hook)
    ? (...args: unknown[]) => {
        if (!live) return undefined
        try {
          return (fn as Function)(...args)
        } catch (err) {
          throw fail(err)
        }
      }
    : (...args: unknown[]) => {
        if (!live) return Promise.resolve(undefined)
        try {
          const out = (fn as Function)(...args)
          return out instanceof Promise ? out.catch(rethrow) : Promise.resolve(out)
        } catch (err) {
          return Promise.reject(fail(err))
        }
      }
  const rethrow = (err: unknown) => {
    throw fail(err)
  }
  const id = ++nextTap
  const direct: DirectTap = { fn: fn as DirectTap['fn'], fail, live: true }
  const tapOptions = {
    name,
    stage: options.stage,
    before: options.before,
    [TAP_ID]: id,
    [DIRECT]: direct,
  }
  if (isSyncHook(hook)) hook.tap(tapOptions, wrapped)
  else (hook as unknown as { tapPromise: AnyHook['tap'] }).tapPromise(tapOptions, wrapped)
  return () => {
    live = direct.live = false
    const index = hook.taps.findIndex(
      (t) => (t as { [TAP_ID]?: number })[TAP_ID] === id || t.fn === wrapped,
    )
    if (index >= 0) hook.taps.splice(index, 1)
    ;(hook as unknown as { _resetCompilation(): void })._resetCompilation()
  }
}

/**
 * A tap as a caller that runs taps itself runs it (the runtime's pipeline, where tapable's chain of
 * promises per tap is the cost): tapHook's handler without its wrapper, the error it fails with,
 * and whether it is still on. A tap made without tapHook runs as tapable would run it.
 */
export interface DirectTap {
  readonly fn: (...args: any[]) => unknown // eslint-disable-line @typescript-eslint/no-explicit-any
  readonly fail: (err: unknown) => unknown
  live: boolean
}

const DIRECT = Symbol('yoke.direct')

export function directTap(tap: AnyHook['taps'][number], hook: AnyHook): DirectTap {
  const t = tap as typeof tap & { [DIRECT]?: DirectTap; type?: string }
  if (t[DIRECT]) return t[DIRECT]
  const { fn } = tap
  // a callback-style tap (tapAsync) takes its callback after the hook's own arguments
  const arity = (hook as { _args?: unknown[] })._args?.length ?? 0
  const call =
    t.type === 'async'
      ? (...args: unknown[]) =>
          new Promise((resolve, reject) =>
            fn(...args.slice(0, arity), (err: unknown, value: unknown) =>
              err ? reject(err) : resolve(value),
            ),
          )
      : (fn as DirectTap['fn'])
  return (t[DIRECT] = { fn: call, fail: (err) => err, live: true })
}

/** The taps currently on a hook, in call order. */
export function tapsOf(hook: AnyHook): string[] {
  return hook.taps.map((t) => t.name)
}
