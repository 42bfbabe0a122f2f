/**
 * @module runtime/runtime
 * ToolRuntime runs every tool call, whatever its source, through one pipeline:
 *   1 lookup + validate → 2 preExecute → 3 approval → 4 guards → 5 around → 6 body
 *   → 7 postExecute → 8 finalize (limits, freeze) → 9 result.
 * `call()` always resolves to exactly one frozen ToolResult; nothing a tool or a tap does
 * throws into the caller. Decisions only tighten: once a tap denies (or blocks), later taps
 * are skipped, and `ask` can become `deny` but never `allow`.
 */
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AsyncParallelHook, AsyncSeriesWaterfallHook, SyncHook, SyncWaterfallHook } from 'tapable'
import { z } from 'zod'
import { YokeError, type ErrorCode } from '../errors.ts'
import { defineHooks } from '../kernel/hooks.ts'
import { Approvals } from './approval.ts'
import { ConcurrencyGate, limitOutput } from './limits.ts'
import { GLOBAL, ToolRegistry, type Guard, type Mask } from './registry.ts'
import { Tasks } from './tasks.ts'
import type { CallContext, ContentPart, Executor, PostDecision, PreDecision, ProgressEvent, RegisteredTool, ResultStatus, ToolCall, ToolDefinition, ToolOutput, ToolResult } from './types.ts'

export const runtimeSettings = z
  .object({
    /** default per-call timeout */
    timeoutMs: z.number().int().positive().default(300_000),
    /** how long calls on an unloaded tool may finish before they end UNLOADED */
    unloadGraceMs: z.number().int().nonnegative().default(2_000),
    maxConcurrent: z.number().int().positive().default(16),
    perSource: z.record(z.string(), z.number().int().positive()).default({}),
    maxOutputBytes: z.number().int().positive().default(256 * 1024),
    maxOutputTokens: z.number().int().positive().default(25_000),
    previewBytes: z.number().int().positive().default(8 * 1024),
    spillDir: z.string().default(join(tmpdir(), `yoke-spill-${process.getuid?.() ?? 'user'}`)),
  })
  .strict()
export type RuntimeSettings = z.output<typeof runtimeSettings>

export interface ToolChange {
  added: string[]
  removed: string[]
  scope: string
}

export interface CallOptions {
  scope?: string
  signal?: AbortSignal
  /** who is calling: an agent, `cli`, an MCP client */
  caller?: string
  onProgress?: (event: ProgressEvent) => void
}

const ORDER = { allow: 0, ask: 1, deny: 2 } as const
let nextCall = 0

export class ToolRuntime {
  readonly hooks = defineHooks('runtime', {
    preExecute: new AsyncSeriesWaterfallHook<[PreDecision, ToolCall]>(['decision', 'call']),
    around: new AsyncSeriesWaterfallHook<[Executor, ToolCall]>(['executor', 'call']),
    postExecute: new AsyncSeriesWaterfallHook<[PostDecision, ToolCall, ToolResult]>(['decision', 'call', 'result']),
    result: new AsyncParallelHook<[ToolCall, ToolResult]>(['call', 'result']),
    progress: new SyncHook<[ToolCall, ProgressEvent]>(['call', 'event']),
    change: new SyncHook<[ToolChange]>(['change']),
    /** filters the tools a scope lists (a policy hides what it denies outright) */
    visible: new SyncWaterfallHook<[RegisteredTool[], string]>(['tools', 'scope']),
  })
  readonly approvals = new Approvals()
  readonly tasks = new Tasks()
  readonly registry = new ToolRegistry((added, removed, scope) => this.hooks.change.call({ added, removed, scope }))
  readonly gate: ConcurrencyGate
  settings: RuntimeSettings
  /** in-flight calls per tool registration, so unloading can wait for them, then end them */
  readonly #inFlight = new Map<number, Set<{ done: Promise<unknown>; unload: () => void }>>()

  constructor(settings: Partial<RuntimeSettings> = {}, private readonly onError: (message: string, err: unknown) => void = () => {}) {
    this.settings = runtimeSettings.parse(settings)
    this.gate = new ConcurrencyGate(this.settings)
    // decisions only tighten: a tap is skipped once the decision is deny (or block)
    this.hooks.preExecute.intercept({
      register: (tap) => ({ ...tap, fn: tighten(tap.fn as (d: PreDecision, c: ToolCall) => Promise<PreDecision | undefined>) }),
    })
    this.hooks.postExecute.intercept({
      register: (tap) => {
        const fn = tap.fn as (d: PostDecision, ...rest: unknown[]) => Promise<PostDecision | undefined>
        return { ...tap, fn: async (d: PostDecision, ...rest: unknown[]) => (d.kind === 'block' ? d : fn(d, ...rest)) }
      },
    })
  }

