/**
 * @module runtime/types
 * The shapes that cross the tool pipeline: what a tool is, what a call carries, the decisions
 * hooks return, and the one ToolResult every call ends with.
 */
import type { ValidateFunction } from 'ajv'
import type { ErrorCode } from '../errors.ts'

export type Risk = 'low' | 'medium' | 'high' | 'critical'
export type Concurrency = 'safe' | 'exclusive'
export type JsonSchema = Record<string, unknown>

/** One piece of output, in MCP's content shape. */
/** MCP's optional fields on any content block, kept as the source sent them */
type BlockExtras = { annotations?: Record<string, unknown>; _meta?: Record<string, unknown> }

export type ContentPart =
  | ({ type: 'text'; text: string } & BlockExtras)
  | ({
      type: 'image' | 'audio'
      data: string
      mimeType: string
      /**
       * a short text that stands for the media for readers of text only; a source that also puts
       * it as the text part right before this one marks that part as the same alternative (a
       * reader that takes the media itself, like an MCP gateway, leaves that part out)
       */
      alt?: string
    } & BlockExtras)
  | ({ type: 'resource'; resource: Record<string, unknown> } & BlockExtras)
  | ({
      type: 'resource_link'
      uri: string
      name?: string
      mimeType?: string
      title?: string
      description?: string
      size?: number
      icons?: Array<Record<string, unknown>>
    } & BlockExtras)

/** What a tool body may return: text, MCP-style content, or any JSON value (sent as JSON text). */
export type ToolOutput =
  string | { content: ContentPart[]; structured?: unknown; isError?: boolean } | unknown

export interface ProgressEvent {
  progress?: number
  total?: number
  message?: string
  [key: string]: unknown
}

/** What the body of a tool gets besides its arguments. */
export interface CallContext {
  /** aborted on caller abort, timeout, or the tool being unloaded */
  signal: AbortSignal
  progress(event: ProgressEvent): void
  /** calls `fn` if the call ends early: `signal` without an AbortController per call, for hot paths */
  onEnd(fn: (reason: Error) => void): void
  /** gives this call's concurrency slot back before the body ends: for a body that waits on other calls (a subagent) */
  release?(): void
  call: ToolCall
}

export interface ToolDefinition {
  /** `^[A-Za-z0-9_-]{1,64}$` */
  name: string
  description?: string
  /** its description where `tools` are listed in `scope` (the gateway's; run_code declares them) */
  describe?(scope: string, tools: readonly RegisteredTool[]): string
  /** JSON Schema for the arguments (default `{"type":"object"}`) */
  inputSchema?: JsonSchema
  outputSchema?: JsonSchema
  /** where it comes from, e.g. `native`, `exec:<package>`, `mcp:<server>` (default `native`) */
  source?: string
  /** high and critical ask for approval by default (policy plugin) */
  risk?: Risk
  /** `safe` calls may overlap; anything else runs alone */
  concurrency?: Concurrency | string
  /** overrides the runtime's default timeout */
  timeoutMs?: number
  /** returns at once with a task handle and runs on in the background */
  spawnOnly?: boolean
  spawnOnlyMessage?: string
  /** MCP tool annotations (readOnlyHint, destructiveHint, …): the gateway serves them as given */
  annotations?: Record<string, unknown>
  /** a display name (MCP's `title`), served as given */
  title?: string
  /** MCP's `execution` (e.g. `{ taskSupport: 'optional' }`), served as given */
  execution?: Record<string, unknown>
  execute(args: Record<string, unknown>, ctx: CallContext): ToolOutput | Promise<ToolOutput>
}

/** A registered tool: the definition plus who registered it. */
export interface RegisteredTool extends Readonly<Omit<ToolDefinition, 'concurrency'>> {
  readonly concurrency: Concurrency
  readonly source: string
  readonly risk: Risk
  readonly inputSchema: JsonSchema
  /** the instance that registered it */
  readonly owner: string
  /** unique per registration: a re-registered tool is a new tool (approval grants are forgotten) */
  readonly id: number
  /** the compiled input schema */
  readonly validate: ValidateFunction
}

/**
 * W3C trace context (https://www.w3.org/TR/trace-context/): what a call's far side (an MCP
 * server's `_meta`, an executable's `TRACEPARENT`) continues its trace from.
 */
