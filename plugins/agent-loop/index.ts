/**
 * agent-loop: the agent as a plugin. Provides the `agent` service: `run(task, options)` returns
 * the run's events and its result. The loop meets everything else only through services: tools
 * and calls through `runtime`, the system prompt through `prompt`, the model through `model`
 * (any provider plugin, or `replay`), background tasks through `tasks`. A preset may swap this
 * plugin for any other that provides `agent`.
 */
import { resolve } from 'node:path'
import { z } from 'zod'
import {
  AsyncSeriesHook,
  AsyncSeriesWaterfallHook,
  defineHooks,
  definePlugin,
  GLOBAL,
  type InjectedContext,
  type ScopeHandle,
} from 'yoke'
import type { ModelRequest, ModelResponse } from '../models/api.ts'
import { CassetteWriter } from '../replay/api.ts'
import { EventQueue } from './events.ts'
import { laneSchema } from './lanes.ts'
import { Run } from './loop.ts'
import { spawnTool, type LiveRun } from './spawn.ts'
import { newRunId, Transcript } from './transcript.ts'
import type {
  AgentApi,
  AgentEvent,
  AgentHooks,
  AgentRun,
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

export type * from './api.ts'

const config = z
  .object({
    budget: z
      .object({
        maxTurns: z.number().int().positive().default(24),
        maxTokens: z.number().int().positive().default(500_000),
        maxMs: z
          .number()
          .int()
          .positive()
          .max(2 ** 31 - 1)
          .default(15 * 60_000),
      })
      .strict()
      .default({ maxTurns: 24, maxTokens: 500_000, maxMs: 15 * 60_000 }),
    /** max output tokens per model request (the provider's default when unset) */
    maxTokensPerRequest: z.number().int().positive().optional(),
    temperature: z.number().min(0).max(2).optional(),
    /** where transcripts go (relative: to the project); false: none */
    transcripts: z.union([z.string().min(1), z.literal(false)]).default('.yoke/runs'),
    /** a system prompt section of the loop's own (order 0) */
    instructions: z.string().optional(),
    /** models a subagent may run on; the `spawn` tool offers them, `goal_verifier` checks goals */
    subProviders: z.array(laneSchema).default([]),
    /** how many times one run's end may be turned into a continuation by `stop` taps */
    maxStopContinuations: z.number().int().min(0).max(50).default(3),
    /** register the `spawn` tool (subagents on the main model or a sub-provider lane) */
    spawn: z.boolean().default(true),
    /** a subagent's budget */
    subagentBudget: z
      .object({
        maxTurns: z.number().int().positive().default(12),
        maxTokens: z.number().int().positive().default(200_000),
        maxMs: z
          .number()
          .int()
          .positive()
          .default(5 * 60_000),
      })
      .strict()
      .default({ maxTurns: 12, maxTokens: 200_000, maxMs: 5 * 60_000 }),
  })
  .strict()
export type AgentLoopConfig = z.output<typeof config>

/** Internal run options: a subagent shares its parent's cassette. */
interface StartOptions extends RunOptions {
  cassette?: CassetteWriter
}

/** setTimeout's longest delay; a longer budget is as good as none */
const MAX_TIMER = 2 ** 31 - 1
const definedOnly = <T extends object>(o: T | undefined): Partial<T> =>
  Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>

export default definePlugin({
  name: 'agent-loop',
  inject: ['runtime', 'model', 'tasks', 'project'],
  provides: ['agent'],
  config,
  // a lane names a key of the user's and where it goes, as a provider's config does
  sendsSecrets: (cfg) =>
    cfg.subProviders.flatMap((lane, i) =>
      lane.apiKeyEnv === 'none' ? [] : [`subProviders.${i}.apiKeyEnv`, `subProviders.${i}.baseUrl`],
    ),
  apply(ctx, cfg) {
    const hooks: AgentHooks = defineHooks('agent', {
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
      /** a run ended (its result is final; the transcript's `end` follows) */
      runEnd: new AsyncSeriesHook<[RunResult, TurnInfo]>(['result', 'info']),
    })
    if (cfg.instructions)
      ctx.get('prompt')?.register({ name: 'agent-instructions', order: 0, text: cfg.instructions })
    const runsDir =
      cfg.transcripts === false ? undefined : resolve(ctx.project.dir, cfg.transcripts)
    /** runs in progress, by id: a spawn call finds its parent run (and its cassette) by the caller */
    const live = new Map<string, LiveRun>()

    const start = (task: string, options: StartOptions = {}): AgentRun => {
      const id = newRunId()
      const lane = options.lane ?? 'main'
      const cancel = new AbortController()
      const deadline = new AbortController()
      const budget = { ...cfg.budget, ...definedOnly(options.budget) }
      const timer = setTimeout(
        () => deadline.abort(new Error(`the time budget is spent (${budget.maxMs} ms)`)),
        Math.min(budget.maxMs, MAX_TIMER),
      )
      const ended = () => cancel.abort(new Error('the agent-loop instance was unloaded'))
      if (ctx.signal.aborted) ended()
      else ctx.signal.addEventListener('abort', ended, { once: true })
      const forward = () => cancel.abort(options.signal?.reason)
      if (options.signal?.aborted) forward()
      else options.signal?.addEventListener('abort', forward, { once: true })
      const signal = AbortSignal.any([cancel.signal, deadline.signal])

      const queue = new EventQueue<AgentEvent>()
      const emit = (event: AgentEvent) => {
        try {
          options.onEvent?.(event)
        } catch (err) {
          ctx.logger.warn(`an onEvent callback threw: ${(err as Error)?.message ?? err}`)
        }
        queue.push(event)
      }
      const warn = (err: unknown) =>
        ctx.logger.warn(`run ${id}: transcript writing stopped: ${(err as Error)?.message ?? err}`)
      let transcript: Transcript | undefined
      let own: CassetteWriter | undefined
      let result: Promise<RunResult>
      const base = options.model ?? ctx.model
      try {
        // the cassette first: a bad --record path fails the run before a transcript exists
        own = options.record ? new CassetteWriter(options.record) : undefined
        transcript = runsDir ? new Transcript(runsDir, id, warn) : undefined
        const cassette = own ?? options.cassette
        const model = cassette ? cassette.wrap(base, lane) : base
        const layer = options.scope ?? ctx.runtime
        const scope = (options.scope as ScopeHandle | undefined)?.key ?? GLOBAL
        emit({
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
        })
        const run = new Run(
          id,
          {
            tasks: ctx.tasks,
            prompt: () => ctx.get('prompt'),
            toolSearch: () => ctx.get('toolSearch'),
            hooks,
            logger: ctx.logger,
            maxTokensPerRequest: cfg.maxTokensPerRequest,
            temperature: cfg.temperature,
            maxStopContinuations: cfg.maxStopContinuations,
            // only spawn passes a cassette key (the parent's, or undefined): a subagent's run
            subagent: 'cassette' in options,
          },
          model,
          { ...options, layer, scope, lane, budget, cancelSignal: cancel.signal },
          signal,
          emit,
          transcript,
        )
        live.set(id, { model: base, cassette, scope, addUsage: (usage) => run.addUsage(usage) })
        result = run.execute(task)
      } catch (err) {
        // a run that could not start still ends with one RunResult
        const reason = `the run could not start: ${(err as Error)?.message ?? err}`
        transcript?.write('end', { status: 'failed', reason })
        result = Promise.resolve({
          runId: id,
          status: 'failed',
          reason,
          text: '',
          turns: 0,
          usage: { inputTokens: 0, outputTokens: 0, requests: 0 },
          durationMs: 0,
          transcript: transcript?.file,
          messages: [],
        })
      }
      const settled = result.finally(() => {
        clearTimeout(timer)
        ctx.signal.removeEventListener('abort', ended)
        options.signal?.removeEventListener('abort', forward)
        live.delete(id)
        for (const close of [() => transcript?.close(), () => own?.close()]) {
          try {
            close()
          } catch (err) {
            ctx.logger.warn(
              `run ${id}: closing its files failed: ${(err as Error)?.message ?? err}`,
            )
          }
        }
      })
      settled.then((r) => emit({ type: 'end', result: r })).finally(() => queue.end())
      return {
        id,
        result: settled,
        cancel: (reason) => cancel.abort(new Error(reason ?? 'cancelled')),
        [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
      }
    }

    const api: AgentApi = { hooks, run: (task, options) => start(task, options) }
    ctx.provide('agent', api)
    if (cfg.spawn) {
      const deps = {
        lanes: cfg.subProviders,
        budget: cfg.subagentBudget,
        runtime: ctx.runtime,
        live,
        start,
        logger: ctx.logger,
        resolvePath: (p: string) => resolve(ctx.project.dir, p),
        models: () => ctx.get('models'),
        agents: () => ctx.get('claudePlugins'),
      }
      let unregister = ctx.runtime.register(spawnTool(deps))
      // spawn's schema lists the plugins' subagent definitions: it is made again when they change
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
  },
})
