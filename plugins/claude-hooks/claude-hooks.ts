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
  type PostDecision,
  type PreDecision,
  type ToolCall,
  type ToolOutput,
  type ToolResult,
  type WatchHandler,
} from 'yoke'
import { readHooks, readHooksFile, type FiredEvent, type HookEntry } from './format.ts'
import { cap, runHandler, type HookJson, type Reply, type RunEnv } from './handlers.ts'
import { preToolUse, textOf, withText } from './tool-events.ts'

/** Default timeouts in seconds, as Claude Code's (600 s unless the event says otherwise). */
const TIMEOUT_S: Partial<Record<FiredEvent, number>> = { UserPromptSubmit: 30, SessionEnd: 1.5 }

/** One fired event's replies, with the handler each came from. */
export type Replies = Array<{ entry: HookEntry; reply: Reply }>

/** What the session taps (agent.ts) read: the current handlers, the runs, and how to fire. */
export interface Hooks {
  fire(event: FiredEvent, subjects: string[], input: Record<string, unknown>): Promise<Replies>
  has(event: FiredEvent): boolean
  /** a run's transcript, known from its runStart */
  runs: Map<string, { transcript?: string }>
  /** runs a hook asked to end (`continue: false` from a tool event), with the reason */
  stopRequests: Map<string, string>
  projectDir: string
  logger: Logger
  prefix: string
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
  watch?(paths: string[], handler: WatchHandler): void
}

export class ClaudeHooks implements Hooks {
  readonly runs = new Map<string, { transcript?: string }>()
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
  readonly #runEnv: RunEnv

  constructor(
    private readonly options: ClaudeHooksOptions,
    private readonly host: ClaudeHooksHost,
  ) {
    this.projectDir = host.projectDir
    this.logger = host.logger
    this.prefix = options.source ? `${options.source}: ` : ''
    this.#files = options.files.map((f) => resolve(this.projectDir, f))
    this.#runEnv = { projectDir: this.projectDir, pluginRoot: options.pluginRoot, env: options.env }
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
          if (this.#files.includes(file)) this.readFile(file)
      })
    return this
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

  has(event: FiredEvent): boolean {
    return this.entries().some((e) => e.event === event)
  }

  /** Runs the handlers of `event` that match: identical ones once, in parallel; async ones unawaited. */
  async fire(event: FiredEvent, subjects: string[], input: Record<string, unknown>) {
    const seen = new Set<string>()
    // identical handlers run once (Claude Code dedupes them); matching ones run in parallel
    const matching = this.entries().filter((e) => {
      if (e.event !== event || !e.matches(subjects)) return false
      return !seen.has(e.key) && !!seen.add(e.key)
    })
    const payload = { ...input, hook_event_name: event }
    const run = async (entry: HookEntry) => {
      // runHandler answers every failure as an error reply: a hook's failure never blocks
      const reply = await runHandler(entry, payload, this.#runEnv, TIMEOUT_S[event] ?? 600)
      if (reply.kind === 'error')
        this.#log('warn', `hook ${entry.label} failed: ${reply.why}; it does not block (${event})`)
      if (reply.kind === 'ok' && reply.json?.systemMessage)
        this.#log('info', `hook ${entry.label}: ${reply.json.systemMessage}`)
      return { entry, reply }
    }
    const now = matching.filter((e) => !(e.handler.type === 'command' && e.handler.async))
    for (const e of matching) if (!now.includes(e)) void run(e) // async: no decision
    return Promise.all(now.map(run))
  }

  /** PreToolUse on the runtime's preExecute: deny, ask, allow, rewrite the arguments, add context. */
  async preExecute(decision: PreDecision, call: ToolCall): Promise<PreDecision> {
    if (!call.tool || !this.has('PreToolUse')) return decision
    const replies = await this.fire('PreToolUse', this.#subjects(call), this.#callInput(call))
    const verdict = preToolUse(replies, call, (m) => this.#log('warn', m))
    if (verdict.context.length) this.#preContext.set(call.id, verdict.context)
    if (verdict.stop) this.#stopRun(call, verdict.stop)
    if (verdict.kind === 'deny')
      return { kind: 'deny', reason: [verdict.reason, ...verdict.context].join('\n') }
    const args = verdict.args ?? decision.args
    if (verdict.kind === 'ask' && decision.kind !== 'deny')
      return { kind: 'ask', reason: verdict.reason, ...(args && { args }) }
    return { ...decision, ...(args && { args }) }
  }

  /** PostToolUse on postExecute: what hooks add (and PreToolUse's context) joins the result. */
  async postExecute(
    decision: PostDecision,
    call: ToolCall,
    result: ToolResult,
  ): Promise<PostDecision> {
    const added = this.#preContext.get(call.id) ?? []
    this.#preContext.delete(call.id)
    let output: ToolOutput | undefined
    if (result.ok && this.has('PostToolUse')) {
      const replies = await this.fire('PostToolUse', this.#subjects(call), {
        ...this.#callInput(call),
        tool_response: result.structured ?? textOf(result),
        duration_ms: result.durationMs,
      })
      for (const { reply } of replies) {
        if (reply.kind === 'block') added.push(reply.reason)
        if (reply.kind !== 'ok' || !reply.json) continue
        const { json } = reply
        if (json.continue === false) {
          this.#stopRun(call, json)
          added.push(json.stopReason ?? 'a hook stopped the run')
        }
        if (json.decision === 'block') added.push(cap(json.reason ?? 'a hook blocked it'))
        const out = json.hookSpecificOutput
        if (typeof out?.additionalContext === 'string') added.push(cap(out.additionalContext))
        if (out?.updatedToolOutput !== undefined) output = out.updatedToolOutput as ToolOutput
      }
    }
    if (!added.length && output === undefined) return decision
    const base =
      output ??
      (decision.kind === 'replace'
        ? decision.result
        : { content: result.content, structured: result.structured, isError: !result.ok })
    return { kind: 'replace', result: withText(base, added) }
  }

  /** A call ended (a denied one never reaches postExecute): its PreToolUse context goes. */
  ended(call: ToolCall): void {
    this.#preContext.delete(call.id)
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
  #subjects(call: ToolCall): string[] {
    const aliases = Object.entries(this.options.toolNames)
      .filter(([, names]) => names.includes(call.name))
      .map(([claude]) => claude)
    return [call.name, ...aliases]
  }

  /** the common fields of every input, for a tool call (its caller names the run) */
  #callInput(call: ToolCall) {
    const runId = call.caller.startsWith('agent:') ? call.caller.slice(6) : call.caller
    return {
      session_id: runId,
      transcript_path: this.runs.get(runId)?.transcript ?? null,
      cwd: this.projectDir,
      permission_mode: 'default',
      tool_name: call.name,
      tool_input: call.args,
      tool_use_id: call.id,
    }
  }

  #stopRun(call: ToolCall, json: HookJson): void {
    if (call.caller.startsWith('agent:'))
      this.stopRequests.set(call.caller.slice(6), json.stopReason ?? 'a hook stopped the run')
  }

  #log(level: 'info' | 'warn' | 'error', message: string): void {
    this.logger[level](`${this.prefix}${message}`)
  }
}