export interface TraceContext {
  readonly traceparent: string
  readonly tracestate?: string
}

export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly args: Readonly<Record<string, unknown>>
  readonly scope: string
  readonly caller: string
  /** undefined for an unknown tool */
  readonly tool?: RegisteredTool
  /** who answers for this call before the global approval bridges (CallOptions.asker) */
  readonly asker?: Asker | undefined
  /**
   * the trace context the call runs under: a tracing plugin's span for it (runtime hook `trace`),
   * else the caller's (CallOptions.trace, a parent call's); a bridge sends it to its far side
   */
  readonly trace?: TraceContext | undefined
}

/** How a call is made: `ToolRuntime.call(name, args, options)`. */
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

/** `args`: new arguments for the call (a rewrite): checked against the schema, then seen by approval, guards and the body */
export type PreDecision = (
  { kind: 'allow' } | { kind: 'deny'; reason: string } | { kind: 'ask'; reason: string }
) & { args?: Record<string, unknown> }
export type PostDecision =
  { kind: 'accept' } | { kind: 'replace'; result: ToolOutput } | { kind: 'block'; reason: string }
/** Runs the body; `around` taps wrap it. */
export type Executor = (call: ToolCall, ctx: CallContext) => Promise<ToolOutput>

/** The stage that refused a DENIED call: a pre-execute tap (a policy rule), the approval, a guard. */
export type DeniedStage = 'pre-execute' | 'approval' | 'guard'

/** `ok`, or the catalogue code that says why not (a tool's own coded error keeps its code). */
export type ResultStatus = 'ok' | ErrorCode

export interface ToolResult {
  readonly callId: string
  readonly tool: string
  readonly status: ResultStatus
  readonly ok: boolean
  readonly content: readonly ContentPart[]
  readonly structured?: unknown
  /** when not ok: what went wrong and what to do; a DENIED call's also says which stage refused it */
  readonly error?: { code: string; message: string; hint?: string; stage?: DeniedStage }
  /** set when the output was over the limits: the whole output is in `spilled` */
  readonly truncated?: { bytes: number; spilled?: string }
  /** a spawnOnly call's background task */
  readonly task?: string
  readonly durationMs: number
}

// ---- who answers for a call (runtime/approval) ------------------------------------------------

export type ApprovalAnswer = 'allow-once' | 'allow-session' | 'deny'

/** An answer with words: a refusal's reason reaches the caller's DENIED error. */
export type ApprovalReply = { answer: ApprovalAnswer; reason?: string }

export interface ApprovalRequest {
  call: ToolCall
  reason: string
  signal: AbortSignal
  /** who else is asked at the same time, the first answer winning (a racing bridge's rivals); one that fails leaves it */
  racing?: readonly string[]
}

/** Why a racer's signal aborted: `by` answered first, with `answer` (an approval's, or a question's action). */
export type Outrun = Error & { by: string; answer: string }

/**
 * A question to the person (or agent) behind a call, from what the call reached — an MCP server's
 * elicitation: fill in a form, or open a URL and say when done. It is not an approval.
 */
export interface Question {
  /** who asks, for people: `MCP server "github"` */
  from: string
  /** the call it is about, when that is known */
  call?: ToolCall
  mode: 'form' | 'url'
  message: string
  /** form: a flat object schema of primitive fields */
  schema?: Record<string, unknown>
  url?: string
  /** the asking side's own id for it (MCP's elicitationId), passed on where the answerer takes one */
  id?: string
  signal: AbortSignal
  /** as ApprovalRequest's: who else is asked at the same time */
  racing?: readonly string[]
}

export interface QuestionAnswer {
  /** `decline`: a refusal; `cancel`: dismissed, or no one could answer */
  action: 'accept' | 'decline' | 'cancel'
  content?: Record<string, string | number | boolean | string[]>
}

/**
 * Who answers for one call, carried with it (CallOptions.asker) and inherited by the calls it
 * makes: the gateway's MCP session, the CLI's terminal. It is asked before any bridge.
 */
export interface Asker {
  name: string
  ask(request: ApprovalRequest): Promise<ApprovalAnswer | ApprovalReply>
  /** answers a question (absent: the bridges answer it) */
  answer?(question: Question): Promise<QuestionAnswer>
}
