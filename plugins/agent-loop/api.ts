/**
 * The public face of agent-loop: the `agent` service contract, what a loop plugin provides
 * (agent-loop, or any replacement) and what the CLI, the MCP endpoint, the shell hooks and
 * embedders use, with the info its hooks pass (TurnInfo, ModelInfo, StepInfo, StepResult). A
 * replacement loop provides the same shape.
 */
import type { Asker, ProgressEvent, ResultStatus, ScopeHandle, TraceContext } from 'yoke'
import type {
  ChatMessage,
  ModelClient,
  ModelRequest,
  ModelResponse,
  ModelToolCall,
  Usage,
} from '../models/api.ts'

export interface Budget {
  /** model turns (requests) per run */
  maxTurns: number
  /** input + output tokens over the run */
  maxTokens: number
  /** wall time of the run */
  maxMs: number
}

export type RunStatus = 'done' | 'budget' | 'cancelled' | 'failed'

/** What every agent hook gets besides its subject: which run, turn, scope and lane. */
export interface TurnInfo {
  readonly runId: string
  readonly turn: number
  readonly scope: string
  /** `main`, or the sub-provider lane of a subagent */
  readonly lane: string
  readonly model: string
  readonly provider: string
  /** the run's transcript file, when it writes one */
  readonly transcript?: string
  /** a run started by another run's `spawn` (Claude Code's SubagentStop rather than Stop) */
  readonly subagent?: boolean
  /** the trace context the run's tool calls run under (a tracer's span for the run, else the caller's) */
  readonly trace?: TraceContext
}

/** runStart's info: the task, and whether the run continues a conversation (`history`). */
export interface RunStartInfo extends TurnInfo {
  readonly task: string
  readonly resumed: boolean
}

/**
 * What `stop` decides when the model has answered with no tool calls: end the run, or go on with
 * `reason` as the next user message (the loop bounds how often in a row).
 */
export type StopDecision = { kind: 'stop' } | { kind: 'continue'; reason: string }

/** stop's info: the final answer so far, and how many stops in a row were turned into continuations. */
export interface StopInfo extends TurnInfo {
  readonly text: string
  readonly continued: number
}

/** afterModel's info: the request's latency and the run's usage so far (this response included). */
export interface ModelInfo extends TurnInfo {
  readonly latencyMs: number
  readonly usage: RunUsage
}

export interface StepInfo extends TurnInfo {
  readonly call: ModelToolCall
}

export interface StepResult {
  readonly id: string
  readonly name: string
  readonly status: ResultStatus
  readonly ok: boolean
  readonly text: string
  readonly durationMs: number
}

/** toolBatch's info: every call of the turn and its result, in the model's order. */
export interface BatchInfo extends TurnInfo {
  readonly calls: ReadonlyArray<{ readonly call: ModelToolCall; readonly result: StepResult }>
}

export interface RunUsage extends Usage {
  requests: number
}

export interface RunResult {
  readonly runId: string
  readonly status: RunStatus
  /** why it ended when not `done`: the budget reached, the cancel reason, the error */
  readonly reason?: string
  /** the final answer (the last assistant text) */
  readonly text: string
  readonly turns: number
  readonly usage: RunUsage
  readonly durationMs: number
  /** the transcript file (JSONL), when the run wrote one */
  readonly transcript?: string
  /** the conversation, to continue it (`history` of the next run) */
  readonly messages: readonly ChatMessage[]
}

export type AgentEvent =
  | { type: 'start'; runId: string; task: string; transcript?: string; model: string; lane: string }
  | { type: 'turn'; turn: number; tools: number }
  | { type: 'text'; turn: number; delta: string }
  | { type: 'model'; turn: number; usage: Usage; stopReason: string; latencyMs: number }
  | { type: 'tool-call'; turn: number; id: string; name: string; args: unknown }
  | { type: 'tool-progress'; turn: number; id: string; name: string; progress: ProgressEvent }
  | { type: 'tool-result'; turn: number; result: StepResult }
  | { type: 'task-done'; task: string; tool: string; status: string }
  | { type: 'end'; result: RunResult }

