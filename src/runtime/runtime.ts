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
import { settledWithin } from '../kernel/disposer.ts'
import { defineHooks } from '../kernel/hooks.ts'
import { Approvals } from './approval.ts'
import { Deadlines, Flight } from './flight.ts'
import { ConcurrencyGate, limitOutput } from './limits.ts'
import { GLOBAL, ToolRegistry, type Guard, type Mask } from './registry.ts'
import { Tasks } from './tasks.ts'
import type { ContentPart, Executor, PostDecision, PreDecision, ProgressEvent, RegisteredTool, ResultStatus, ToolCall, ToolDefinition, ToolOutput, ToolResult } from './types.ts'

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
  /** the calls in flight (with their deadlines), so unloading a tool can wait for its calls, then end them */
  readonly #deadlines = new Deadlines()

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
        return { ...tap, fn: (d: PostDecision, ...rest: unknown[]) => (d.kind === 'block' ? Promise.resolve(d) : fn(d, ...rest)) }
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
      const calls: Flight[] = []
      this.#deadlines.forEach((f) => f.call.tool === tool && calls.push(f))
      await settledWithin(Promise.all(calls.map((c) => c.done)), this.settings.unloadGraceMs)
      for (const c of calls) c.end('UNLOADED')
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
    let outcome: Outcome
    try {
      outcome = await this.#stages(call, cloned !== undefined, options, started)
    } catch (err) {
      outcome = failure(call, 'HOOK_FAILED', {}, err) // only a throwing tap gets here: fail closed
    }
    const result = freezeDeep({ callId: call.id, tool: name, ok: outcome.status === 'ok', content: [], ...outcome, durationMs: Math.round(performance.now() - started) }) as ToolResult
    if (this.hooks.result.taps.length) await this.hooks.result.promise(call, result).catch((err) => this.onError(`a result hook failed for ${name}`, err))
    return result
  }

  /** Stages 1-4, then the body (here or in the background). */
  async #stages(call: ToolCall, isJson: boolean, options: CallOptions, started: number): Promise<Outcome> {
    const { tool, scope } = call
    if (!tool) return failure(call, 'UNKNOWN_TOOL', {})
    if (!isJson) return failure(call, 'INVALID_ARGS', { reason: 'the arguments are not JSON data' })
    if (!tool.validate(call.args)) return failure(call, 'INVALID_ARGS', { reason: ajvReason(tool.validate.errors) })
    const decision = this.hooks.preExecute.taps.length ? await this.hooks.preExecute.promise(ALLOW, call) : ALLOW
    if (decision.kind === 'deny') return failure(call, 'DENIED', { reason: decision.reason })
    if (decision.kind === 'ask') {
      const outcome = await this.approvals.request({ call, reason: decision.reason, signal: options.signal ?? NEVER })
      if (!outcome.allowed) return failure(call, 'DENIED', { reason: `approval needed (${decision.reason}); ${outcome.why}` })
    }
    for (const guard of this.registry.guardsFor(scope)) {
      const denial = guard(call)
      if (denial) return failure(call, 'DENIED', { reason: denial })
    }
    if (tool.spawnOnly && !this.registry.isSubagent(scope)) {
      const task = this.tasks.start(call, (signal) => this.#execute(call, tool, { ...options, signal }, started))
      const text = `${tool.spawnOnlyMessage ?? `${call.name} runs in the background`} (task ${task.id})`
      return { status: 'ok', content: [{ type: 'text', text }], task: task.id }
    }
    return this.#execute(call, tool, options, started)
  }

  /** Stages 5-8: run the body under the gate, the timeout and the signals; post-execute; limits. */
  async #execute(call: ToolCall, tool: RegisteredTool, options: CallOptions, started: number): Promise<Outcome> {
    const flight = new Flight(call, tool.timeoutMs ?? this.settings.timeoutMs, options.onProgress ? (c, e) => this.#progress(c, e, options) : this.#reportProgress, options.signal, this.#deadlines)
    let output: ToolOutput
    try {
      const executor = this.hooks.around.taps.length ? await this.hooks.around.promise(runBody, call) : runBody
      const running = this.gate.run(tool, flight.ended, () => executor(call, flight))
      flight.done = running.catch(ignore)
      output = await Promise.race([running, flight.ended]) // a body that ignores its signal still ends here
    } catch (err) {
      if (err instanceof YokeError && err.code === 'HOOK_FAILED') throw err
      return failure(call, flight.why ?? 'EXEC_FAILED', { ms: flight.timeoutMs, reason: (err as Error)?.message ?? String(err) }, err)
    } finally {
      flight.finish()
    }
    let result = normalize(output, call.name)
    if (this.hooks.postExecute.taps.length) {
      const preview = freezeDeep({ callId: call.id, tool: call.name, ok: result.status === 'ok', ...result, durationMs: Math.round(performance.now() - started) }) as ToolResult
      const post = await this.hooks.postExecute.promise(ACCEPT, call, preview)
      if (post.kind === 'block') return failure(call, 'BLOCKED', { reason: post.reason })
      if (post.kind === 'replace') result = normalize(post.result, call.name)
    }
    // 8 finalize: output limits (freezing happens in call)
    return { ...result, ...limitOutput(result.content as ContentPart[], result.structured, this.settings, call.name) }
  }

  readonly #reportProgress = (call: ToolCall, event: ProgressEvent) => this.hooks.progress.call(call, event)

  #progress(call: ToolCall, event: ProgressEvent, options: CallOptions) {
    this.hooks.progress.call(call, event)
    options.onProgress?.(event)
  }
}

