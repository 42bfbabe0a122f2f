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
import {
  AsyncParallelHook,
  AsyncSeriesWaterfallHook,
  SyncBailHook,
  SyncHook,
  SyncWaterfallHook,
} from 'tapable'
import type { ErrorObject } from 'ajv'
import { z } from 'zod'
import { messageOf, YokeError, type ErrorCode } from '../errors.ts'
import { settledWithin } from '../kernel/disposer.ts'
import { defineHooks } from '../kernel/hooks.ts'
import { Approvals } from './approval.ts'
import { Deadlines, Flight } from './flight.ts'
import { cloneArgs, copyJson, freezeDeep } from './json.ts'
import { ConcurrencyGate, limitOutput } from './limits.ts'
import { GLOBAL, ToolRegistry, type Guard } from './registry.ts'
import { Tasks } from './tasks.ts'
import type {
  ContentPart,
  Executor,
  PostDecision,
  PreDecision,
  ProgressEvent,
  RegisteredTool,
  ResultStatus,
  Asker,
  ToolCall,
  TraceContext,
  ToolDefinition,
  ToolOutput,
  ToolResult,
} from './types.ts'

const positive = (n: number) => z.number().int().positive().default(n)

export const runtimeSettings = z
  .object({
    /** default per-call timeout */
    timeoutMs: positive(300_000),
    /** how long calls on an unloaded tool may finish before they end UNLOADED */
    unloadGraceMs: z.number().int().nonnegative().default(2_000),
    maxConcurrent: positive(16),
    perSource: z.record(z.string(), z.number().int().positive()).default({}),
    maxOutputBytes: positive(256 * 1024),
    maxOutputTokens: positive(25_000),
    previewBytes: positive(8 * 1024),
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
  /** a call made from inside another tool's body: it runs under that call's concurrency slot */
  parent?: ToolCall
  /**
   * who answers for this call (approve it, answer a question its tool's far side asks): asked
   * before the global approval bridges; a nested call inherits its parent's
   */
  asker?: Asker
  /** the trace this call continues (an MCP client's `_meta.traceparent`); a nested call inherits its parent's */
  trace?: TraceContext
}

/** a definition registerAll skipped, and why */
export type Refused = (def: ToolDefinition, err: YokeError) => void
/** how long registerAll registers before it lets the event loop run */
const SLICE_MS = 8
const ORDER = { allow: 0, ask: 1, deny: 2 } as const
/** codes only the pipeline gives: a body's error with one of them is the body failing, EXEC_FAILED */
const PIPELINE_CODES = new Set<string>(['UNKNOWN_TOOL', 'SCOPE_UNKNOWN', 'INVALID_ARGS', 'DENIED'])
let nextCall = 0

export class ToolRuntime {
  readonly hooks = defineHooks('runtime', {
    preExecute: new AsyncSeriesWaterfallHook<[PreDecision, ToolCall]>(['decision', 'call']),
    around: new AsyncSeriesWaterfallHook<[Executor, ToolCall]>(['executor', 'call']),
    postExecute: new AsyncSeriesWaterfallHook<[PostDecision, ToolCall, ToolResult]>([
      'decision',
      'call',
      'result',
    ]),
    result: new AsyncParallelHook<[ToolCall, ToolResult]>(['call', 'result']),
    progress: new SyncHook<[ToolCall, ProgressEvent]>(['call', 'event']),
    change: new SyncHook<[ToolChange]>(['change']),
    /** filters the tools a scope lists (a policy hides what it denies outright) */
    visible: new SyncWaterfallHook<[RegisteredTool[], string]>(['tools', 'scope']),
    /** a visible filter changed its mind with no tool changing (a policy file re-read): what lists tools lists again */
    visibility: new SyncHook<[string]>(['scope']),
    /** a call begins: a tracing plugin starts its span, gets the caller's context, returns the call's */
    trace: new SyncWaterfallHook<[TraceContext | undefined, ToolCall]>(['trace', 'call']),
    /** a call names no tool: a tap that knows why (its owner waits, it was withdrawn) says so */
    unknownTool: new SyncBailHook<[string, string], YokeError | undefined>(['name', 'scope']),
  })
  readonly approvals = new Approvals()
  readonly tasks = new Tasks((message, err) => this.onError(message, err))
  readonly registry = new ToolRegistry((added, removed, scope) =>
    this.hooks.change.call({ added, removed, scope }),
  )
  readonly gate: ConcurrencyGate
  settings: RuntimeSettings
  /** the calls in flight (with their deadlines), so unloading a tool can wait for its calls, then end them */
  readonly #deadlines = new Deadlines()

  constructor(
    settings: Partial<RuntimeSettings> = {},
    private readonly onError: (message: string, err: unknown) => void = () => {},
  ) {
    this.settings = runtimeSettings.parse(settings)
    this.gate = new ConcurrencyGate(this.settings)
    // decisions only tighten: a tap is skipped once the decision is deny (or block)
    this.hooks.preExecute.intercept({
      register: (tap) => ({ ...tap, fn: folding(tap.fn as Folded<PreDecision>, tightened) }),
    })
    this.hooks.postExecute.intercept({
      register: (tap) => ({ ...tap, fn: folding(tap.fn as Folded<PostDecision>, postFold) }),
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
  register(
    def: ToolDefinition,
    owner = 'host',
    scope = GLOBAL,
    fiber?: number,
  ): () => Promise<void> {
    const { tool, remove } = this.registry.register(def, owner, scope, fiber)
    return () => this.#unload([{ tool, remove }])
  }

  /**
   * Registers many tools (an MCP server's thousands) in slices of a few ms that yield to the event
   * loop between them, with one change announcement per slice. A definition register() refuses
   * goes to `refused`; without it, the first one throws, and the tools registered so far go.
   * Resolves to the removal of them all (one announcement, then as register's cleanup).
   */
  async registerAll(
    defs: Iterable<ToolDefinition>,
    options: { owner?: string; scope?: string; fiber?: number; refused?: Refused } = {},
  ): Promise<() => Promise<void>> {
    const { owner = 'host', scope = GLOBAL, fiber, refused } = options
    const made: Array<{ tool: RegisteredTool; remove: () => void }> = []
    const next = defs[Symbol.iterator]()
    try {
      for (let item = next.next(); !item.done; await new Promise(setImmediate)) {
        const until = performance.now() + SLICE_MS
        this.registry.batch(() => {
          for (; !item.done && performance.now() < until; item = next.next())
            try {
              made.push(this.registry.register(item.value, owner, scope, fiber))
            } catch (err) {
              if (!refused) throw err
              refused(item.value, err as YokeError)
            }
        })
      }
    } catch (err) {
      await this.#unload(made)
      throw err
    }
    return () => this.#unload(made)
  }

  /** Removes tools: waits (up to unloadGraceMs) for their calls, ends the rest UNLOADED. */
  async #unload(made: Array<{ tool: RegisteredTool; remove: () => void }>): Promise<void> {
    this.registry.batch(() => made.forEach((m) => m.remove()))
    const tools = new Set(made.map((m) => m.tool))
    for (const tool of tools) this.approvals.forget(tool.id)
    const calls: Flight[] = []
    this.#deadlines.forEach((f) => f instanceof Flight && tools.has(f.call.tool!) && calls.push(f))
    await settledWithin(Promise.allSettled(calls.map((c) => c.work)), this.settings.unloadGraceMs)
    for (const c of calls) c.end('UNLOADED')
  }

  list(scope = GLOBAL): RegisteredTool[] {
    return this.hooks.visible.call(this.registry.list(scope), scope)
  }

  guard(fn: Guard, scope = GLOBAL): () => void {
    return this.registry.guard(fn, scope)
  }

  /** Runs one call through the whole pipeline. Always resolves, to exactly one frozen result. */
  async call(name: string, args: unknown = {}, options: CallOptions = {}): Promise<ToolResult> {
    const started = performance.now()
    const scope = options.scope ?? GLOBAL
    const tool = this.registry.resolve(name, scope)
    const copied = cloneArgs(args) // a frozen copy
    const call: { -readonly [K in keyof ToolCall]: ToolCall[K] } = {
      id: `call_${++nextCall}`,
      name,
      args: copied ?? EMPTY,
      scope,
      caller: options.caller ?? 'host',
      tool,
      asker: options.asker ?? options.parent?.asker,
      trace: options.trace ?? options.parent?.trace,
    }
    if (this.hooks.trace.taps.length) call.trace = this.#traced(call)
    Object.freeze(call)
    let outcome: Outcome
    if (!tool) outcome = this.#unknown(call)
    else if (copied === undefined)
      outcome = failure(call, 'INVALID_ARGS', { reason: 'the arguments are not JSON data' })
    else if (!tool.validate(call.args))
      outcome = failure(call, 'INVALID_ARGS', { reason: ajvReason(tool.validate.errors) })
    else outcome = await this.#fly(call, tool, options, started, false)
    const result = finished(call, outcome, started)
    // observe only: the taps start now (in order), the caller does not wait for them to finish
    if (this.hooks.result.taps.length)
      this.hooks.result
        .promise(call, result)
        .catch((err) => this.onError(`a result hook failed for ${name}`, err))
    return result
  }

  /**
   * Runs `work` under a Flight: the caller's abort, the timeout and an unload end it wherever it is
   * (a tap, an approval, the gate, the body), and the call still gets exactly one outcome.
   */
  async #fly(
    call: ToolCall,
    tool: RegisteredTool,
    options: CallOptions,
    started: number,
    background: boolean,
  ): Promise<Outcome> {
    const progress = options.onProgress
      ? (c: ToolCall, e: ProgressEvent) => this.#progress(c, e, options)
      : this.#reportProgress
    const { settings } = this
    const flight = new Flight(
      call,
      tool,
      tool.timeoutMs ?? settings.timeoutMs,
      progress,
      options.signal,
      this.#deadlines,
      settings.unloadGraceMs,
      started,
    )
    try {
      const running = background
        ? this.#execute(call, tool, flight, started)
        : this.#stages(call, tool, flight, options, started)
      flight.work = running
      return await flight.race(running)
    } catch (err) {
      if (flight.why) return failure(call, flight.why, { ms: flight.timeoutMs })
      // a throwing tap fails the call closed; a coded error keeps its code; anything else is EXEC_FAILED
      return failure(
        call,
        err instanceof YokeError && !PIPELINE_CODES.has(err.code) ? err.code : 'EXEC_FAILED',
        { reason: messageOf(err) },
        err,
      )
    } finally {
      flight.finish()
    }
  }

  /** Stages 2-4, then the body (here or, for spawnOnly tools, in a background task). */
  async #stages(
    call: ToolCall,
    tool: RegisteredTool,
    flight: Flight,
    options: CallOptions,
    started: number,
  ): Promise<Outcome> {
    if (flight.why) return flight.ended // the caller gave up before it began
    const decision = this.hooks.preExecute.taps.length
      ? await this.hooks.preExecute.promise(ALLOW, call)
      : ALLOW
    if (flight.why) return flight.ended
    if (decision.kind === 'deny')
      return failure(call, 'DENIED', { reason: decision.reason, how: HOW.denied })
    if (decision.args) {
      // a tap rewrote the arguments: approval, guards and the body all see the new ones, checked again
      const args = cloneArgs(decision.args)
      if (args === undefined)
        return failure(call, 'INVALID_ARGS', {
          reason: 'as rewritten before the call: the arguments are not JSON data',
        })
      if (!tool.validate(args))
        return failure(call, 'INVALID_ARGS', {
          reason: `as rewritten before the call: ${ajvReason(tool.validate.errors)}`,
        })
      call = Object.freeze({ ...call, args })
    }
    if (decision.kind === 'ask') {
      const outcome = await this.approvals.request({
        call,
        reason: decision.reason,
        signal: flight.signal,
      })
      if (!outcome.allowed)
        return failure(call, 'DENIED', {
          reason: `approval needed (${decision.reason}); ${outcome.why}`,
          how: HOW.ask(call.name),
        })
    }
    for (const guard of this.registry.guardsFor(call.scope)) {
      const denial = guard(call)
      if (denial) return failure(call, 'DENIED', { reason: denial, how: HOW.guard })
    }
    if (tool.spawnOnly && !this.registry.isSubagent(call.scope)) {
      const task = this.tasks.start(call, (signal) =>
        this.#fly(call, tool, { ...options, signal }, started, true),
      )
      const text = `${tool.spawnOnlyMessage ?? `${call.name} runs in the background`} (task ${task.id})`
      return { status: 'ok', content: [{ type: 'text', text }], task: task.id }
    }
    return await this.#execute(call, tool, flight, started, options.parent)
  }

  /** Stages 5-8: the body under the gate, post-execute, output limits. */
  async #execute(
    call: ToolCall,
    tool: RegisteredTool,
    flight: Flight,
    started: number,
    parent?: ToolCall,
  ): Promise<Outcome> {
    if (this.registry.resolve(call.name, call.scope) !== tool) return failure(call, 'UNLOADED', {}) // unloaded while it waited
    const executor = this.hooks.around.taps.length
      ? await this.hooks.around.promise(runBody, call)
      : undefined
    // a nested call runs in its parent's slot: waiting for a slot its parent holds would deadlock
    const waiting = parent
      ? undefined
      : this.gate.enter(flight, this.registry.exclusionScope(call.scope))
    if (waiting) await waiting
    let output: ToolOutput
    try {
      if (flight.why) return await flight.ended
      output = await (executor
        ? executor(call, flight)
        : tool.execute(call.args as Record<string, unknown>, flight))
    } finally {
      this.gate.leave(flight)
    }
    let result = normalize(output, call.name)
    if (this.hooks.postExecute.taps.length) {
      const preview = finished(call, result, started)
      const post = await this.hooks.postExecute.promise(ACCEPT, call, preview)
      if (post.kind === 'block') return failure(call, 'BLOCKED', { reason: post.reason })
      if (post.kind === 'replace') result = normalize(post.result, call.name)
    }
    // 8 finalize: output limits (freezing happens in call)
    return limitOutput(result, this.settings, call.name)
  }

  /** The context a call runs under, from the trace taps; a tap that throws leaves the caller's. */
  #traced(call: ToolCall): TraceContext | undefined {
    try {
      return this.hooks.trace.call(call.trace, call) ?? call.trace
    } catch (err) {
      this.onError(`a trace hook failed for ${call.name}`, err)
      return call.trace
    }
  }

  /** A call that names no tool: why, if a tap knows (its owner waits, it was withdrawn). */
  #unknown(call: ToolCall): Outcome {
    if (!this.registry.hasScope(call.scope)) return failure(call, 'SCOPE_UNKNOWN', {})
    // a name the scope masks out is unknown there: why it is missing elsewhere is not its business
    if (!this.registry.admits(call.name, call.scope)) return failure(call, 'UNKNOWN_TOOL', {})
    let why: YokeError | undefined
    try {
      why = this.hooks.unknownTool.call(call.name, call.scope) ?? undefined
    } catch (err) {
      this.onError(`an unknownTool hook failed for ${call.name}`, err)
    }
    return why instanceof YokeError
      ? failure(call, why.code, {}, why)
      : failure(call, 'UNKNOWN_TOOL', {})
  }

  readonly #reportProgress = (call: ToolCall, event: ProgressEvent) =>
    this.hooks.progress.call(call, event)

  #progress(call: ToolCall, event: ProgressEvent, options: CallOptions) {
    this.hooks.progress.call(call, event)
    options.onProgress?.(event)
  }
}

