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
import { observe, PENDING, replaced, waterfall } from './taps.ts'
import { Tasks } from './tasks.ts'
import type {
  ContentPart,
  Executor,
  PostDecision,
  PreDecision,
  ProgressEvent,
  RegisteredTool,
  ResultStatus,
  CallOptions,
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

export type { CallOptions } from './types.ts'

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
  call(name: string, args: unknown = {}, options: CallOptions = {}): Promise<ToolResult> {
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
    else {
      const result = this.#fly(call, tool, options, started, false, (o) =>
        this.#result(call, o, started),
      )
      return result instanceof Promise ? result : Promise.resolve(result)
    }
    return Promise.resolve(this.#result(call, outcome, started))
  }

  /** The call's one frozen result; the result taps start now, and the caller does not wait for them. */
  #result(call: ToolCall, outcome: Outcome, started: number): ToolResult {
    const result = finished(call, outcome, started)
    if (this.hooks.result.taps.length)
      observe(this.hooks.result, call, result, (err) =>
        this.onError(`a result hook failed for ${call.name}`, err),
      )
    return result
  }

  /**
   * Runs the stages under a Flight: the caller's abort, the timeout and an unload end it wherever
   * it waits (a tap, an approval, the gate, the body), and the call still gets exactly one outcome.
   * Every stage goes on synchronously while nothing asks it to wait (no taps, a body that returns
   * a value), so such a call allocates no promise of its own and joins no timer.
   */
  #fly<R>(
    call: ToolCall,
    tool: RegisteredTool,
    options: CallOptions,
    started: number,
    background: boolean,
    complete: (outcome: Outcome) => R,
  ): R | Promise<R> {
    const progress = options.onProgress
      ? (c: ToolCall, e: ProgressEvent) => this.#progress(c, e, options)
      : this.#reportProgress
    const { settings } = this
    const flight = new Flight(
      call,
      tool,
      tool.timeoutMs ?? settings.timeoutMs,
      progress,
      options,
      this.#deadlines,
      settings.unloadGraceMs,
      started,
    )
    let step: Step
    try {
      step = background ? this.#execute(call, flight) : this.#stages(call, flight)
    } catch (err) {
      step = failed(call, flight, err)
    }
    if (step !== PENDING) return (flight.finish(), complete(step))
    return flight.race(complete, (err) => complete(failed(call, flight, err)))
  }

  /** Stage 2, pre-execute: the taps' folded decision (none: allow). */
  #stages(call: ToolCall, flight: Flight): Step {
    if (flight.why) return failed(call, flight) // the caller gave up before it began
    // decisions only tighten: once one is deny, the later taps are skipped
    const then = (d: PreDecision) => this.#decided(call, flight, d)
    return waterfall(this.hooks.preExecute, ALLOW, call, undefined, tightened, final, then, flight)
  }

  /** Stage 3: a denial ends the call, a rewrite of the arguments is checked again, `ask` asks. */
  #decided(call: ToolCall, flight: Flight, decision: PreDecision): Step {
    if (flight.why) return failed(call, flight)
    if (decision.kind === 'deny') return denied(call, 'pre-execute', decision.reason)
    if (decision.args) {
      // a tap rewrote the arguments: approval, guards and the body all see the new ones, checked again
      const args = cloneArgs(decision.args)
      const { validate } = flight.tool
      const wrong =
        args === undefined
          ? 'the arguments are not JSON data'
          : !validate(args) && ajvReason(validate.errors)
      if (wrong)
        return failure(call, 'INVALID_ARGS', { reason: `as rewritten before the call: ${wrong}` })
      call = Object.freeze({ ...call, args: args! })
    }
    if (decision.kind !== 'ask') return this.#guarded(call, flight)
    const { reason } = decision
    const asked = this.approvals.request({ call, reason, signal: flight.signal })
    return flight.after(asked, (outcome) =>
      outcome.allowed
        ? this.#guarded(call, flight)
        : denied(call, 'approval', `approval needed (${reason}); ${outcome.why}`),
    )
  }

  /** Stage 4, the guards; then the body here or, for spawnOnly tools, in a background task. */
  #guarded(call: ToolCall, flight: Flight): Step {
    for (const guard of this.registry.guardsFor(call.scope)) {
      const denial = guard(call)
      if (denial) return denied(call, 'guard', denial)
    }
    const { tool, options, started } = flight
    if (tool.spawnOnly && !this.registry.isSubagent(call.scope)) {
      const task = this.tasks.start(call, async (signal) =>
        this.#fly(call, tool, { ...options, signal }, started, true, (o) => o),
      )
      const text = `${tool.spawnOnlyMessage ?? `${call.name} runs in the background`} (task ${task.id})`
      return { status: 'ok', content: [{ type: 'text', text }], task: task.id }
    }
    return this.#execute(call, flight, options.parent)
  }

  /** Stage 5, around: the executor its taps wrap the body in; then a slot at the gate. */
  #execute(call: ToolCall, flight: Flight, parent?: ToolCall): Step {
    if (this.registry.resolve(call.name, call.scope) !== flight.tool)
      return failure(call, 'UNLOADED', {}) // unloaded while it waited
    if (!this.hooks.around.taps.length) return this.#gated(call, flight, parent)
    const then = (e: Executor) => this.#gated(call, flight, parent, e)
    return waterfall(this.hooks.around, runBody, call, undefined, replaced, undefined, then, flight)
  }

  #gated(call: ToolCall, flight: Flight, parent?: ToolCall, executor?: Executor): Step {
    // a nested call runs in its parent's slot: waiting for a slot its parent holds would deadlock
    const waiting = parent
      ? undefined
      : this.gate.enter(flight, this.registry.exclusionScope(call.scope))
    return waiting
      ? flight.after(waiting, () => this.#body(call, flight, executor))
      : this.#body(call, flight, executor)
  }

  /** Stage 6, the body, holding the slot until it returns; a value it returns goes on at once. */
  #body(call: ToolCall, flight: Flight, executor?: Executor): Step {
    let output: ToolOutput
    try {
      if (flight.why) return (this.gate.leave(flight), failed(call, flight))
      output = executor
        ? executor(call, flight)
        : flight.tool.execute(call.args as Record<string, unknown>, flight)
    } catch (err) {
      this.gate.leave(flight)
      throw err
    }
    if (!isThenable(output)) return (this.gate.leave(flight), this.#post(call, flight, output))
    const leave = (err?: unknown) => (this.gate.leave(flight), err)
    return flight.after(output, (value) => (leave(), this.#post(call, flight, value)), leave)
  }

  /** Stages 7-8: post-execute, then the output limits (freezing happens in call). */
  #post(call: ToolCall, flight: Flight, output: ToolOutput): Step {
    const result = normalize(output, call.name)
    if (!this.hooks.postExecute.taps.length) return limitOutput(result, this.settings, call.name)
    const preview = finished(call, result, flight.started)
    const decided = (post: PostDecision) => {
      if (post.kind === 'block') return failure(call, 'BLOCKED', { reason: post.reason })
      const kept = post.kind === 'replace' ? normalize(post.result, call.name) : result
      return limitOutput(kept, this.settings, call.name)
    }
    const taps = this.hooks.postExecute
    return waterfall(taps, ACCEPT, call, preview, postFold, final, decided, flight)
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

/** What a DENIED result tells the model (and the person) to do, by the stage that refused it. */
const HOW = {
  'pre-execute': () =>
    'a policy rule or a pre-execute hook denies it; narrow or remove the deny rule that matches',
  approval: (name: string) =>
    `add allow: ["${name}"] to the policy plugin's config, or approve it when asked`,
  guard: () => 'a guard refused it; its reason says why',
}
type Outcome = Partial<ToolResult> & { status: ResultStatus; sameText?: boolean }
/** what a stage gives: the call's outcome, or PENDING when it waits (the flight gets it later) */
type Step = Outcome | typeof PENDING
const ALLOW: PreDecision = Object.freeze({ kind: 'allow' })
const ACCEPT: PostDecision = Object.freeze({ kind: 'accept' })
const runBody: Executor = async (call, ctx) =>
  call.tool!.execute(call.args as Record<string, unknown>, ctx)

const EMPTY = Object.freeze({})

/** Why a call's stages failed: its early end, a tool's coded error, else EXEC_FAILED (a throwing tap fails closed). */
function failed(call: ToolCall, flight: Flight, err?: unknown): Outcome {
  if (flight.why) return failure(call, flight.why, { ms: flight.timeoutMs })
  const code = err instanceof YokeError && !PIPELINE_CODES.has(err.code) ? err.code : 'EXEC_FAILED'
  return failure(call, code, { reason: messageOf(err) }, err)
}

const isThenable = (v: unknown): v is PromiseLike<unknown> =>
  typeof (v as { then?: unknown } | null)?.then === 'function'

/** The frozen result of an outcome: what a copy froze already (content, structured) is not walked again. */
function finished(call: ToolCall, outcome: Outcome, started: number): ToolResult {
  const { status, content = [], structured, error, truncated, task } = outcome
  const result: { -readonly [K in keyof ToolResult]: ToolResult[K] } = {
    callId: call.id,
    tool: call.name,
    ok: status === 'ok',
    status,
    content: Object.isFrozen(content) ? content : freezeDeep(content),
    durationMs: 0,
  }
  if (structured !== undefined) result.structured = freezeDeep(structured)
  if (error) result.error = Object.freeze(error)
  if (truncated) result.truncated = Object.freeze(truncated)
  if (task !== undefined) result.task = task
  result.durationMs = Math.round(performance.now() - started)
  return Object.freeze(result)
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

/** A DENIED outcome that says which stage refused it, so an observer need not read its message. */
function denied(call: ToolCall, stage: keyof typeof HOW, reason: string): Outcome {
  const outcome = failure(call, 'DENIED', { reason, how: HOW[stage](call.name) })
  return { ...outcome, error: { ...outcome.error!, stage } }
}

/** Tool output → status, content and structured value, as fresh JSON data (the body keeps its objects). */
function normalize(output: ToolOutput, name: string): Outcome {
  if (typeof output === 'string') return { status: 'ok', content: textContent(output) }
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
    const text = JSON.stringify(structured)
    return { status: 'ok', content: textContent(text), structured, sameText: true }
  } catch (err) {
    return failure({ name } as ToolCall, 'EXEC_FAILED', {
      reason: `its output is not JSON data (${(err as Error).message})`,
    })
  }
}

/** One text part, frozen as it is made (the result's freeze does not walk it again). */
const textContent = (text: string): ContentPart[] =>
  Object.freeze([Object.freeze({ type: 'text' as const, text })]) as ContentPart[]

/** preExecute: a decision only tightens (ask can become deny, never allow); a rewrite of the args carries on. */
function tightened(decision: PreDecision, answer: unknown): PreDecision {
  const next = answer as PreDecision | undefined
  if (!(next && ORDER[next.kind] >= ORDER[decision.kind])) return decision // an unknown kind too
  return decision.args && !next.args ? { ...next, args: decision.args } : next
}

/** postExecute: an accept after a replace keeps the replacement (a later tap sees it in d.result). */
function postFold(d: PostDecision, answer: unknown): PostDecision {
  const next = answer as PostDecision | undefined
  return !next || (next.kind === 'accept' && d.kind === 'replace') ? d : next
}

/** A decision no later tap may change: the taps after it are skipped. */
const final = (d: { kind: string }) => d.kind === 'deny' || d.kind === 'block'

const ajvReason = (errors: ErrorObject[] | null | undefined): string =>
  (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ') || 'invalid'
