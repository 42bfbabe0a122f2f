/**
 * The web console's wire protocol: what its HTTP API answers and what its event stream sends. The
 * page (plugins/console/ui) and the server (plugins/console/server.ts) both code against these
 * types; they are plain JSON (no class, no import), so the page's bundler takes this file alone.
 * Stable: fields are added, never renamed; a section the server cannot fill is there and says why
 * (`unavailable`).
 *
 * Every route needs the launch token: `Authorization: Bearer TOKEN`, or `?token=TOKEN` on a GET
 * (the page's EventSource cannot set headers). A POST needs the header (not the query) and
 * `Content-Type: application/json`. Errors answer `ErrorBody` with the HTTP status.
 *
 * Routes:
 * - `GET /api/snapshot` → `Snapshot`
 * - `GET /api/events` → Server-Sent Events: `event: <kind>` and `data: <EventMap[kind]>` as JSON;
 *   `: ping` comments every 15 s; the first event is `hello`
 * - `POST /api/tools/:name/call` `ToolCallRequest` → `ToolCallResponse`
 * - `POST /api/approvals/:id` `ApprovalAnswerRequest` → `ApprovalAnswerResponse` (409 `ErrorBody`
 *   with `answeredBy` when another side answered first)
 * - `GET /api/runs/:id` → `RunDetail` (one agent run's steps, read from its transcript)
 * - `POST /api/runs/:id/replay` `{}` → `RunJob` (plays the run's cassette against the current tools)
 * - `POST /api/runs/:id/fork` `RunForkRequest` → `RunJob` (goes on from a step with the current model)
 * - `POST /api/runs/:id/cancel` `{}` → `RunJob` (a replay or fork this console started)
 * - anything else under `/` → the built page's static files (`/` is index.html)
 */

/** Every error answer. */
export interface ErrorBody {
  error: {
    /** `UNAUTHORIZED` (401), `FORBIDDEN` (403), `NOT_FOUND` (404), `BAD_REQUEST` (400),
     * `UNSUPPORTED_MEDIA_TYPE` (415), `CONFLICT` (409), `UNAVAILABLE` (503), or a yoke error code */
    code: string
    message: string
    /** what to do: "run `yoke console` to open the console with its token" */
    hint?: string
  }
  /** 409 on an approval: who answered first (`terminal`, `console`, the asker's name) */
  answeredBy?: string
}

// ---- the snapshot ----------------------------------------------------------------------------

export interface Snapshot {
  /** ISO time the snapshot was taken */
  at: string
  /** the console itself: version, project, the URL without the token */
  about: About
  doctor: DoctorSection
  instances: InstanceRow[]
  config: ConfigSection
  /** most recent last; kept across reloads (at most 100) */
  reloads: ReloadEntry[]
  tools: ToolsSection
  /** the most recent calls' spans, oldest first (at most 500) */
  calls: CallsSection
  servers: ServersSection
  skills: SkillsSection
  /** pending approvals and questions, oldest first */
  approvals: PendingApproval[]
  /** the project's agent runs (newest first) and the replays and forks started here */
  runs: RunsSection
}

export interface About {
  yokeVersion?: string
  /** the project's directory */
  project: string
  /** `http://127.0.0.1:PORT/` (the token is not repeated) */
  url: string
  /** the command that runs the composition (`dev`), absent when embedded */
  command?: string
  pid: number
  /** ISO time the console started listening */
  since: string
}

/** A part the server could not fill, and why (a plugin that is not in the composition…). */
export interface Unavailable {
  unavailable?: string
}

/** One check, as `yoke doctor` prints it. */
export interface DoctorCheck {
  level: 'ok' | 'warn' | 'error'
  /** what it is about: `instance`, `trust`, `tools`, a plugin's name */
  topic?: string
  message: string
  hint?: string
}

export interface DoctorSection extends Unavailable {
  checks: DoctorCheck[]
  /** the worst level among the checks */
  level: 'ok' | 'warn' | 'error'
}

/** the kernel's fiber states (`active`: running; `pending`: waits, `error` says for what) */
export type InstanceState = 'pending' | 'loading' | 'active' | 'failed' | 'disposed'

/** A yoke error as JSON: code, message, hint, where. */
export interface ErrorJson {
  code: string
  message: string
  hint?: string
  location?: string
}

export interface InstanceRow {
  /** `skills`, `mcp/github` (a child's key) */
  key: string
  plugin: string
  state: InstanceState | string
  /** the parent instance of a child */
  parent?: string
  /** why it waits or failed, with the fix in `hint` */
  error?: ErrorJson
  /** true when it waits for `yoke trust` */
  trust?: boolean
  /** the services it waits for (pending on a service nobody provides yet) */
  waitsFor?: string[]
  /** what it registered: services, taps, tools, watchers, timers (labels of its effects) */
  effects: EffectRow[]
}

export interface EffectRow {
  label: string
  children?: EffectRow[]
}