/** What a DENIED result tells the model (and the person) to do, by cause. */
const HOW = {
  denied:
    'a policy rule or a pre-execute hook denies it; narrow or remove the deny rule that matches',
  ask: (name: string) =>
    `add allow: ["${name}"] to the policy plugin's config, or approve it when asked`,
  guard: 'a guard refused it; its reason says why',
}
type Outcome = Partial<ToolResult> & { status: ResultStatus }
const ALLOW: PreDecision = Object.freeze({ kind: 'allow' })
const ACCEPT: PostDecision = Object.freeze({ kind: 'accept' })
const runBody: Executor = async (call, ctx) =>
  call.tool!.execute(call.args as Record<string, unknown>, ctx)

const EMPTY = Object.freeze({})

/** The frozen result of an outcome: what a copy froze already (content, structured) is not walked again. */
function finished(call: ToolCall, outcome: Outcome, started: number): ToolResult {
  const { content = [], structured, error, truncated } = outcome
  return Object.freeze({
    callId: call.id,
    tool: call.name,
    ok: outcome.status === 'ok',
    ...outcome,
    content: Object.isFrozen(content) ? content : freezeDeep(content),
    ...(structured !== undefined && { structured: freezeDeep(structured) }),
    ...(error && { error: Object.freeze(error) }),
    ...(truncated && { truncated: Object.freeze(truncated) }),
    durationMs: Math.round(performance.now() - started),
  })
}

