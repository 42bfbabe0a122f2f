/**
 * @module agent-loop/agent-loop
 * One running agent-loop instance: its hooks, the runs in progress (each with its files, timers
 * and cancel), and the `spawn` tool that starts subagents inside them. `apply` builds it, registers
 * its close and starts it; a run's own turns are `Run`'s (loop.ts).
 */
import { resolve } from 'node:path'
import {
  AsyncSeriesHook,
  AsyncSeriesWaterfallHook,
  defineHooks,
  SyncWaterfallHook,
  GLOBAL,
  messageOf,
  type InjectedContext,
  type ScopeHandle,
  type TraceContext,
} from 'yoke'
import type { ModelRequest, ModelResponse } from '../models/api.ts'
import { CassetteWriter } from '../replay/api.ts'
import type {
  AgentApi,
  AgentEvent,
  AgentHooks,
  AgentRun,
  BatchInfo,
  Budget,
  ModelInfo,
  RunOptions,
  RunResult,
  RunStartInfo,
  StepInfo,
  StepResult,
  StopDecision,
  StopInfo,
  TurnInfo,
} from './api.ts'
import { EventQueue } from './events.ts'
import type { Lane } from './lanes.ts'
import { Run } from './loop.ts'
import { spawnTool, type LiveRun } from './spawn.ts'
import { newRunId, Transcript } from './transcript.ts'

/** What the instance reads of its config (index.ts's schema, validated). */
export interface AgentLoopOptions {
  budget: Budget
  maxTokensPerRequest?: number
  temperature?: number
  transcripts: string | false
  instructions?: string
  subProviders: Lane[]
  maxStopContinuations: number
  spawn: boolean
  subagentBudget: Budget
}

/** Internal run options: a subagent shares its parent's cassette. */
interface StartOptions extends RunOptions {
  cassette?: CassetteWriter
}

/** What one run holds while it goes: its cancel, its files, and how it reports. */
interface RunFrame {
  id: string
  cancel: AbortController
  signal: AbortSignal
  budget: Budget
  emit(event: AgentEvent): void
  transcript?: Transcript
  own?: CassetteWriter
  /** undoes the run's timer and listeners, once it settled */
  release(): void
}

export type AgentLoopContext = InjectedContext<['runtime', 'model', 'tasks', 'project']>

/** setTimeout's longest delay; a longer budget is as good as none */
const MAX_TIMER = 2 ** 31 - 1
const definedOnly = <T extends object>(o: T | undefined): Partial<T> =>
  Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>

/** The agent's hooks table (one per instance; a unit test builds one for a bare `Run`). */
export function defineAgentHooks(): AgentHooks {
  return defineHooks('agent', {
    /** the task as the user gave it; a tap may rewrite it (add context, expand a command) */
    userPrompt: new AsyncSeriesWaterfallHook<[string, TurnInfo]>(['prompt', 'info']),
    /** the request about to go to the model; a tap may rewrite messages, tools, anything */
    beforeModel: new AsyncSeriesWaterfallHook<[ModelRequest, TurnInfo]>(['request', 'info']),
    /** the model's answer with latency and usage so far; a tap may rewrite it */
    afterModel: new AsyncSeriesWaterfallHook<[ModelResponse, ModelInfo]>(['response', 'info']),
    /** a tool call is about to run (policy belongs in runtime.hooks.preExecute) */
    beforeStep: new AsyncSeriesHook<[StepInfo]>(['step']),
    afterStep: new AsyncSeriesHook<[StepInfo, StepResult]>(['step', 'result']),
    /** a turn is over: its tool results are in the conversation */
    turnEnd: new AsyncSeriesHook<[TurnInfo, ModelResponse]>(['info', 'response']),
    /** a run begins (before userPrompt): taps return context to put before the task (empty: none) */
    runStart: new AsyncSeriesWaterfallHook<[string, RunStartInfo]>(['context', 'info']),
    /** the model answered with no tool calls: a tap may say continue, with the reason as the next user message */
    stop: new AsyncSeriesWaterfallHook<[StopDecision, StopInfo]>(['decision', 'info']),
    /** a turn's tool calls all resolved: taps return texts the model reads before its next request */
    toolBatch: new AsyncSeriesWaterfallHook<[string[], BatchInfo]>(['added', 'info']),
    /** a run ended (its result is final; the transcript's `end` follows) */
    runEnd: new AsyncSeriesHook<[RunResult, TurnInfo]>(['result', 'info']),
    /** a run begins: a tracer starts its span from the caller's context and returns the run's */
    trace: new SyncWaterfallHook<[TraceContext | undefined, RunStartInfo]>(['trace', 'info']),
  })
}