export interface ConfigSection extends Unavailable {
  /** the layers, lowest first */
  layers: Array<{ kind: string; file: string }>
  /** the effective config (values from the environment redacted) */
  value: unknown
  /** `plugins.agent.config.model` → `file:line:col` of the layer that set it */
  origins: Record<string, string>
}

export interface ReloadEntry {
  /** a counter within this console (stable id for the page's list) */
  seq: number
  at: string
  type: 'loaded' | 'reload'
  ok: boolean
  trigger: string[]
  added: string[]
  removed: string[]
  restarted: string[]
  unchanged: string[]
  failed: Array<{ instance: string; error: ErrorJson }>
  errors: ErrorJson[]
  durationMs: number
}

export interface ToolRow {
  name: string
  description?: string
  /** `native`, `mcp:<server>`, `exec:<package>` */
  source: string
  /** the instance that registered it */
  owner?: string
  /** the scope it lives in (`global` for most) */
  scope: string
  risk?: string
  /** hidden from listings (`deferred`, `hidden`), else `visible` */
  exposure: string
  inputSchema?: unknown
  version?: string
  hash?: string
  /** why the model cannot use it now (withdrawn, a pin it fails) */
  refused?: string
  metrics?: ToolMetrics
}

export interface ToolMetrics {
  called: number
  ok: number
  /** not-ok results by status code */
  errors: Record<string, number>
  p50?: number
  p95?: number
}

export interface ToolsSection extends Unavailable {
  tools: ToolRow[]
}

/** One span, flattened (from the telemetry plugin's in-process recorder). */
export interface SpanRow {
  traceId: string
  spanId: string
  parentSpanId?: string
  /** `execute_tool read_file`, `chat gpt-4.1`, `invoke_agent`, `reload` */
  name: string
  kind?: string
  /** epoch ms */
  start: number
  end?: number
  durationMs?: number
  status: 'ok' | 'error' | 'unset'
  /** the error code of a failed call */
  error?: string
  attributes: Record<string, string | number | boolean | string[]>
  /** the pipeline's decisions: pre-execute, approval, guards, post-execute, result */
  events: Array<{ name: string; at: number; attributes?: Record<string, unknown> }>
}

export interface CallsSection extends Unavailable {
  spans: SpanRow[]
}

export interface ServerRow {
  /** the mcp-client instance key */
  name: string
  /** `modern`, `legacy`, … */
  era?: string
  state: string
  capabilities?: unknown
  serverInfo?: { name?: string; version?: string }
  tools?: number
  /** the last lines of its stderr (stdio servers) */
  stderr: string[]
  /** requests paired with responses, secrets masked (empty while the client keeps none) */
  transcript: TranscriptEntry[]
  error?: ErrorJson
}

/** One exchange of an MCP server's transcript (McpTranscriptEntry of the mcp hub's api). */
export interface TranscriptEntry {
  id?: string | number
  method: string
  /** who sent the request or notification */
  from?: 'yoke' | 'server'
  at: number
  durationMs?: number
  request?: unknown
  response?: unknown
  error?: unknown
  /** its sender cancelled it before any answer came */
  cancelled?: boolean
  /** something in it was cut */
  truncated?: boolean
}

export interface ServersSection extends Unavailable {
  servers: ServerRow[]
}

export interface SkillRow {
  name: string
  description?: string
  version?: string
  /** where it comes from (a folder, a plugin) */
  source?: string
  /** in the catalog the model sees */
  listed: boolean
  /** why it is left out */
  why?: string
}

export interface SkillsSection extends Unavailable {
  /** the system prompt as the model would see it now: the skills catalog is its `skills` section */
  catalog?: string
  skills: SkillRow[]
}

export interface PendingApproval {
  /** the id to answer with */
  id: string
  kind: 'approval' | 'question'
  at: string
  /** approval: the tool and its arguments */
  tool?: string
  args?: unknown
  scope?: string
  caller?: string
  reason?: string
  /** question: who asks, form or url, the form's schema */
  from?: string
  mode?: 'form' | 'url'
  message?: string
  schema?: Record<string, unknown>
  url?: string
  /** who else was asked and can answer first (`terminal`) */
  racing?: string
}

/** One agent run, from its transcript's `start` and `end` lines. */
export interface RunRow {
  id: string
  task?: string
  /** `done`, `budget`, `cancelled`, `failed`; `unfinished`: no `end` yet (running, or killed) */
  status: string
  /** why it ended when not done (`REPLAY_MISMATCH …`, the budget reached) */
  reason?: string
  provider?: string
  model?: string
  lane?: string
  turns?: number
  /** epoch ms of its start */
  at?: number
  durationMs?: number
  /** the transcript's size */
  bytes: number
  /** the cassette its model exchanges were recorded to (`yoke run --record`) */
  cassette?: string
  /** why it cannot be replayed, with the fix (absent: it can) */
  noReplay?: string
  /** why it cannot be forked (absent: it can) */
  noFork?: string
  /** a replay or fork of another run */
  origin?: { kind: 'replay' | 'fork'; runId: string; turn?: number; by?: string }
  /** its transcript could not be read (file: why) */
  problem?: string
}

