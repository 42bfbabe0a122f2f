/**
 * claude-hooks: Claude Code's hooks (a hooks.json, a settings.json's "hooks", or the same object
 * inline) run on yoke's hooks. Tool events tap the runtime (PreToolUse: preExecute; PostToolUse:
 * postExecute), so they apply to every tool source; the session events tap the agent loop's hooks
 * from a child instance that waits for `agent` (SessionStart: runStart, UserPromptSubmit:
 * userPrompt, Stop and SubagentStop: stop, SessionEnd: runEnd). Files are watched: an edit takes
 * effect at the next event, and a broken edit is reported at its line and keeps that file's last
 * good hooks. The format is Claude Code's by source (never guessed from what a program answers).
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { z } from 'zod'
import {
  definePlugin,
  readConfigText,
  type Context,
  type InjectedContext,
  type PostDecision,
  type PreDecision,
  type ToolCall,
  type ToolOutput,
  type ToolResult,
} from 'yoke'
import { tapAgent } from './agent.ts'
import { readHooks, readHooksFile, type FiredEvent, type HookEntry } from './format.ts'
import { cap, runHandler, type HookJson, type Reply, type RunEnv } from './handlers.ts'

const config = z
  .object({
    /** the object under "hooks" in a hooks.json or settings.json */
    hooks: z.record(z.string(), z.unknown()).optional(),
    /** hooks.json or settings.json files (relative: to the project); each is read, watched, and its "hooks" used */
    files: z.array(z.string().min(1)).default([]),
    /** CLAUDE_PLUGIN_ROOT for the handlers (a Claude Code plugin's directory) */
    pluginRoot: z.string().min(1).optional(),
    /** a label for logs (which plugin or settings file the hooks came from) */
    source: z.string().min(1).optional(),
    /** variables passed on to handlers beyond the essentials (Claude Code passes its whole environment) */
    env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/)).default([]),
    /** Claude Code tool names → the yoke tools a matcher naming them also matches */
    toolNames: z
      .record(z.string(), z.array(z.string().min(1)))
      .default({ Task: ['spawn'], Agent: ['spawn'] }),
  })
  .strict()
export type ClaudeHooksConfig = z.input<typeof config>

/** Default timeouts in seconds, as Claude Code's (600 s unless the event says otherwise). */
const TIMEOUT_S: Partial<Record<FiredEvent, number>> = { UserPromptSubmit: 30, SessionEnd: 1.5 }

/** One fired event's replies, with the handler each came from. */
export type Replies = Array<{ entry: HookEntry; reply: Reply }>

/** What the taps share: the current handlers, the runs the loop has told about, and how to fire. */
export interface Hooks {
  fire(event: FiredEvent, subjects: string[], input: Record<string, unknown>): Promise<Replies>
  has(event: FiredEvent): boolean
  /** a run's transcript, known from its runStart */
  runs: Map<string, { transcript?: string }>
  /** runs a hook asked to end (`continue: false` from a tool event), with the reason */
  stopRequests: Map<string, string>
  projectDir: string
  logger: Context['logger']
  prefix: string
}

