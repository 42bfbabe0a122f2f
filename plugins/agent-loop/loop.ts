/**
 * One agent run. Each turn: deliver finished background tasks, read the scope's visible tools
 * (once, at the start of the turn: a hot reload shows from the next turn), render the system
 * prompt, let `beforeModel` rewrite the request, ask the model, let `afterModel` see the answer,
 * then run the tool calls it asked for through the runtime (consecutive safe calls together,
 * anything else alone) and feed the results back. It ends with a final answer, a budget, a
 * cancel, or an error, and always with exactly one RunResult and a closed transcript.
 */
import { createHash } from 'node:crypto'
import {
  messageOf,
  partText,
  YokeError,
  type Logger,
  type ProgressEvent,
  type RegisteredTool,
  type TaskInfo,
  type ToolLayer,
  type ToolResult,
  type TraceContext,
} from 'yoke'
import type {
  ChatMessage,
  ModelClient,
  ModelRequest,
  ModelResponse,
  ModelTool,
  ModelToolCall,
} from '../models/api.ts'
import type { PromptApi } from '../prompt/api.ts'
import type { ToolSearchApi } from '../tool-search/api.ts'
import type { Transcript } from './transcript.ts'
import type {
  AgentEvent,
  AgentHooks,
  Budget,
  RunOptions,
  RunStartInfo,
  RunResult,
  RunStatus,
  RunUsage,
  StepInfo,
  StepResult,
  StopDecision,
  TurnInfo,
} from './api.ts'

export interface LoopDeps {
  tasks: { wait(id: string): Promise<TaskInfo | undefined>; cancel(id: string): boolean }
  /** read at each turn: the prompt instance may be reloaded while a run goes on */
  prompt(): PromptApi | undefined
  /** read at each turn: which tools to offer (direct, loaded, tool_search); without it, all */
  toolSearch?(): ToolSearchApi | undefined
  hooks: AgentHooks
  logger: Logger
  maxTokensPerRequest?: number
  temperature?: number
  /** how many times one run's stop may be turned into a continuation by `stop` taps (default 3) */
  maxStopContinuations?: number
  /** the run was started by another run's `spawn` */
  subagent?: boolean
}

/** Ends a run early with a status (thrown inside the loop, caught once at its end). */
class Stop extends Error {
  constructor(
    readonly status: RunStatus,
    reason: string,
  ) {
    super(reason)
  }
}

const STOP: StopDecision = Object.freeze({ kind: 'stop' })

/**
 * What a run does when the model would stop and the `stop` taps decided: `stop`, `continue` (the
 * reason becomes the next user message), or `bounded`: a continuation asked for once `max` of them
 * in a row were made, so the run ends (and says why).
 */
export function afterStop(
  decision: StopDecision,
  continued: number,
  max: number,
): 'stop' | 'continue' | 'bounded' {
  if (decision.kind !== 'continue') return 'stop'
  return continued >= max ? 'bounded' : 'continue'
}

const hashes = new WeakMap<RegisteredTool, string>()
/** A short hash of what the model sees of a tool (and its source): which version of a tool a transcript used. */
export function toolHash(tool: RegisteredTool): string {
  let hash = hashes.get(tool)
  if (!hash) {
    hash = createHash('sha256')
      .update(
        JSON.stringify([
          tool.name,
          tool.description ?? '',
          tool.inputSchema,
          tool.source,
          tool.owner,
        ]),
      )
      .digest('hex')
      .slice(0, 12)
    hashes.set(tool, hash)
  }
  return hash
}

export class Run {
  readonly #messages: ChatMessage[]
  readonly #usage: RunUsage = { inputTokens: 0, outputTokens: 0, requests: 0 }
  readonly #pending = new Set<string>()
  readonly #finished: TaskInfo[] = []
  readonly #started = performance.now()
  #turn = 0
  #text = ''
  /** stops turned into continuations so far (bounded by maxStopContinuations) */
  #continued = 0
  #wake?: () => void
  /** the context the run's calls run under: a tracer's span for the run, else the caller's */
  #trace: TraceContext | undefined