/** A failed outcome: the catalogue's message and hint, as the model and the caller see them. */
function failure(
  call: ToolCall,
  status: Exclude<ResultStatus, 'ok'>,
  params: Record<string, unknown>,
  cause?: unknown,
): Outcome {
  const error =
    cause instanceof YokeError && cause.code === status
      ? cause
      : new YokeError(
          status as ErrorCode,
          {
            name: call.name,
            scope: call.scope,
            tap: '?',
            hook: '?',
            reason: (cause as Error)?.message,
            ...params,
          },
          { cause },
        )
  return {
    status,
    content: [{ type: 'text', text: `${error.code}: ${error.message}\nhint: ${error.hint}` }],
    error: { code: error.code, message: error.message, hint: error.hint },
  }
}

/** Tool output → status, content and structured value, as fresh JSON data (the body keeps its objects). */
function normalize(output: ToolOutput, name: string): Outcome {
  if (typeof output === 'string') return { status: 'ok', content: [{ type: 'text', text: output }] }
  if (output === undefined) return { status: 'ok', content: [] }
  try {
    if (
      output &&
      typeof output === 'object' &&
      Array.isArray((output as { content?: unknown }).content)
    ) {
      const o = output as { content: ContentPart[]; structured?: unknown; isError?: boolean }
      const copy = {
        content: copyJson(o.content, 0) as ContentPart[],
        structured: o.structured === undefined ? undefined : copyJson(o.structured, 0),
      }
      if (!o.isError) return { status: 'ok', ...copy }
      const error = new YokeError('TOOL_ERROR', { name })
      return {
        status: 'TOOL_ERROR',
        ...copy,
        error: { code: error.code, message: error.message, hint: error.hint },
      }
    }
    const structured = copyJson(output, 0)
    return {
      status: 'ok',
      content: [{ type: 'text', text: JSON.stringify(structured) }],
      structured,
    }
  } catch (err) {
    return failure({ name } as ToolCall, 'EXEC_FAILED', {
      reason: `its output is not JSON data (${(err as Error).message})`,
    })
  }
}