export class AgentLoop {
  readonly hooks: AgentHooks = defineAgentHooks()
  /** runs in progress, by id: a spawn call finds its parent run (and its cassette) by the caller */
  readonly live = new Map<string, LiveRun>()
  /** where transcripts go (none: not written) */
  readonly #runsDir: string | undefined
  /** the cancel of each run in progress: close ends them */
  readonly #cancels = new Set<AbortController>()

  constructor(
    private readonly ctx: AgentLoopContext,
    private readonly options: AgentLoopOptions,
  ) {
    this.#runsDir =
      options.transcripts === false ? undefined : resolve(ctx.project.dir, options.transcripts)
  }

  /** Provides `agent`, the loop's own prompt section and, when configured, `spawn`. */
  start(): this {
    const { ctx, options } = this
    if (options.instructions)
      ctx
        .get('prompt')
        ?.register({ name: 'agent-instructions', order: 0, text: options.instructions })
    const api: AgentApi = {
      hooks: this.hooks,
      run: (task, o) => this.run(task, o),
      ...(this.#runsDir && { transcripts: this.#runsDir }),
    }
    ctx.provide('agent', api)
    if (options.spawn) this.#offerSpawn()
    return this
  }

  /** Ends every run in progress (the instance is going). */
  close(): void {
    for (const cancel of this.#cancels)
      cancel.abort(new Error('the agent-loop instance was unloaded'))
  }

  /** Starts a run; it always ends with one RunResult (a run that cannot start, `failed`). */
  run(task: string, options: StartOptions = {}): AgentRun {
    const frame = this.#frame(options)
    const queue = new EventQueue<AgentEvent>()
    const emit = frame.emit
    frame.emit = (event) => {
      emit(event)
      queue.push(event)
    }
    const settled = this.#launch(task, options, frame).finally(() => this.#settle(frame))
    settled.then((r) => frame.emit({ type: 'end', result: r })).finally(() => queue.end())
    return {
      id: frame.id,
      result: settled,
      cancel: (reason) => frame.cancel.abort(new Error(reason ?? 'cancelled')),
      [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    }
  }

  /** A run's cancel, deadline and listeners: the instance's end and the caller's signal cancel it. */
  #frame(options: StartOptions): RunFrame {
    const { ctx } = this
    const id = newRunId()
    const cancel = new AbortController()
    const deadline = new AbortController()
    const budget = { ...this.options.budget, ...definedOnly(options.budget) }
    const timer = setTimeout(
      () => deadline.abort(new Error(`the time budget is spent (${budget.maxMs} ms)`)),
      Math.min(budget.maxMs, MAX_TIMER),
    )
    this.#cancels.add(cancel)
    if (ctx.signal.aborted) cancel.abort(new Error('the agent-loop instance was unloaded'))
    const forward = () => cancel.abort(options.signal?.reason)
    if (options.signal?.aborted) forward()
    else options.signal?.addEventListener('abort', forward, { once: true })
    return {
      id,
      cancel,
      budget,
      signal: AbortSignal.any([cancel.signal, deadline.signal]),
      emit: (event) => {
        try {
          options.onEvent?.(event)
        } catch (err) {
          ctx.logger.warn(`an onEvent callback threw: ${messageOf(err)}`)
        }
      },
      release: () => {
        clearTimeout(timer)
        this.#cancels.delete(cancel)
        options.signal?.removeEventListener('abort', forward)
      },
    }
  }

  /** Opens the run's files and starts its turns; a run that cannot start resolves `failed`. */
  #launch(task: string, options: StartOptions, frame: RunFrame): Promise<RunResult> {
    const { ctx } = this
    const { id } = frame
    const lane = options.lane ?? 'main'
    const base = options.model ?? ctx.model
    try {
      // the cassette first: a bad --record path fails the run before a transcript exists
      frame.own = options.record ? new CassetteWriter(options.record) : undefined
      frame.transcript = this.#runsDir
        ? new Transcript(this.#runsDir, id, (err) =>
            ctx.logger.warn(`run ${id}: transcript writing stopped: ${messageOf(err)}`),
          )
        : undefined
      const cassette = frame.own ?? options.cassette
      const model = cassette ? cassette.wrap(base, lane) : base
      const layer = options.scope ?? ctx.runtime
      const scope = (options.scope as ScopeHandle | undefined)?.key ?? GLOBAL
      const { transcript, budget } = frame
      frame.emit({
        type: 'start',
        runId: id,
        task,
        transcript: transcript?.file,
        model: model.model,
        lane,
      })
      transcript?.write('start', {
        runId: id,
        task,
        scope,
        lane,
        provider: model.provider,
        model: model.model,
        budget,
        record: options.record,
        caller: options.caller,
        ...(options.history?.length && { history: options.history.length }),
        ...(options.origin && { origin: options.origin }),
      })
      const run = new Run(
        id,
        this.#loopDeps('cassette' in options),
        model,
        { ...options, layer, scope, lane, budget, cancelSignal: frame.cancel.signal },
        frame.signal,
        frame.emit,
        transcript,
      )
      this.live.set(id, { model: base, cassette, scope, addUsage: (usage) => run.addUsage(usage) })
      return run.execute(task)
    } catch (err) {
      const reason = `the run could not start: ${messageOf(err)}`
      frame.transcript?.write('end', { status: 'failed', reason })
      return Promise.resolve(failedToStart(id, reason, frame.transcript?.file))
    }
  }

  /** What a run reads of the instance. Only spawn passes a cassette key: a subagent's run. */
  #loopDeps(subagent: boolean) {
    const { ctx, options } = this
    return {
      tasks: ctx.tasks,
      prompt: () => ctx.get('prompt'),
      toolSearch: () => ctx.get('toolSearch'),
      hooks: this.hooks,
      logger: ctx.logger,
      maxTokensPerRequest: options.maxTokensPerRequest,
      temperature: options.temperature,
      maxStopContinuations: options.maxStopContinuations,
      subagent,
    }
  }

