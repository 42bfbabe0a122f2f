/**
 * @module claude-hooks/claude-hooks
 * One running claude-hooks instance: its hook tables (the inline config's, then each file's last
 * good read), the runs the agent loop told it about, the runs a hook asked to end, and the
 * PreToolUse context waiting for each call's result. Its methods are the runtime taps; what the
 * replies decide is tool-events.ts's (pure), what the session events do is agent.ts's.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import {
  messageOf,
  readConfigText,
  type Logger,
  type RuntimeApi,
  type PostDecision,
  type PreDecision,
  type ToolCall,
  type ToolOutput,
  type ToolResult,
  type WatchHandler,
} from 'yoke'
import type { AgentApi } from '../agent-loop/api.ts'
import type { ModelClient } from '../models/api.ts'
import { readHooks, readHooksFile, type FiredEvent, type HookEntry } from './format.ts'
import { runHandler, type HookJson, type Reply, type RunEnv } from './handlers.ts'
import { Rewakes } from './rewake.ts'
import { configChangeBlocks, FileEvents } from './files.ts'
import { HOOK_CALLER, hookServices } from './services.ts'
import { postAdditions, preToolUse, textOf, withText } from './tool-events.ts'
import { claudeTranscriptOf } from './transcript.ts'

/** Failures that are no execution's (the call never ran, or was cancelled): no PostToolUseFailure. */
const NOT_RUN = new Set([
  'UNKNOWN_TOOL',
  'INVALID_ARGS',
  'DENIED',
  'SCOPE_UNKNOWN',
  'ABORTED',
  'UNLOADED',
  'BLOCKED',
  'PLUGIN_WAITING',
  'CAPABILITY_WITHDRAWN',
])

/** One fired event's replies, with the handler each came from. */
export type Replies = Array<{ entry: HookEntry; reply: Reply }>

/** What the session taps (agent.ts) read: the current handlers, the runs, and how to fire. */
export interface Hooks {
  fire(
    event: FiredEvent,
    subjects: string[],
    input: Record<string, unknown>,
    call?: ToolCall,
  ): Promise<Replies>
  has(event: FiredEvent): boolean
  /** whether the instance has any handler now */
  any(): boolean
  /** a run's transcript, known from its runStart; `tools`: the tool calls of its current turn */
  runs: Map<string, RunState>
  /** runs an agent handler started: no hook fires for them or their calls */
  hookRuns: Set<string>
  /** what asyncRewake handlers woke a run with (taken at its stop) */
  takeRewakes(runId: string): string[]
  settleRewakes(runId: string): Promise<void>
  /** what prompt, agent and mcp_tool handlers reach (set by the child instances that inject them) */
  services: HookServices
  /** runs a hook asked to end (`continue: false` from a tool event), with the reason */
  stopRequests: Map<string, string>
  projectDir: string
  logger: Logger
  prefix: string
}

export interface RunState {
  transcript?: string
  /** how many tool calls the run's current turn asked for (defer needs one) */
  tools?: number
}

/** The services the child instances hand over, while they are there. */
export interface HookServices {
  /** the main model, when one is composed (read at each call) */
  model?: () => ModelClient | undefined
  agent?: AgentApi
  runtime?: RuntimeApi
}

/** The config the instance reads (index.ts's schema, validated). */
export interface ClaudeHooksOptions {
  hooks?: Record<string, unknown>
  files: string[]
  pluginRoot?: string
  source?: string
  env: string[]
  toolNames: Record<string, string[]>
}

/** What the instance needs of its context (a test hands a plain object). */
export interface ClaudeHooksHost {
  logger: Logger
  projectDir: string
  /** watches files; returns the way to stop */
  watch?(paths: string[], handler: WatchHandler): (() => unknown) | void
}

export class ClaudeHooks implements Hooks {
  readonly runs = new Map<string, RunState>()
  readonly hookRuns = new Set<string>()
  readonly services: HookServices = {}
  readonly stopRequests = new Map<string, string>()
  readonly projectDir: string
  /** `source: ` before every log line (which plugin or settings file the hooks came from) */
  readonly prefix: string
  readonly logger: Logger
  /** the handlers of each source: the inline config, then each file (its last good read) */
  readonly #sources = new Map<string, HookEntry[]>()
  /** the hooks files, absolute */
  readonly #files: string[]
  /** additionalContext from PreToolUse, by call: it joins the result the model sees */
  readonly #preContext = new Map<string, string[]>()
  /** calls whose result postExecute saw (a failure it did not see is told at its result) */
  readonly #posted = new Set<string>()
  readonly #runEnv: RunEnv