export interface RunOptions {
  /** the runtime scope whose visible tools the model gets and where its calls run (default: global) */
  scope?: ScopeHandle
  signal?: AbortSignal
  /** the conversation so far (a chat session passes the previous run's `messages`) */
  history?: readonly ChatMessage[]
  /**
   * a conversation to go on from as it is (a fork of a recorded run at a step): no user message
   * is added for the task, which only names the run, and `runStart` and `userPrompt` do not run;
   * the transcript starts with these messages (turn 0), so the fork can be read and forked again
   */
  messages?: readonly ChatMessage[]
  /** where the run comes from (a replay or a fork of another run): written in its transcript's `start` */
  origin?: RunOrigin
  /** tee every model exchange to this JSONL cassette */
  record?: string
  budget?: Partial<Budget>
  /** another model (a sub-provider lane); default the `model` service */
  model?: ModelClient
  lane?: string
  /** who runs it, for tool calls' `caller` (default `agent`) */
  caller?: string
  /**
   * who answers the approvals and questions of the run's tool calls (the person at this CLI, this
   * MCP session), asked before the global approval bridges; a subagent's run asks the same one
   */
  asker?: Asker
  /** also called with each event (the iterator is the other way to read them) */
  onEvent?: (event: AgentEvent) => void
  /** the trace the run continues (a spawn call's, an MCP request's); its tool calls run under it */
  trace?: TraceContext
}

/** A run made from another: `replay` plays its cassette again, `fork` goes on from its step `turn`. */
export interface RunOrigin {
  kind: 'replay' | 'fork'
  /** the run it comes from */
  runId: string
  /** fork: the turn it starts at (the conversation before that turn's model request) */
  turn?: number
  /** who asked for it (`console`) */
  by?: string
}

/** A run in progress: iterate its events, await its result, or cancel it. */
export interface AgentRun extends AsyncIterable<AgentEvent> {
  readonly id: string
  readonly result: Promise<RunResult>
  cancel(reason?: string): void
}

export interface AgentApi {
  readonly hooks: AgentHooks
  /** where this loop writes its runs' transcripts (`<runId>.jsonl`); absent: it writes none */
  readonly transcripts?: string
  run(task: string, options?: RunOptions): AgentRun
}

/** The hooks a loop declares (agent-loop's are tapable hooks; see plugins/agent-loop/README.md). */
export interface AgentHooks {
  userPrompt: import('tapable').AsyncSeriesWaterfallHook<[string, TurnInfo]>
  beforeModel: import('tapable').AsyncSeriesWaterfallHook<[ModelRequest, TurnInfo]>
  afterModel: import('tapable').AsyncSeriesWaterfallHook<[ModelResponse, ModelInfo]>
  beforeStep: import('tapable').AsyncSeriesHook<[StepInfo]>
  afterStep: import('tapable').AsyncSeriesHook<[StepInfo, StepResult]>
  turnEnd: import('tapable').AsyncSeriesHook<[TurnInfo, ModelResponse]>
  /** optional for replacement loops: agent-loop has them (a tap checks before it taps) */
  runStart?: import('tapable').AsyncSeriesWaterfallHook<[string, RunStartInfo]>
  stop?: import('tapable').AsyncSeriesWaterfallHook<[StopDecision, StopInfo]>
  runEnd?: import('tapable').AsyncSeriesHook<[RunResult, TurnInfo]>
  /**
   * a turn's tool calls have all resolved, before the next model request: taps return texts to
   * add to the conversation (one user message after the results); a throw ends the run `failed`
   */
  toolBatch?: import('tapable').AsyncSeriesWaterfallHook<[string[], BatchInfo]>
  /**
   * a run begins: a tracing plugin starts the run's span from the caller's context (RunOptions.trace)
   * and returns the span's; the run's tool calls and its hooks' `info.trace` carry it
   */
  trace?: import('tapable').SyncWaterfallHook<[TraceContext | undefined, RunStartInfo]>
}

declare module 'yoke' {
  interface Services {
    agent: AgentApi
  }
}