  configure(settings: Partial<RuntimeSettings>): void {
    this.settings = runtimeSettings.parse(settings)
    this.gate.limits = this.settings
  }

  /**
   * Registers a tool in a layer. The cleanup waits (up to unloadGraceMs) for calls in flight,
   * then ends the rest with UNLOADED and forgets the tool's approval grants.
   */
  register(def: ToolDefinition, owner = 'host', scope = GLOBAL): () => Promise<void> {
    const { tool, remove } = this.registry.register(def, owner, scope)
    return async () => {
      remove()
      this.approvals.forget(tool.id)
      const calls = [...(this.#inFlight.get(tool.id) ?? [])]
      if (calls.length) {
        let timer: NodeJS.Timeout | undefined
        const grace = new Promise((r) => (timer = setTimeout(r, this.settings.unloadGraceMs)))
        await Promise.race([Promise.allSettled(calls.map((c) => c.done)), grace])
        clearTimeout(timer)
        for (const c of calls) c.unload()
      }
    }
  }

  list(scope = GLOBAL): RegisteredTool[] {
    return this.hooks.visible.call(this.registry.list(scope), scope)
  }

  guard(fn: Guard, scope = GLOBAL): () => void {
    return this.registry.guard(fn, scope)
  }

  restrict(scope: string, mask: Mask): () => void {
    return this.registry.restrict(scope, mask)
  }

  /** Runs one call through the whole pipeline. Always resolves, to exactly one frozen result. */
  async call(name: string, args: unknown = {}, options: CallOptions = {}): Promise<ToolResult> {
    const started = performance.now()
    const scope = options.scope ?? GLOBAL
    const tool = this.registry.resolve(name, scope)
    const cloned = cloneArgs(args)
    const call: ToolCall = Object.freeze({ id: `call_${++nextCall}`, name, args: freezeDeep(cloned ?? {}), scope, caller: options.caller ?? 'host', tool })
    const finish = async (partial: Partial<ToolResult> & { status: ResultStatus }) => {
      const result = freezeDeep({ callId: call.id, tool: name, ok: partial.status === 'ok', content: [], ...partial, durationMs: Math.round(performance.now() - started) }) as ToolResult
      await this.hooks.result.promise(call, result).catch((err) => this.onError(`a result hook failed for ${name}`, err))
      return result
    }
    const fail = (status: Exclude<ResultStatus, 'ok'>, params: Record<string, unknown>, err?: unknown) => {
      const error = err instanceof YokeError && status === 'HOOK_FAILED' ? err : new YokeError(status as ErrorCode, { name, scope, ...params })
      const text = `${error.code}: ${error.message}\nhint: ${error.hint}`
      return finish({ status, content: [{ type: 'text', text }], error: { code: error.code, message: error.message, hint: error.hint } })
    }
    try {
      // 1 lookup and validation
      if (!tool) return await fail('UNKNOWN_TOOL', {})
      if (cloned === undefined) return await fail('INVALID_ARGS', { reason: 'the arguments are not JSON data' })
      if (!tool.validate(call.args)) return await fail('INVALID_ARGS', { reason: ajvReason(tool.validate.errors) })
      // 2 pre-execute, 3 approval, 4 guards
      const decision = await this.hooks.preExecute.promise({ kind: 'allow' }, call)
      if (decision.kind === 'deny') return await fail('DENIED', { reason: decision.reason })
      if (decision.kind === 'ask') {
        const outcome = await this.approvals.request({ call, reason: decision.reason, signal: options.signal ?? new AbortController().signal })
        if (!outcome.allowed) return await fail('DENIED', { reason: `approval needed (${decision.reason}); ${outcome.why}` })
      }
      for (const guard of this.registry.guardsFor(scope)) {
        const denial = guard(call)
        if (denial) return await fail('DENIED', { reason: denial })
      }
      if (tool.spawnOnly && !this.registry.isSubagent(scope)) {
        const task = this.tasks.start(call, (signal) => this.#execute(call, tool, { ...options, signal }, started))
        const text = `${tool.spawnOnlyMessage ?? `${name} runs in the background`} (task ${task.id})`
        return await finish({ status: 'ok', content: [{ type: 'text', text }], task: task.id })
      }
      const result = await this.#execute(call, tool, options, started)
      return await finish(result)
    } catch (err) {
      // only a throwing tap gets here: fail closed
      return fail('HOOK_FAILED', { tap: '?', hook: '?', reason: (err as Error)?.message }, err)
    }
  }

  /** Stages 5-8: run the body under the gate, the timeout and the signals; post-execute; limits. */
  async #execute(call: ToolCall, tool: RegisteredTool, options: CallOptions, started: number): Promise<Partial<ToolResult> & { status: ResultStatus }> {
    const ending = new AbortController()
    let why: 'TIMEOUT' | 'UNLOADED' | undefined
    const end = (reason: 'TIMEOUT' | 'UNLOADED') => {
      why ??= reason
      ending.abort(new YokeError(reason, { name: call.name, ms: timeoutMs }))
    }
    const timeoutMs = tool.timeoutMs ?? this.settings.timeoutMs
    const signal = options.signal ? AbortSignal.any([options.signal, ending.signal]) : ending.signal
    const timer = setTimeout(() => end('TIMEOUT'), timeoutMs)
    const ctx: CallContext = {
      signal,
      call,
      progress: (event) => {
        this.hooks.progress.call(call, event)
        options.onProgress?.(event)
      },
    }
    const flight = { done: Promise.resolve() as Promise<unknown>, unload: () => end('UNLOADED') }
    const flights = this.#inFlight.get(tool.id) ?? new Set()
    this.#inFlight.set(tool.id, flights.add(flight))
    const aborted = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason)
      signal.addEventListener('abort', () => reject(signal.reason), { once: true })
    })
    aborted.catch(() => {}) // an abort after the call ended rejects nobody
    let output: ToolOutput
    try {
      const body: Executor = async (c, cctx) => tool.execute(c.args as Record<string, unknown>, cctx)
      const executor = await this.hooks.around.promise(body, call)
      const running = this.gate.run(tool, signal, () => executor(call, ctx))
      flight.done = running.catch(() => {})
      output = await Promise.race([running, aborted]) // a body that ignores its signal still ends here
    } catch (err) {
      if (err instanceof YokeError && err.code === 'HOOK_FAILED') throw err
      const status = signal.aborted ? (why ?? 'ABORTED') : 'EXEC_FAILED'
      const error = new YokeError(status, { name: call.name, ms: timeoutMs, reason: (err as Error)?.message ?? String(err) }, { cause: err })
      return { status, content: [{ type: 'text', text: `${status}: ${error.message}\nhint: ${error.hint}` }], error: { code: status, message: error.message, hint: error.hint } }
    } finally {
      clearTimeout(timer)
      flights.delete(flight)
      if (!flights.size) this.#inFlight.delete(tool.id)
    }
    // 7 post-execute
    let result = normalize(output, call.name)
    const post = await this.hooks.postExecute.promise({ kind: 'accept' }, call, freezeDeep({ callId: call.id, tool: call.name, ...result, durationMs: Math.round(performance.now() - started) }) as ToolResult)
    if (post.kind === 'block') {
      const error = new YokeError('BLOCKED', { name: call.name, reason: post.reason })
      return { status: 'BLOCKED', content: [{ type: 'text', text: `BLOCKED: ${error.message}` }], error: { code: 'BLOCKED', message: error.message, hint: error.hint } }
    }
    if (post.kind === 'replace') result = normalize(post.result, call.name)
    // 8 finalize: output limits (freezing happens in finish)
    return { ...result, ...limitOutput(result.content as ContentPart[], result.structured, this.settings, call.name) }
  }
}