  constructor(
    private readonly options: ClaudeHooksOptions,
    private readonly host: ClaudeHooksHost,
  ) {
    this.projectDir = host.projectDir
    this.logger = host.logger
    this.prefix = options.source ? `${options.source}: ` : ''
    this.#files = options.files.map((f) => resolve(this.projectDir, f))
    this.#runEnv = {
      projectDir: this.projectDir,
      pluginRoot: options.pluginRoot,
      env: options.env,
      services: hookServices(this),
    }
  }

  /** Reads the inline hooks and every file, and watches the files. */
  start(): this {
    if (this.options.hooks) {
      const read = readHooks(this.options.hooks, 'config "hooks"')
      for (const p of read.problems) this.#log(p.level, p.message)
      this.#sources.set('config', read.entries)
    }
    for (const file of this.#files) this.readFile(file)
    if (this.#files.length)
      this.host.watch?.(this.#files, (changes) => {
        for (const file of new Set(changes.map((c) => resolve(c.path))))
          if (this.#files.includes(file)) void this.#changed(file)
      })
    this.#fileEvents.watch()
    return this
  }

  /** A hooks file changed: ConfigChange may keep its hooks (files.ts); else it is read again. */
  async #changed(file: string): Promise<void> {
    if (await configChangeBlocks(this, file)) return
    this.readFile(file)
    this.#fileEvents.watch()
  }

  /** FileChanged's watch of the files its matchers name (files.ts) */
  readonly #fileEvents = new FileEvents(this, (paths, handler) => this.host.watch?.(paths, handler))

  /** Stops watching the FileChanged files (the instance is going). */
  close(): void {
    this.#fileEvents.close()
  }

  /** Reads one hooks file; a broken one keeps its last good hooks (a missing one has none). */
  readFile(file: string): void {
    if (!existsSync(file)) {
      this.#sources.set(file, [])
      return
    }
    let text: string
    try {
      text = readConfigText(file)
    } catch (err) {
      const message = messageOf(err)
      // the reader's message names the file already (CONFIG_TOO_LARGE, CONFIG_NOT_TEXT, …)
      const what = message.includes(file) ? message : `${file}: ${message}`
      this.#log('error', `${what}; its last good hooks are kept`)
      return
    }
    const read = readHooksFile(text, file)
    for (const p of read.problems) this.#log(p.level, p.message)
    if (read.unreadable && this.#sources.has(file)) return // keep its last good hooks
    this.#sources.set(file, read.entries)
  }

  /** every handler now, in source order */
  entries(): HookEntry[] {
    return [...this.#sources.values()].flat()
  }

  any(): boolean {
    return this.entries().length > 0
  }

  has(event: FiredEvent): boolean {
    return this.entries().some((e) => e.event === event)
  }

  /**
   * Runs the handlers of `event` that match (and whose `if` takes `call`): identical ones once,
   * in parallel; async ones unawaited.
   */
  async fire(
    event: FiredEvent,
    subjects: string[],
    input: Record<string, unknown>,
    call?: ToolCall,
  ): Promise<Replies> {
    const seen = new Set<string>()
    const names = call ? this.subjects(call) : []
    // identical handlers run once (Claude Code dedupes them); matching ones run in parallel
    const matching = this.entries().filter((e) => {
      if (e.event !== event || !e.matches(subjects)) return false
      if (e.rule && !(call && e.rule({ names, args: call.args, cwd: this.projectDir })))
        return false
      return !seen.has(e.key) && !!seen.add(e.key)
    })
    const payload = { ...input, hook_event_name: event }
    const run = async (entry: HookEntry) => {
      // runHandler answers every failure as an error reply: a hook's failure never blocks
      const reply = await runHandler(entry, payload, this.#runEnv, call)
      if (reply.kind === 'error')
        this.#log('warn', `hook ${entry.label} failed: ${reply.why}; it does not block (${event})`)
      if (reply.kind === 'ok' && reply.warning)
        this.#log('warn', `hook ${entry.label}: ${reply.warning} (${event})`)
      // Claude Code shows it to the user as a warning (hookify's only words on a deny are here)
      if (reply.kind === 'ok' && reply.json?.systemMessage)
        this.#log('warn', `hook ${entry.label}: ${reply.json.systemMessage}`)
      return { entry, reply }
    }
    const background = (e: HookEntry) =>
      e.handler.type === 'command' && (e.handler.async || e.handler.asyncRewake)
    // async: no decision; asyncRewake: an exit 2 wakes the run with its stderr (or stdout)
    for (const e of matching)
      if (background(e)) this.#rewakes.started(event, String(input.session_id), run(e))
    return Promise.all(matching.filter((e) => !background(e)).map(run))
  }

  /** asyncRewake handlers' wakes, by run (rewake.ts) */
  readonly #rewakes = new Rewakes(
    (runId) => this.runs.has(runId),
    (m) => this.#log('warn', m),
  )

  /** Waits for the run's asyncRewake handlers that still run (each bounded by its timeout). */
  settleRewakes(runId: string): Promise<void> {
    return this.#rewakes.settle(runId)
  }

  /** The texts asyncRewake handlers woke the run with (taken). */
  takeRewakes(runId: string): string[] {
    return this.#rewakes.take(runId)
  }

  /** A call the hooks leave alone: their own (an mcp_tool handler's), or an agent handler's run's. */
  skips(call: ToolCall): boolean {
    return call.caller === HOOK_CALLER || this.hookRuns.has(runOf(call))
  }

  /** PreToolUse on the runtime's preExecute: deny, defer, ask, allow, rewrite the arguments, add context. */
  async preExecute(decision: PreDecision, call: ToolCall): Promise<PreDecision> {
    if (!call.tool || !this.has('PreToolUse') || this.skips(call)) return decision
    const replies = await this.fire('PreToolUse', this.subjects(call), this.#callInput(call), call)
    const verdict = preToolUse(replies, call, (m) => this.#log('warn', m))
    if (verdict.kind === 'defer') {
      const deferred = this.#defer(call, verdict.reason)
      if (deferred) return deferred
      verdict.kind = 'none'
    }
    if (verdict.context.length) this.#preContext.set(call.id, verdict.context)
    if (verdict.stop) this.#stopRun(call, verdict.stop)
    if (verdict.kind === 'deny')
      return { kind: 'deny', reason: [verdict.reason, ...verdict.context].join('\n') }
    const args = verdict.args ?? decision.args
    if (verdict.kind === 'ask' && decision.kind !== 'deny')
      return { kind: 'ask', reason: verdict.reason, ...(args && { args }) }
    return { ...decision, ...(args && { args }) }
  }

  /**
   * `defer`: honoured, as in Claude Code's `-p`, for an agent run's call that is the only one of
   * its turn: the call does not run and the run ends after the turn, its reason naming the
   * deferred call (`tool_deferred`). Anything else: a warning, and the call goes on as undecided.
   */
  #defer(call: ToolCall, reason: string): PreDecision | undefined {
    const runId = call.caller.startsWith('agent:') ? runOf(call) : undefined
    const tools = runId === undefined ? undefined : this.runs.get(runId)?.tools
    if (runId === undefined || tools !== 1) {
      this.#log(
        'warn',
        `a PreToolUse hook deferred ${call.name}, which is ${runId === undefined ? 'no agent run’s call' : `one of ${tools ?? 'several'} calls of its turn`}; defer needs a run's only call, so it is ignored and the call goes on`,
      )
      return undefined
    }
    const use = JSON.stringify({ id: call.id, name: call.name, input: call.args })
    this.stopRequests.set(runId, `tool_deferred: ${use}`)
    return {
      kind: 'deny',
      reason: `deferred by a PreToolUse hook${reason ? ` (${reason})` : ''}; the run ends here and the call waits for its caller`,
    }
  }

  /** PostToolUse (successful results) or PostToolUseFailure (failed ones) on postExecute. */
  async postExecute(
    decision: PostDecision,
    call: ToolCall,
    result: ToolResult,
  ): Promise<PostDecision> {
    const added = this.#preContext.get(call.id) ?? []
    this.#preContext.delete(call.id)
    if (this.skips(call)) return decision
    this.#posted.add(call.id)
    let output: ToolOutput | undefined
    const event = result.ok ? 'PostToolUse' : 'PostToolUseFailure'
    if (this.has(event)) {
      const replies = await this.fire(
        event,
        this.subjects(call),
        this.#resultInput(call, result),
        call,
      )
      const post = postAdditions(replies)
      if (post.stop) this.#stopRun(call, post.stop)
      added.push(...post.added)
      if (result.ok) output = post.output
    }
    if (!added.length && output === undefined) return decision
    const base =
      output ??
      (decision.kind === 'replace'
        ? decision.result
        : { content: result.content, structured: result.structured, isError: !result.ok })
    return { kind: 'replace', result: withText(base, added) }
  }

  /** The input of PostToolUse and PostToolUseFailure: the call's, and its response or error. */
  #resultInput(call: ToolCall, result: ToolResult) {
    return result.ok
      ? {
          ...this.#callInput(call),
          tool_response: result.structured ?? textOf(result),
          duration_ms: result.durationMs,
        }
      : {
          ...this.#callInput(call),
          error:
            [result.error?.message, textOf(result)].filter(Boolean).join('\n') || result.status,
          is_interrupt: false,
          duration_ms: result.durationMs,
        }
  }

  /**
   * A call ended (a denied one never reaches postExecute): its PreToolUse context goes; a failure
   * of its execution that postExecute never saw (the body threw, or timed out) is told to
   * PostToolUseFailure, observe only (the result is final by now).
   */
  async ended(call: ToolCall, result: ToolResult): Promise<void> {
    this.#preContext.delete(call.id)
    if (this.#posted.delete(call.id) || result.ok || NOT_RUN.has(result.status)) return
    if (!call.tool || this.skips(call) || !this.has('PostToolUseFailure')) return
    await this.fire(
      'PostToolUseFailure',
      this.subjects(call),
      this.#resultInput(call, result),
      call,
    )
  }

  /**
   * A tap whose own failure (something unforeseen in an answer, a bug here) is logged and leaves
   * the decision as it came: Claude Code's hook errors never block.
   */
  nonBlocking<A extends unknown[], D>(
    event: FiredEvent,
    tap: (decision: D, ...rest: A) => Promise<D>,
  ): (decision: D, ...rest: A) => Promise<D> {
    return async (decision, ...rest) => {
      try {
        return await tap(decision, ...rest)
      } catch (err) {
        this.#log('warn', `the ${event} hooks failed: ${messageOf(err)}; they do not block`)
        return decision
      }
    }
  }

  /** A call's tool name and the Claude Code names a matcher may use for it. */
  subjects(call: ToolCall): string[] {
    const aliases = Object.entries(this.options.toolNames)
      .filter(([, names]) => names.includes(call.name))
      .map(([claude]) => claude)
    return [call.name, ...aliases]
  }

  /** the common fields of every input: the run a call belongs to (none: `yoke`), its transcript */
  sessionInput(call?: ToolCall) {
    const runId = call ? runOf(call) : 'yoke'
    return {
      session_id: runId,
      transcript_path: claudeTranscriptOf(runId)?.file ?? null,
      cwd: this.projectDir,
      permission_mode: 'default',
    }
  }

  /** a tool event's input: the common fields, the tool, its arguments and the call's id */
  #callInput(call: ToolCall) {
    return {
      ...this.sessionInput(call),
      tool_name: call.name,
      tool_input: call.args,
      tool_use_id: call.id,
    }
  }

  #stopRun(call: ToolCall, json: HookJson): void {
    if (this.stopRequests.has(runOf(call))) return // a deferred call's reason stays
    if (call.caller.startsWith('agent:'))
      this.stopRequests.set(call.caller.slice(6), json.stopReason ?? 'a hook stopped the run')
  }

  #log(level: 'info' | 'warn' | 'error', message: string): void {
    this.logger[level](`${this.prefix}${message}`)
  }
}

/** The run a call belongs to (`agent:<runId>`), else its caller. */
export function runOf(call: ToolCall): string {
  return call.caller.startsWith('agent:') ? call.caller.slice(6) : call.caller
}