export default definePlugin({
  name: 'claude-hooks',
  inject: ['runtime', 'project'],
  config,
  runsProjectCode: true, // its hook commands: from a project's config, after `yoke trust`
  apply(ctx, cfg) {
    const projectDir = ctx.project.dir
    const prefix = cfg.source ? `${cfg.source}: ` : ''
    const log = (level: 'info' | 'warn' | 'error', message: string) =>
      ctx.logger[level](`${prefix}${message}`)
    /** the handlers of each source: the inline config, then each file (its last good read) */
    const sources = new Map<string, HookEntry[]>()
    if (cfg.hooks) {
      const read = readHooks(cfg.hooks, 'config "hooks"')
      for (const p of read.problems) log(p.level, p.message)
      sources.set('config', read.entries)
    }
    const files = cfg.files.map((f) => resolve(projectDir, f))
    const readFile = (file: string) => {
      if (!existsSync(file)) {
        sources.set(file, [])
        return
      }
      let text: string
      try {
        text = readConfigText(file)
      } catch (err) {
        const message = (err as Error).message
        // the reader's message names the file already (CONFIG_TOO_LARGE, CONFIG_NOT_TEXT, …)
        const what = message.includes(file) ? message : `${file}: ${message}`
        log('error', `${what}; its last good hooks are kept`)
        return
      }
      const read = readHooksFile(text, file)
      for (const p of read.problems) log(p.level, p.message)
      if (read.unreadable && sources.has(file)) return // keep its last good hooks
      sources.set(file, read.entries)
    }
    files.forEach(readFile)
    if (files.length)
      ctx.watch(files, (changes) => {
        for (const file of new Set(changes.map((c) => resolve(c.path))))
          if (files.includes(file)) readFile(file)
      })

    const aliases = (tool: string) =>
      Object.entries(cfg.toolNames)
        .filter(([, names]) => names.includes(tool))
        .map(([claude]) => claude)
    const runEnv: RunEnv = { projectDir, pluginRoot: cfg.pluginRoot, env: cfg.env }
    const entries = () => [...sources.values()].flat()
    const hooks: Hooks = {
      projectDir,
      prefix,
      logger: ctx.logger,
      runs: new Map(),
      stopRequests: new Map(),
      has: (event) => entries().some((e) => e.event === event),
      async fire(event, subjects, input) {
        const seen = new Set<string>()
        // identical handlers run once (Claude Code dedupes them); matching ones run in parallel
        const matching = entries().filter((e) => {
          if (e.event !== event || !e.matches(subjects)) return false
          return !seen.has(e.key) && !!seen.add(e.key)
        })
        const payload = { ...input, hook_event_name: event }
        const run = async (entry: HookEntry) => {
          // runHandler answers every failure as an error reply: a hook's failure never blocks
          const reply = await runHandler(entry, payload, runEnv, TIMEOUT_S[event] ?? 600)
          if (reply.kind === 'error')
            log('warn', `hook ${entry.label} failed: ${reply.why}; it does not block (${event})`)
          if (reply.kind === 'ok' && reply.json?.systemMessage)
            log('info', `hook ${entry.label}: ${reply.json.systemMessage}`)
          return { entry, reply }
        }
        const now = matching.filter((e) => !(e.handler.type === 'command' && e.handler.async))
        for (const e of matching) if (!now.includes(e)) void run(e) // async: no decision
        return Promise.all(now.map(run))
      },
    }

    /** the common fields of every input, for a tool call (its caller names the run) */
    const callInput = (call: ToolCall) => {
      const runId = call.caller.startsWith('agent:') ? call.caller.slice(6) : call.caller
      return {
        session_id: runId,
        transcript_path: hooks.runs.get(runId)?.transcript ?? null,
        cwd: projectDir,
        permission_mode: 'default',
        tool_name: call.name,
        tool_input: call.args,
        tool_use_id: call.id,
      }
    }
    const stopRun = (call: ToolCall, json: HookJson) => {
      if (call.caller.startsWith('agent:'))
        hooks.stopRequests.set(call.caller.slice(6), json.stopReason ?? 'a hook stopped the run')
    }
    /** additionalContext from PreToolUse, by call: it joins the result the model sees */
    const preContext = new Map<string, string[]>()

    /**
     * A tap whose own failure (something unforeseen in an answer, a bug here) is logged and leaves
     * the decision as it came: Claude Code's hook errors never block.
     */
    const nonBlocking =
      <A extends unknown[], D>(event: FiredEvent, tap: (decision: D, ...rest: A) => Promise<D>) =>
      async (decision: D, ...rest: A): Promise<D> => {
        try {
          return await tap(decision, ...rest)
        } catch (err) {
          log(
            'warn',
            `the ${event} hooks failed: ${(err as Error)?.message ?? String(err)}; they do not block`,
          )
          return decision
        }
      }

    ctx.tap(
      ctx.runtime.hooks.preExecute,
      'claude-hooks PreToolUse',
      nonBlocking(
        'PreToolUse',
        async (decision: PreDecision, call: ToolCall): Promise<PreDecision> => {
          if (!call.tool || !hooks.has('PreToolUse')) return decision
          const replies = await hooks.fire('PreToolUse', [call.name, ...aliases(call.name)], {
            ...callInput(call),
          })
          const verdict = preToolUse(replies, call, (m) => log('warn', m))
          if (verdict.context.length) preContext.set(call.id, verdict.context)
          if (verdict.stop) stopRun(call, verdict.stop)
          if (verdict.kind === 'deny')
            return {
              kind: 'deny',
              reason: [verdict.reason, ...verdict.context].join('\n'),
            } as PreDecision
          const args = verdict.args ?? decision.args
          if (verdict.kind === 'ask' && decision.kind !== 'deny')
            return { kind: 'ask', reason: verdict.reason, ...(args && { args }) }
          return { ...decision, ...(args && { args }) }
        },
      ),
    )

    ctx.tap(
      ctx.runtime.hooks.postExecute,
      'claude-hooks PostToolUse',
      nonBlocking(
        'PostToolUse',
        async (
          decision: PostDecision,
          call: ToolCall,
          result: ToolResult,
        ): Promise<PostDecision> => {
          const added = preContext.get(call.id) ?? []
          preContext.delete(call.id)
          let output: ToolOutput | undefined
          if (result.ok && hooks.has('PostToolUse')) {
            const replies = await hooks.fire('PostToolUse', [call.name, ...aliases(call.name)], {
              ...callInput(call),
              tool_response: result.structured ?? textOf(result),
              duration_ms: result.durationMs,
            })
            for (const { reply } of replies) {
              if (reply.kind === 'block') added.push(reply.reason)
              if (reply.kind !== 'ok' || !reply.json) continue
              const { json } = reply
              if (json.continue === false) {
                stopRun(call, json)
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
        },
      ),
    )
    // a call denied before it ran never reaches postExecute: its PreToolUse context goes here
    ctx.tap(ctx.runtime.hooks.result, 'claude-hooks cleanup', async (call: ToolCall) => {
      preContext.delete(call.id)
    })

    ctx.plugin(
      {
        name: 'claude-hooks-agent',
        inject: ['agent'],
        apply: (child: InjectedContext<['agent']>) => tapAgent(child, hooks),
      },
      {},
      { key: 'agent-events' },
    )
  },
})

interface PreVerdict {
  kind: 'allow' | 'ask' | 'deny' | 'none'
  reason: string
  args?: Record<string, unknown>
  context: string[]
  stop?: HookJson
}

const RANK = { none: 0, allow: 1, ask: 2, deny: 3 } as const

/**
 * PreToolUse's replies as one verdict: exit 2 or `deny` denies (deny > ask > allow, as Claude
 * Code), `updatedInput` rewrites the arguments when it fits the tool's schema (the last one wins),
 * `additionalContext` joins the result, `continue: false` denies and ends the run.
 */
function preToolUse(replies: Replies, call: ToolCall, warn: (m: string) => void): PreVerdict {
  const verdict: PreVerdict = { kind: 'none', reason: '', context: [] }
  const reasons: Record<string, string[]> = { allow: [], ask: [], deny: [] }
  const raise = (kind: 'allow' | 'ask' | 'deny', reason: string | undefined) => {
    if (RANK[kind] > RANK[verdict.kind]) verdict.kind = kind
    if (reason) reasons[kind]!.push(cap(reason))
  }
  for (const { entry, reply } of replies) {
    if (reply.kind === 'block') raise('deny', reply.reason)
    if (reply.kind !== 'ok' || !reply.json) continue
    const { json } = reply
    const out = json.hookSpecificOutput ?? {}
    if (json.continue === false) {
      verdict.stop = json
      raise('deny', json.stopReason ?? `the hook ${entry.label} stopped the run`)
    }
    // the older top-level form: decision approve | block
    const decision =
      out.permissionDecision ??
      (json.decision === 'block' ? 'deny' : json.decision === 'approve' ? 'allow' : undefined)
    const reason = out.permissionDecisionReason ?? json.reason
    if (decision === 'deny' || decision === 'ask' || decision === 'allow')
      raise(
        decision,
        reason ?? (decision === 'allow' ? undefined : `the hook ${entry.label} says ${decision}`),
      )
    else if (decision !== undefined)
      warn(
        `hook ${entry.label}: permissionDecision ${JSON.stringify(decision)} is not one yoke takes (allow, deny, ask); ignored`,
      )
    if (typeof out.additionalContext === 'string') verdict.context.push(cap(out.additionalContext))
    if (out.updatedInput !== undefined) {
      const args = out.updatedInput
      const fits =
        args && typeof args === 'object' && !Array.isArray(args) && call.tool!.validate(args)
      if (fits) verdict.args = args as Record<string, unknown>
      else
        warn(
          `hook ${entry.label} returned an updatedInput that does not match ${call.name}'s input schema; the call keeps its own arguments`,
        )
    }
  }
  if (verdict.kind !== 'none')
    verdict.reason = reasons[verdict.kind]!.join('\n') || `a PreToolUse hook says ${verdict.kind}`
  return verdict
}

function textOf(result: ToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n')
}

/** `output` with `texts` appended as text parts (what the model reads after the tool's own output). */
function withText(output: ToolOutput, texts: string[]): ToolOutput {
  const parts = texts.map((text) => ({ type: 'text' as const, text }))
  if (typeof output === 'string') return { content: [{ type: 'text', text: output }, ...parts] }
  if (
    output &&
    typeof output === 'object' &&
    Array.isArray((output as { content?: unknown }).content)
  ) {
    const o = output as { content: unknown[] }
    return { ...o, content: [...o.content, ...parts] }
  }
  if (output === undefined) return { content: parts }
  return { content: [{ type: 'text', text: JSON.stringify(output) }, ...parts], structured: output }
}