/** preExecute: a decision only tightens (ask can become deny, never allow); a rewrite of the args carries on. */
function tightened(decision: PreDecision, next: PreDecision | undefined): PreDecision {
  if (!(next && ORDER[next.kind] >= ORDER[decision.kind])) return decision // an unknown kind too
  return decision.args && !next.args ? { ...next, args: decision.args } : next
}

/** postExecute: an accept after a replace keeps the replacement (a later tap sees it in d.result). */
const postFold = (d: PostDecision, next: PostDecision | undefined) =>
  !next || (next.kind === 'accept' && d.kind === 'replace') ? d : next

/** A decision no later tap may change: the taps after it are skipped. */
const final = (d: { kind: string }) => d.kind === 'deny' || d.kind === 'block'

/** A tap's fn: skipped once the decision is final (deny, block), its answer folded in. */
type Folded<T> = (d: T, ...rest: unknown[]) => Promise<T | undefined>
function folding<T extends { kind: string }>(
  fn: Folded<T>,
  fold: (d: T, next: T | undefined) => T,
) {
  return (d: T, ...rest: unknown[]) =>
    final(d) ? Promise.resolve(d) : fn(d, ...rest).then((n) => fold(d, n))
}

const ajvReason = (errors: ErrorObject[] | null | undefined): string =>
  (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ') || 'invalid'