type Outcome = Partial<ToolResult> & { status: ResultStatus }
const ALLOW: PreDecision = Object.freeze({ kind: 'allow' })
const ACCEPT: PostDecision = Object.freeze({ kind: 'accept' })
const NEVER = new AbortController().signal
const runBody: Executor = async (call, ctx) => call.tool!.execute(call.args as Record<string, unknown>, ctx)
function ignore() {}

/** A failed outcome: the catalogue's message and hint, as the model and the caller see them. */
function failure(call: ToolCall, status: Exclude<ResultStatus, 'ok'>, params: Record<string, unknown>, cause?: unknown): Outcome {
  const error = cause instanceof YokeError && cause.code === status ? cause : new YokeError(status as ErrorCode, { name: call.name, scope: call.scope, tap: '?', hook: '?', reason: (cause as Error)?.message, ...params }, { cause })
  return { status, content: [{ type: 'text', text: `${error.code}: ${error.message}\nhint: ${error.hint}` }], error: { code: error.code, message: error.message, hint: error.hint } }
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
  return (decision: PreDecision, call: ToolCall) =>
    decision.kind === 'deny' ? Promise.resolve(decision) : fn(decision, call).then((next) => (next && ORDER[next.kind] >= ORDER[decision.kind] ? next : decision))
}

function ajvReason(errors: Array<{ instancePath: string; message?: string }> | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ') || 'invalid'
}

/**
 * A copy of `value` as JSON would carry it (undefined and functions dropped, toJSON honoured), or
 * undefined when it is not JSON data (a cycle, a BigInt). Taps and the body see a frozen copy.
 */
function cloneArgs(value: unknown): Record<string, unknown> | undefined {
  try {
    return copyJson(value ?? {}, 0) as Record<string, unknown>
  } catch {
    return undefined
  }
}

function copyJson(v: unknown, depth: number): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  if (typeof v !== 'object' || depth > 64) throw new Error('not JSON data')
  if (Array.isArray(v)) return v.map((item) => (item === undefined || typeof item === 'function' ? null : copyJson(item, depth + 1)))
  const o = v as Record<string, unknown> & { toJSON?: () => unknown }
  if (typeof o.toJSON === 'function') return copyJson(o.toJSON(), depth + 1)
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(o)) {
    const item = o[key]
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue
    if (key === '__proto__') Object.defineProperty(out, key, { value: copyJson(item, depth + 1), enumerable: true, writable: true, configurable: true })
    else out[key] = copyJson(item, depth + 1)
  }
  return out
}

export function freezeDeep<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value
  Object.freeze(value)
  if (Array.isArray(value)) for (const item of value) freezeDeep(item)
  else for (const key of Object.keys(value)) freezeDeep((value as Record<string, unknown>)[key])
  return value
}