  constructor(
    readonly id: string,
    private readonly deps: LoopDeps,
    private readonly model: ModelClient,
    private readonly options: Omit<RunOptions, 'scope'> & {
      layer: ToolLayer
      scope: string
      lane: string
      budget: Budget
      cancelSignal: AbortSignal
    },
    private readonly signal: AbortSignal,
    private readonly emit: (event: AgentEvent) => void,
    private readonly transcript?: Transcript,
  ) {
    this.#messages = [...(options.messages ?? options.history ?? [])]
    this.#trace = options.trace
  }

  #info(): TurnInfo {
    return {
      runId: this.id,
      turn: this.#turn,
      scope: this.options.scope,
      lane: this.options.lane,
      model: this.model.model,
      provider: this.model.provider,
      ...(this.transcript ? { transcript: this.transcript.file } : {}),
      ...(this.deps.subagent ? { subagent: true } : {}),
      ...(this.#trace && { trace: this.#trace }),
    }
  }

  #task = ''

  /** who this run's calls are from (approvals, tools loaded by tool_search) */
  get #caller(): string {
    return `agent:${this.id}`
  }

  async execute(task: string): Promise<RunResult> {
    this.#task = task
    let status: RunStatus = 'done'
    let reason: string | undefined
    try {
      const resumed = this.#messages.length > 0
      if (this.deps.hooks.trace?.taps.length) this.#traced({ ...this.#info(), task, resumed })
      if (this.options.messages) this.#forked()
      else await this.#prompted(task, resumed)
      while (await this.#turnOnce());
    } catch (err) {
      ;({ status, reason } = this.#ending(err))
    }
    this.deps.toolSearch?.()?.forget(this.#caller)
    // background tasks of a run that did not finish normally are cancelled with it
    if (status !== 'done') for (const id of this.#pending) this.deps.tasks.cancel(id)
    const result: RunResult = {
      runId: this.id,
      status,
      reason,
      text: this.#text,
      turns: this.#turn,
      usage: { ...this.#usage },
      durationMs: Math.round(performance.now() - this.#started),
      transcript: this.transcript?.file,
      messages: this.#messages,
    }
    try {
      await this.deps.hooks.runEnd?.promise(result, this.#info())
    } catch (err) {
      this.deps.logger.warn(`a runEnd tap failed: ${messageOf(err)}`)
    }
    this.transcript?.write('end', {
      status,
      reason,
      text: this.#text,
      turns: this.#turn,
      usage: result.usage,
      durationMs: result.durationMs,
    })
    return result
  }

  /** runStart's context (a SessionStart hook's) comes first, then the prompt as userPrompt leaves it. */
  async #prompted(task: string, resumed: boolean) {
    const context =
      (await this.deps.hooks.runStart?.promise('', { ...this.#info(), task, resumed }))?.trim() ??
      ''
    const prompt = (await this.deps.hooks.userPrompt.promise(task, this.#info())) ?? task
    this.#push({ role: 'user', content: context ? `${context}\n\n${prompt}` : prompt })
  }

  /** A fork goes on from the conversation it was given: its transcript holds it as turn 0. */
  #forked() {
    for (const message of this.#messages) this.transcript?.write('message', { turn: 0, message })
  }

  /** The run's trace context from the `trace` taps (none: the caller's); a tap that throws leaves it. */
  #traced(info: RunStartInfo) {
    try {
      this.#trace = this.deps.hooks.trace?.call(this.#trace, info) ?? this.#trace
    } catch (err) {
      this.deps.logger.warn(`a trace tap failed: ${messageOf(err)}`)
    }
  }

  /** One turn; false when the run is over. */
  async #turnOnce(): Promise<boolean> {
    this.#deliver()
    this.#checkBudget()
    this.#turn++
    const info = this.#info()
    // the tools of this turn: read once, so a tool added while the turn runs shows from the next one
    // sorted by name: the request does not depend on registration order (replay, prompt caching)
    const listed = this.options.layer.list()
    const search = this.deps.toolSearch?.()
    const offered = search
      ? await search.offered(listed, this.#caller)
      : listed.sort((a, b) => (a.name < b.name ? -1 : 1))
    const scoped = new Map<string, RegisteredTool>()
    for (const tool of offered) scoped.set(tool.name, tool)
    this.emit({ type: 'turn', turn: this.#turn, tools: scoped.size })
    this.transcript?.write('turn', { turn: this.#turn, tools: scoped.size })
    let request: ModelRequest = {
      system: this.deps.prompt()?.render({ task: this.#task }) ?? '',
      messages: this.#messages.slice(),
      tools: [...scoped.values()].map(toModelTool),
      ...(this.deps.maxTokensPerRequest ? { maxTokens: this.deps.maxTokensPerRequest } : {}),
      ...(this.deps.temperature !== undefined ? { temperature: this.deps.temperature } : {}),
    }
    request = (await this.deps.hooks.beforeModel.promise(request, info)) ?? request
    const asked = performance.now()
    let response = await this.model.complete(request, {
      signal: this.signal,
      onText: (delta) => this.emit({ type: 'text', turn: info.turn, delta }),
    })
    const latencyMs = Math.round(performance.now() - asked)
    this.#count(response)
    response =
      (await this.deps.hooks.afterModel.promise(response, {
        ...info,
        latencyMs,
        usage: { ...this.#usage },
      })) ?? response
    this.emit({
      type: 'model',
      turn: info.turn,
      usage: response.usage,
      stopReason: response.stopReason,
      latencyMs,
    })
    this.transcript?.write('model', {
      turn: info.turn,
      model: response.model,
      stopReason: response.stopReason,
      usage: response.usage,
      latencyMs,
    })
    this.#push({
      role: 'assistant',
      content: response.text,
      ...(response.toolCalls.length ? { toolCalls: response.toolCalls } : {}),
    })
    if (response.text || !response.toolCalls.length) this.#text = response.text
    if (response.toolCalls.length) {
      const results = await this.#runCalls(response.toolCalls, scoped, info)
      await this.#afterBatch(response.toolCalls, results, info)
    }
    await this.deps.hooks.turnEnd.promise(info, response)
    if (response.toolCalls.length) return true
    if (!this.#pending.size && !this.#finished.length) return this.#goOnAfterStop(info)
    await this.#waitForTask()
    return true
  }

  /** The model would stop: `stop` taps may send it on with a reason, a bounded number of times per run. */
  async #goOnAfterStop(info: TurnInfo): Promise<boolean> {
    const stop = this.deps.hooks.stop
    if (!stop?.taps.length) return false
    const decision: StopDecision =
      (await stop.promise(STOP, { ...info, text: this.#text, continued: this.#continued })) ?? STOP
    const max = this.deps.maxStopContinuations ?? 3
    const verdict = afterStop(decision, this.#continued, max)
    if (verdict === 'stop' || decision.kind !== 'continue') return false
    if (verdict === 'bounded') {
      this.deps.logger.warn(
        `run ${this.id}: a stop tap asked to continue again (${decision.reason}); the run ends after ${max} continuations (agent-loop's maxStopContinuations)`,
      )
      return false
    }
    this.#continued++
    this.transcript?.write('stop-continued', { turn: info.turn, reason: decision.reason })
    this.#push({ role: 'user', content: decision.reason })
    return true
  }

  /** toolBatch's taps see the turn's calls and results; what they return joins the conversation. */
  async #afterBatch(calls: ModelToolCall[], results: StepResult[], info: TurnInfo) {
    const batch = this.deps.hooks.toolBatch
    if (!batch?.taps.length) return
    const pairs = calls.map((call, i) => ({ call, result: results[i]! }))
    const added = (await batch.promise([], { ...info, calls: pairs })) ?? []
    const text = added.filter(Boolean).join('\n\n')
    if (text) this.#push({ role: 'user', content: text })
  }

  /** Consecutive safe calls run together; an exclusive (or unknown) call waits for them and runs alone. */
  async #runCalls(
    calls: ModelToolCall[],
    offered: Map<string, RegisteredTool>,
    info: TurnInfo,
  ): Promise<StepResult[]> {
    const results: StepResult[] = []
    let batch: Array<Promise<void>> = []
    for (const [i, call] of calls.entries()) {
      const run = () =>
        this.#step(call, offered.get(call.name), info).then((r) => void (results[i] = r))
      if (offered.get(call.name)?.concurrency === 'safe') batch.push(run())
      else {
        await Promise.all(batch)
        batch = []
        await run()
      }
    }
    await Promise.all(batch)
    results.forEach((r, i) =>
      this.#push({
        role: 'tool',
        toolCallId: calls[i]!.id,
        name: r.name,
        content: r.text,
        ...(r.ok ? {} : { isError: true }),
      }),
    )
    if (this.signal.aborted) throw this.signal.reason
    return results
  }

  async #step(
    call: ModelToolCall,
    tool: RegisteredTool | undefined,
    info: TurnInfo,
  ): Promise<StepResult> {
    const step: StepInfo = { ...info, call }
    this.emit({ type: 'tool-call', turn: info.turn, id: call.id, name: call.name, args: call.args })
    this.transcript?.write('tool-call', {
      turn: info.turn,
      id: call.id,
      name: call.name,
      args: call.args,
      tool: tool && {
        source: tool.source,
        owner: tool.owner,
        registration: tool.id,
        hash: toolHash(tool),
      },
    })
    let result: StepResult
    try {
      await this.deps.hooks.beforeStep.promise(step)
      result = await this.#callTool(call, tool, info)
    } catch (err) {
      result = {
        id: call.id,
        name: call.name,
        status: 'HOOK_FAILED',
        ok: false,
        text: `Error (HOOK_FAILED): ${messageOf(err)}`,
        durationMs: 0,
      }
    }
    try {
      await this.deps.hooks.afterStep.promise(step, result)
    } catch (err) {
      this.deps.logger.warn(`an afterStep tap failed: ${messageOf(err)}`)
    }
    this.emit({ type: 'tool-result', turn: info.turn, result })
    this.transcript?.write('tool-result', { turn: info.turn, ...result })
    return result
  }

  async #callTool(
    call: ModelToolCall,
    tool: RegisteredTool | undefined,
    info: TurnInfo,
  ): Promise<StepResult> {
    const fail = (status: StepResult['status'], text: string): StepResult => ({
      id: call.id,
      name: call.name,
      status,
      ok: false,
      text: `Error (${status}): ${text}`,
      durationMs: 0,
    })
    if (!tool) {
      // a tool not offered: a hidden one may be called by name; a deferred one is found first
      const known = this.options.layer.list().find((t) => t.name === call.name)
      const search = this.deps.toolSearch?.()
      const refusal =
        known && search
          ? search.refusal(known, this.#caller)
          : `there is no tool "${call.name}" among the tools offered this turn`
      if (refusal !== undefined) return fail('UNKNOWN_TOOL', refusal)
      tool = known!
    }
    // never mid-turn: a tool reloaded since the turn began is not the one the model was shown
    if (this.options.layer.list().find((t) => t.name === call.name)?.id !== tool.id)
      return fail(
        'UNLOADED',
        `${call.name} was reloaded or removed during this turn; its current version, if any, is offered from the next turn`,
      )
    if (typeof call.args === 'string')
      return fail('INVALID_ARGS', `the arguments are not a JSON object: ${call.args.slice(0, 200)}`)
    const onProgress = (progress: ProgressEvent) =>
      this.emit({ type: 'tool-progress', turn: info.turn, id: call.id, name: call.name, progress })
    const result = await this.options.layer.call(call.name, call.args, {
      signal: this.signal,
      caller: this.#caller,
      onProgress,
      ...(this.options.asker && { asker: this.options.asker }),
      ...(this.#trace && { trace: this.#trace }),
    })
    if (result.task) this.#track(result.task)
    return {
      id: call.id,
      name: call.name,
      status: result.status,
      ok: result.ok,
      text: resultText(result),
      durationMs: result.durationMs,
    }
  }

  /** A background task of this run: its result joins the conversation at the next turn after it ends. */
  #track(task: string) {
    this.#pending.add(task)
    this.deps.tasks.wait(task).then((info) => {
      if (!info || !this.#pending.delete(task)) return
      this.#finished.push(info)
      this.#wake?.()
    })
  }

  #deliver() {
    for (const info of this.#finished.splice(0)) {
      const result = info.result
      const text =
        `[background task ${info.id} (${info.tool}) finished: ${info.status}]\n${result ? resultText(result) : ''}`.trim()
      this.emit({ type: 'task-done', task: info.id, tool: info.tool, status: info.status })
      this.transcript?.write('task-done', { task: info.id, tool: info.tool, status: info.status })
      this.#push({ role: 'user', content: text })
    }
  }

  /** The model answered but tasks of this run still run: wait for one to end (or the run to end). */
  async #waitForTask() {
    if (this.#finished.length) return
    await new Promise<void>((resolve) => {
      const done = () => {
        this.#wake = undefined
        this.signal.removeEventListener('abort', done)
        resolve()
      }
      this.#wake = done
      this.signal.addEventListener('abort', done, { once: true })
    })
    if (this.signal.aborted) throw this.signal.reason
  }

  #checkBudget() {
    const { maxTurns, maxTokens, maxMs } = this.options.budget
    if (this.#turn >= maxTurns)
      throw new Stop('budget', `the turn budget is spent (${maxTurns} turns)`)
    const tokens = this.#usage.inputTokens + this.#usage.outputTokens
    if (tokens >= maxTokens)
      throw new Stop('budget', `the token budget is spent (${tokens} of ${maxTokens} tokens)`)
    if (performance.now() - this.#started >= maxMs)
      throw new Stop('budget', `the time budget is spent (${maxMs} ms)`)
    if (this.signal.aborted) throw this.signal.reason
  }

  #count(response: ModelResponse) {
    this.addUsage({ ...response.usage, requests: 1 })
  }

  /** Counts a model's usage against this run: its own requests, and its subagents' and verifier's. */
  addUsage(usage: RunUsage | (ModelResponse['usage'] & { requests: number })) {
    this.#usage.requests += usage.requests
    this.#usage.inputTokens += usage.inputTokens
    this.#usage.outputTokens += usage.outputTokens
    if (usage.costUsd !== undefined)
      this.#usage.costUsd = (this.#usage.costUsd ?? 0) + usage.costUsd
  }

  /** Messages are frozen: a tap that wants another conversation returns a new request, it cannot edit the run's history. */
  #push(message: ChatMessage) {
    this.#messages.push(Object.freeze(message))
    this.transcript?.write('message', { turn: this.#turn, message })
  }

  /** How the run ended, from what stopped it: a budget, the caller's cancel, the time budget, or an error. */
  #ending(err: unknown): { status: RunStatus; reason: string } {
    if (err instanceof Stop) return { status: err.status, reason: err.message }
    if (this.options.cancelSignal.aborted)
      return {
        status: 'cancelled',
        reason: reasonText(this.options.cancelSignal.reason) ?? 'cancelled',
      }
    if (this.signal.aborted)
      return {
        status: 'budget',
        reason: `the time budget is spent (${this.options.budget.maxMs} ms)`,
      }
    // a catalogue error keeps its code in the reason: REPLAY_MISMATCH, MODEL_FAILED, …
    return {
      status: 'failed',
      reason: err instanceof YokeError ? `${err.code} ${err.message}` : messageOf(err),
    }
  }
}

function reasonText(reason: unknown): string | undefined {
  if (reason === undefined) return undefined
  return reason instanceof Error
    ? reason.name === 'AbortError'
      ? 'cancelled'
      : reason.message
    : String(reason)
}

export function toModelTool(tool: RegisteredTool): ModelTool {
  return { name: tool.name, description: tool.description ?? '', inputSchema: tool.inputSchema }
}

/** What the model reads of a result: its text, and for a failure the status, the message and the hint. */
export function resultText(result: ToolResult): string {
  const body = result.content.map(partText).join('\n')
  if (result.ok) return body
  const error = result.error
    ? `Error (${result.status}): ${result.error.message}${result.error.hint ? `\nHint: ${result.error.hint}` : ''}`
    : `Error (${result.status})`
  return body ? `${error}\n${body}` : error
}
