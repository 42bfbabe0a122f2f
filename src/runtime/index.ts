/**
 * @module runtime
 * The core runtime plugin: provides `runtime` (the tool pipeline), `approval` and `tasks`. Each
 * consuming instance gets a view of them in which every registration (a tool, a guard, a scope, a
 * bridge) is one of its own effects.
 */
import { definePlugin } from '../kernel/plugin.ts'
import { toDisposer, type Disposer } from '../kernel/disposer.ts'
import { faultContext } from '../kernel/faults.ts'
import { bindToContext } from '../kernel/services.ts'
import type { ApprovalBridge, Approvals, Question, QuestionAnswer } from './approval.ts'
import { GLOBAL, type Guard, type Mask } from './registry.ts'
import {
  runtimeSettings,
  ToolRuntime,
  type CallOptions,
  type Refused,
  type RuntimeSettings,
} from './runtime.ts'
import type { Tasks } from './tasks.ts'
import type { RegisteredTool, ToolDefinition, ToolResult } from './types.ts'

export type Track = (label: string, cleanup: () => void | Promise<void>) => Disposer
type Consumer = { key: string; effect: Track; fiberId?: number }

/** What registering code sees of one layer: the global layer or a scope. */
export interface ToolLayer {
  register(def: ToolDefinition): Disposer
  /**
   * Registers many tools at once (an MCP server's thousands): in slices that let the event loop
   * run, one change announcement per slice, one effect for them all. A definition `register` would
   * refuse goes to `refused` (without it, the first one rejects and none stays registered).
   */
  registerAll(defs: Iterable<ToolDefinition>, refused?: Refused): Promise<Disposer>
  list(): RegisteredTool[]
  guard(fn: Guard): Disposer
  call(name: string, args?: unknown, options?: CallOptions): Promise<ToolResult>
}

export interface ScopeHandle extends ToolLayer {
  readonly key: string
  /** masks global tools for this scope with allow/deny globs */
  restrict(mask: Mask): Disposer
  dispose: Disposer
}

/** The `runtime` service as a plugin (or the CLI) sees it. */
export interface RuntimeApi extends ToolLayer {
  readonly hooks: ToolRuntime['hooks']
  readonly settings: RuntimeSettings
  /** creates a scope layer (per agent, per session) under `parent` (default global) */
  scope(key: string, options?: { parent?: string; subagent?: boolean }): ScopeHandle
}

export interface ApprovalApi {
  register(bridge: ApprovalBridge): Disposer
  readonly bridges: string[]
  /** a question for the person behind a call (see Approvals.question); never throws */
  question(question: Question): Promise<QuestionAnswer & { by?: string; why?: string }>
  /** asks as a call that needs approval does, in `request.call`'s scope (no preExecute taps) */
  request: Approvals['request']
}

declare module '../kernel/services.ts' {
  interface Services {
    runtime: RuntimeApi
    approval: ApprovalApi
    tasks: Tasks
  }
}

/** For code that is not a plugin (the CLI, tests, embedders): registrations are plain disposers. */
export const hostTrack: Track = (_label, cleanup) => toDisposer(cleanup)

export function runtimeView(
  rt: ToolRuntime,
  owner: string,
  track: Track,
  fiber?: number,
): RuntimeApi {
  // a tool's body runs in its owner's fault context (kernel/faults), whoever calls it
  const owned = faultContext.getStore()
  const inOwner = (def: ToolDefinition): ToolDefinition =>
    owned && typeof def?.execute === 'function'
      ? { ...def, execute: (args, call) => faultContext.run(owned, () => def.execute(args, call)) }
      : def
  const layer = (scope: string): ToolLayer => {
    const where = scope === GLOBAL ? '' : ` in ${scope}`
    return {
      register: (def) =>
        track(`tool ${def?.name}${where}`, rt.register(inOwner(def), owner, scope, fiber)),
      registerAll: async (defs, refused) => {
        const owned = [...defs].map(inOwner)
        const remove = await rt.registerAll(owned, { owner, scope, fiber, refused })
        return track(`${owned.length} tools${where}`, remove)
      },
      list: () => rt.list(scope),
      guard: (fn) => track(`guard${where}`, rt.guard(fn, scope)),
      // the global layer calls into the scope the options name (a scope handle, into its own)
      call: (name, args, options) =>
        rt.call(name, args, {
          caller: owner,
          ...options,
          scope: scope === GLOBAL ? (options?.scope ?? GLOBAL) : scope,
        }),
    }
  }
  return {
    ...layer(GLOBAL),
    hooks: rt.hooks,
    get settings() {
      return rt.settings
    },
    scope(key, options) {
      const dispose = track(`scope ${key}`, rt.registry.createScope(key, options))
      return {
        key,
        ...layer(key),
        restrict: (mask) => track(`restrict ${key}`, rt.registry.restrict(key, mask)),
        dispose,
      }
    },
  }
}

export function approvalView(rt: ToolRuntime, track: Track): ApprovalApi {
  return {
    register: (bridge) => track(`approval bridge ${bridge.name}`, rt.approvals.register(bridge)),
    get bridges() {
      return rt.approvals.bridges
    },
    question: (question) => rt.approvals.question(question),
    request: (request) => rt.approvals.request(request),
  }
}

/** The core instance (`yoke:runtime`) every composition starts with. */
export const runtimePlugin = definePlugin({
  name: 'runtime',
  provides: ['runtime', 'approval', 'tasks'],
  config: runtimeSettings,
  apply(ctx, settings) {
    const rt = new ToolRuntime(settings, (message, err) => ctx.logger.error(message, err))
    // the raw values serve host code; each consuming instance gets its own view (bindToContext)
    ctx.provide(
      'runtime',
      Object.assign(rt, {
        [bindToContext]: (c: Consumer) => runtimeView(rt, c.key, c.effect, c.fiberId),
      }) as unknown as RuntimeApi,
    )
    ctx.provide(
      'approval',
      Object.assign(approvalView(rt, hostTrack), {
        [bindToContext]: (c: Consumer) => approvalView(rt, c.effect),
      }),
    )
    ctx.provide('tasks', rt.tasks)
  },
})