  /** A run is over: its timer and listeners go, and its files close (a failure is only logged). */
  #settle(frame: RunFrame): void {
    frame.release()
    this.live.delete(frame.id)
    for (const close of [() => frame.transcript?.close(), () => frame.own?.close()]) {
      try {
        close()
      } catch (err) {
        this.ctx.logger.warn(`run ${frame.id}: closing its files failed: ${messageOf(err)}`)
      }
    }
  }

  /**
   * Registers `spawn`; its schema lists the Claude Code plugins' subagent definitions, so a child
   * instance that waits for `claudePlugins` registers it again when they change.
   */
  #offerSpawn(): void {
    const { ctx, options } = this
    const deps = {
      lanes: options.subProviders,
      budget: options.subagentBudget,
      runtime: ctx.runtime,
      live: this.live,
      start: (task: string, o: StartOptions) => this.run(task, o),
      logger: ctx.logger,
      resolvePath: (p: string) => resolve(ctx.project.dir, p),
      models: () => ctx.get('models'),
      agents: () => ctx.get('claudePlugins'),
    }
    let unregister = ctx.runtime.register(spawnTool(deps))
    const renew = () => {
      void unregister()
      unregister = ctx.runtime.register(spawnTool(deps))
    }
    ctx.plugin(
      {
        name: 'agent-subagents',
        inject: ['claudePlugins'],
        apply(child: InjectedContext<['claudePlugins']>) {
          const listed = () =>
            JSON.stringify(child.claudePlugins.agents().map((a) => [a.name, a.description]))
          let seen = listed()
          child.tap(child.claudePlugins.hooks.change, 'agent-loop spawn', () => {
            if (listed() === seen) return
            seen = listed()
            renew()
          })
          renew()
          child.effect('spawn without the plugins’ agents', renew)
        },
      },
      {},
      { key: 'subagents' },
    )
  }
}

/** The one RunResult of a run that could not start. */
function failedToStart(runId: string, reason: string, transcript?: string): RunResult {
  return {
    runId,
    status: 'failed',
    reason,
    text: '',
    turns: 0,
    usage: { inputTokens: 0, outputTokens: 0, requests: 0 },
    durationMs: 0,
    transcript,
    messages: [],
  }
}