/** Tool output → status, content and structured value. */
function normalize(output: ToolOutput, name: string): Partial<ToolResult> & { status: ResultStatus } {
  if (typeof output === 'string') return { status: 'ok', content: [{ type: 'text', text: output }] }
  if (output && typeof output === 'object' && Array.isArray((output as { content?: unknown }).content)) {
    const o = output as { content: ContentPart[]; structured?: unknown; isError?: boolean }
    if (!o.isError) return { status: 'ok', content: o.content, structured: o.structured }
    const error = new YokeError('TOOL_ERROR', { name })
    return { status: 'TOOL_ERROR', content: o.content, structured: o.structured, error: { code: error.code, message: error.message, hint: error.hint } }
  }
  if (output === undefined) return { status: 'ok', content: [] }
  return { status: 'ok', content: [{ type: 'text', text: JSON.stringify(output) }], structured: output }
}

function tighten(fn: (d: PreDecision, c: ToolCall) => Promise<PreDecision | undefined>) {
  return async (decision: PreDecision, call: ToolCall) => {
    if (decision.kind === 'deny') return decision
    const next = await fn(decision, call)
    return next && ORDER[next.kind] >= ORDER[decision.kind] ? next : decision
  }
}

function ajvReason(errors: Array<{ instancePath: string; message?: string }> | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ') || 'invalid'
}

/** A frozen copy is what taps and the body see; undefined when the arguments are not JSON data. */
function cloneArgs(value: unknown): Record<string, unknown> | undefined {
  try {
    return JSON.parse(JSON.stringify(value ?? {}))
  } catch {
    return undefined
  }
}

export function freezeDeep<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const v of Object.values(value)) freezeDeep(v)
  }
  return value
}