export interface RunsSection extends Unavailable {
  /** the transcripts' folder */
  dir: string
  /** newest first, at most the console's `maxRuns` */
  runs: RunRow[]
  /** runs in the folder beyond those listed */
  more?: number
  /** why a replay or a fork cannot start now (no agent loop, no model), with the fix */
  blocked?: { replay?: string; fork?: string }
  /** replays and forks started from this console, newest first */
  jobs: RunJob[]
}

/** One step of a run as the view shows it. */
export interface RunStep {
  turn: number
  kind: 'user' | 'text' | 'tool-call' | 'tool-result' | 'note'
  text?: string
  /** a tool's name */
  name?: string
  args?: unknown
  status?: string
  ok?: boolean
  durationMs?: number
  /** characters of `text` left out (the console's limit per step) */
  cut?: number
}

export interface RunDetail {
  run: RunRow
  /** the transcript's path */
  file: string
  steps: RunStep[]
  /** lines that could not be read: `file:line: why` */
  problems: string[]
  /** the console read only the first part of a large transcript: what it left out */
  truncated?: string
}

/** Where a new run (a replay or fork) first does something else than the run it comes from. */
export interface Departure {
  /** the index in `RunJob.compared`'s two lists */
  index: number
  oldTurn?: number
  newTurn?: number
  /** `text`, `tool call echo`, `tool result echo`, `end` */
  what: string
  /** `recorded "hey", now "> hey"` */
  difference: string
}

/** A replay or a fork the console started, and how it came out. */
export interface RunJob {
  /** the new run's id */
  id: string
  kind: 'replay' | 'fork'
  /** the run it comes from */
  of: string
  /** a fork's step: the turn it starts at */
  turn?: number
  /** running; matched (did what the old run did); departed; failed (could not run); cancelled */
  state: 'running' | 'matched' | 'departed' | 'failed' | 'cancelled'
  at: string
  /** the new run's end status and reason */
  status?: string
  reason?: string
  /** a replay whose request no longer matched the recording: the turn and the first difference */
  mismatch?: { turn: number; lane: string; difference: string }
  departure?: Departure
  /** the steps compared, old and new, from the step where the new run began (at most 200 each) */
  compared?: { old: RunStep[]; new: RunStep[] }
}

// ---- requests and answers ----------------------------------------------------------------------

export interface ToolCallRequest {
  args: Record<string, unknown>
  /** the runtime scope to call in (default: global) */
  scope?: string
}

/** The call's ToolResult as JSON, with the ids that find it in the timeline. */
export interface ToolCallResponse {
  result: {
    callId: string
    tool: string
    status: string
    ok: boolean
    content: unknown[]
    structured?: unknown
    error?: { code: string; message: string; hint?: string }
    truncated?: { bytes: number; spilled?: string }
    task?: string
    durationMs: number
  }
  /** the call's trace and span (when the telemetry plugin traced it) */
  traceId?: string
  spanId?: string
}

export type ApprovalAnswer = 'allow-once' | 'allow-session' | 'deny'

export interface ApprovalAnswerRequest {
  /** an approval: allow-once, allow-session, deny; a question: accept (with content), decline, cancel */
  answer: ApprovalAnswer | 'accept' | 'decline' | 'cancel'
  /** a question's form values */
  content?: Record<string, string | number | boolean | string[]>
  /** a denial's reason, carried to the caller's DENIED error (at most 1,000 characters) */
  reason?: string
}

export interface RunForkRequest {
  /** the turn to start at: the conversation before that turn's model request (1 = the task alone) */
  turn: number
}

export interface ApprovalAnswerResponse {
  ok: true
  id: string
  answer: string
}

// ---- events ------------------------------------------------------------------------------------

/** The event stream's kinds and their data. */
export interface EventMap {
  /** first event of every connection */
  hello: { at: string; about: About }
  /** an instance changed state */
  instance: InstanceRow
  /** a load or reload happened */
  reload: ReloadEntry
  /** tools were added or removed (the whole list again) */
  tools: ToolsSection
  /** a span ended */
  span: SpanRow
  /** an approval or question is pending */
  approval: PendingApproval
  /** a pending approval or question ended: answered (by whom) or given up */
  'approval-ended': { id: string; answer?: string; by?: string; why?: string }
  /** the doctor's checks changed (after a reload or a state change) */
  doctor: DoctorSection
  /** an MCP server changed (state, stderr) */
  server: ServerRow
  /** the config was applied again */
  config: ConfigSection
  /** the runs folder or a run changed (the whole section again) */
  runs: RunsSection
  /** a replay or fork started here began, or ended (with how it came out) */
  'run-job': RunJob
  /** a log record (warn and error) */
  log: { at: string; level: string; instance?: string; message: string; error?: ErrorJson }
}

export type EventKind = keyof EventMap
