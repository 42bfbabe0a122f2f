/**
 * shell-hooks: octos-style hooks, programs run on tool events. Each hook is an argv (no shell)
 * that gets a JSON payload on stdin. `before_tool_call`: exit 0 allows, 1 denies with stdout as the
 * reason, 2 replaces the arguments with stdout's JSON object. `after_tool_call` observes. A hook
 * that fails or times out never blocks; three failures in a row disable it with a warning. Hooks
 * are taps on the runtime's hooks, so they apply to every tool source. The LLM events
 * (before_llm_call, after_llm_call, on_turn_end, user_prompt_submit) tap the agent loop's hooks
 * from a child instance that waits for the `agent` service, so they attach whenever a loop runs.
 */
import { realpathSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import { z } from 'zod'
import {
  definePlugin,
  nestsDeeper,
  type InjectedContext,
  type Logger,
  type PreDecision,
  type ToolCall,
  type ToolResult,
} from 'yoke'
import type { ModelInfo, TurnInfo } from '../agent-loop/api.ts'
import { HOOK_EVENT_NAMES } from '../exec-tools/api.ts'
import { envNameProblem, executableFormat, runProcess, toolEnv } from '../process/api.ts'
import type { ModelRequest, ModelResponse } from '../models/api.ts'

export const HOOK_EVENTS = HOOK_EVENT_NAMES

const hook = z
  .object({
    event: z.enum(HOOK_EVENTS),
    /** argv: the program and its arguments; `./` and `../` resolve from baseDir */
    command: z.array(z.string().min(1)).min(1),
    timeout_ms: z.number().int().positive().max(600_000).default(5000),
    /** exact tool names (tool events only); empty: every tool */
    tool_filter: z.array(z.string().min(1)).default([]),
    /** variables passed on beyond the essentials, as a package tool's `env` (the same rules) */
    env: z
      .array(z.string())
      .default([])
      .superRefine((names, issues) =>
        names.forEach((name, i) => {
          const problem = envNameProblem(name)
          if (problem)
            issues.addIssue({
              code: 'custom',
              message: `${JSON.stringify(name)}: ${problem}`,
              path: [i],
            })
        }),
      ),
  })
  .strict()
export type ShellHook = z.input<typeof hook>

const config = z
  .object({
    hooks: z.array(hook).default([]),
    /** where relative commands resolve (a package directory); default the project directory */
    baseDir: z.string().optional(),
  })
  .strict()

/** Tools whose arguments and results never leave yoke in a payload (octos's list). */
const SENSITIVE = new Set(['shell', 'write_file', 'read_file'])
const MAX_FIELD = 1024
/** a hook's stdout is read up to this; past it the hook is stopped (a failure, never a block) */
const MAX_STDOUT = 1024 * 1024
const BREAKER = 3

interface Outcome {
  code?: number
  stdout: string
  failure?: string
}

/** Events the agent loop brings: they attach once an `agent` service exists (a child instance waits for it). */
const AGENT_EVENTS = new Set([
  'before_llm_call',
  'after_llm_call',
  'on_turn_end',
  'user_prompt_submit',
])

export default definePlugin({
  name: 'shell-hooks',
  inject: ['runtime', 'project'],
  config,
  runsProjectCode: (cfg) => cfg.hooks.length > 0, // its programs wait for `yoke trust`
  apply(ctx, cfg) {
    const baseDir = cfg.baseDir ?? ctx.project.dir
    // a hook still running when the instance goes (an after_tool_call nobody awaits) is killed with it
    const hooks = cfg.hooks.map((h, index) => runner(h, index, baseDir, ctx.logger, ctx.signal))
    for (const h of hooks) {
      if (h.event === 'before_tool_call') {
        ctx.tap(
          ctx.runtime.hooks.preExecute,
          `shell-hook ${h.name}`,
          async (decision: PreDecision, call: ToolCall) => {
            if (!h.applies(call.name)) return decision
            const outcome = await h.run(
              { tool_name: call.name, tool_id: call.id, arguments: redactArgs(call) },
              [0, 1, 2],
            )
            if (outcome?.code === 1)
              return {
                kind: 'deny',
                reason: outcome.stdout.trim() || `the hook ${h.command} denied it`,
              } as PreDecision
            if (outcome?.code === 2) {
              // the runtime puts them into the call before approval and guards, so both see what will run
              const args = parseArgs(outcome.stdout)
              if (typeof args === 'object' && (!call.tool || call.tool.validate(args)))
                return { ...decision, args }
              ctx.logger.warn(
                `hook ${h.name} returned arguments that ${typeof args === 'string' ? args : `are not a JSON object matching ${call.name}'s schema`}; the call keeps its own`,
              )
            }
            return decision
          },
        )
      } else if (h.event === 'after_tool_call') {
        ctx.tap(
          ctx.runtime.hooks.result,
          `shell-hook ${h.name}`,
          async (call: ToolCall, result: ToolResult) => {
            if (!h.applies(call.name) || result.status === 'UNKNOWN_TOOL') return
            await h.run(
              {
                tool_name: call.name,
                tool_id: call.id,
                result: redactResult(call, result),
                success: result.ok,
                duration_ms: result.durationMs,
              },
              [0],
            )
          },
        )
      } else if (!AGENT_EVENTS.has(h.event))
        ctx.logger.info(
          `hook ${h.name}: ${h.event} has no source yet (spawn verification events); it waits`,
        )
    }
    const agentHooks = hooks.filter((h) => AGENT_EVENTS.has(h.event))
    if (agentHooks.length)
      ctx.plugin(
        {
          name: 'shell-hooks-agent',
          inject: ['agent'],
          apply: (child: InjectedContext<['agent']>) => tapAgent(child, agentHooks),
        },
        {},
        { key: 'agent-events' },
      )
  },
})

type Runner = ReturnType<typeof runner>

/** One configured hook: its argv resolved, and a run that counts failures (three in a row disable it). */
function runner(
  h: z.output<typeof hook>,
  index: number,
  baseDir: string,
  logger: Logger,
  lifetime: AbortSignal,
) {
  const name = `${h.event}#${index} ${h.command.join(' ')}`
  const argv = h.command.map((part, i) =>
    i === 0 && /^\.\.?\//.test(part) ? resolve(baseDir, part) : part,
  )
  let failures = 0
  return {
    event: h.event,
    name,
    command: h.command.join(' '),
    applies: (tool: string) => !h.tool_filter.length || h.tool_filter.includes(tool),
    /** Runs the hook; failures (a crash, a timeout, an exit code the event does not take) are counted and never block. */
    async run(fields: Record<string, unknown>, codes: number[]): Promise<Outcome | undefined> {
      if (failures >= BREAKER) return undefined
      // whatever goes wrong on the way is this hook's failure, counted and logged, never a block
      const outcome = await runHook(
        argv,
        { schema_version: 1, event: h.event, ...fields },
        h.timeout_ms,
        baseDir,
        codes,
        h.env,
        lifetime,
      ).catch((err): Outcome => ({ stdout: '', failure: (err as Error)?.message ?? String(err) }))
      if (!outcome.failure) {
        failures = 0
        return outcome
      }
      failures++
      logger.warn(
        `hook ${name} failed: ${outcome.failure}${failures >= BREAKER ? `; disabled after ${BREAKER} failures in a row` : ''}`,
      )
      return undefined
    },
  }
}

/** The LLM events, with octos's payload fields. Exit 1 denies before_llm_call and user_prompt_submit; user_prompt_submit's stdout (exit 0) is added to the prompt. */
function tapAgent(ctx: InjectedContext<['agent']>, hooks: Runner[]) {
  const { hooks: agent } = ctx.agent
  const denied = (h: Runner, outcome: Outcome) =>
    new Error(
      `${h.event} hook ${h.command} denied it${outcome.stdout.trim() ? `: ${outcome.stdout.trim()}` : ''}`,
    )
  for (const h of hooks) {
    const tapName = `shell-hook ${h.name}`
    if (h.event === 'before_llm_call') {
      ctx.tap(agent.beforeModel, tapName, async (request: ModelRequest, info: TurnInfo) => {
        const outcome = await h.run(
          {
            model: info.model,
            message_count: request.messages.length,
            iteration: info.turn,
            session_id: info.runId,
          },
          [0, 1],
        )
        if (outcome?.code === 1) throw denied(h, outcome)
        return request
      })
    } else if (h.event === 'after_llm_call') {
      ctx.tap(agent.afterModel, tapName, async (response: ModelResponse, info: ModelInfo) => {
        const { usage } = info
        await h.run(
          {
            model: response.model,
            iteration: info.turn,
            stop_reason: response.stopReason,
            has_tool_calls: response.toolCalls.length > 0,
            input_tokens: response.usage.inputTokens,
            output_tokens: response.usage.outputTokens,
            provider_name: info.provider,
            latency_ms: info.latencyMs,
            cumulative_input_tokens: usage.inputTokens,
            cumulative_output_tokens: usage.outputTokens,
            session_cost: usage.costUsd,
            response_cost: response.usage.costUsd,
            session_id: info.runId,
          },
          [0],
        )
        return response
      })
    } else if (h.event === 'on_turn_end') {
      ctx.tap(agent.turnEnd, tapName, async (info: TurnInfo, response: ModelResponse) => {
        await h.run(
          {
            iteration: info.turn,
            model: info.model,
            has_tool_calls: response.toolCalls.length > 0,
            session_id: info.runId,
          },
          [0],
        )
      })
    } else if (h.event === 'user_prompt_submit') {
      ctx.tap(agent.userPrompt, tapName, async (prompt: string, info: TurnInfo) => {
        const outcome = await h.run({ prompt: truncate(prompt), session_id: info.runId }, [0, 1])
        if (outcome?.code === 1) throw denied(h, outcome)
        const context = outcome?.stdout.trim()
        return context ? `${prompt}\n\n${context}` : prompt
      })
    }
  }
}

/**
 * One run: the payload on stdin, bounded by the timeout, with a package tool's environment (the
 * essentials and the names `env` lists); the hook's process group goes when it ends (nothing it
 * started outlives it). An exit code outside `codes` (octos: 1 and 2 only mean something before a
 * tool call) is a failure, and so is a program given by path that this machine cannot run (a
 * foreign binary, a script without #!), which would otherwise reach /bin/sh as shell commands.
 */
async function runHook(
  argv: string[],
  payload: Record<string, unknown>,
  timeoutMs: number,
  cwd: string,
  codes: number[],
  env: readonly string[],
  lifetime: AbortSignal,
): Promise<Outcome> {
  const [file, ...args] = argv
  const refused = file!.includes('/') ? formatProblem(resolve(cwd, file!)) : undefined
  if (refused) return { stdout: '', failure: refused }
  let r
  let kill: (() => void) | undefined
  try {
    r = await runProcess({
      file: file!,
      args,
      env: toolEnv({ allow: env, cwd }),
      cwd,
      input: JSON.stringify(payload),
      maxStdoutBytes: MAX_STDOUT,
      timeoutMs,
      onKill: (k) => lifetime.addEventListener('abort', (kill = k), { once: true }),
    })
  } catch (err) {
    return { stdout: '', failure: (err as Error)?.message ?? String(err) }
  } finally {
    if (kill) lifetime.removeEventListener('abort', kill)
  }
  // the runner's own kill at the output cap is said as the cap, not as a signal
  if (r.flooded) return { stdout: '', failure: r.stopped! }
  if (r.timedOut) return { stdout: r.stdout, failure: `hook timed out after ${timeoutMs}ms` }
  if (r.signal) return { stdout: r.stdout, failure: `killed by ${r.signal}` }
  if (r.code !== null && codes.includes(r.code)) return { code: r.code, stdout: r.stdout }
  return {
    stdout: r.stdout,
    failure: `exit code ${r.code}${r.stderr.length ? `: ${r.stderr.at(-1)}` : ''}`,
  }
}

/** Why the program at `path` cannot run here, or undefined (also when it cannot be read: the spawn then says why). */
function formatProblem(path: string): string | undefined {
  let real: string
  try {
    real = realpathSync(path)
    if (!statSync(real).isFile()) return undefined
    const format = executableFormat(real)
    return 'problem' in format ? `${path} is refused: it ${format.problem}` : undefined
  } catch {
    return undefined
  }
}

/** How deep a hook's replacement arguments may nest: the runtime's own bound on arguments. */
const MAX_DEPTH = 64

/** A hook's replacement arguments: the object, undefined when it is none, or why they are refused. */
function parseArgs(text: string): Record<string, unknown> | string | undefined {
  let value: unknown
  try {
    value = JSON.parse(text) // JSON.parse does not recurse; the schema check after it does
  } catch {
    return undefined
  }
  if (nestsDeeper(value, MAX_DEPTH)) return `are nested deeper than ${MAX_DEPTH} levels`
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined
}

function redactArgs(call: ToolCall): unknown {
  return SENSITIVE.has(call.name)
    ? { redacted: true, reason: 'sensitive tool' }
    : truncate(call.args)
}

function redactResult(call: ToolCall, result: ToolResult): string {
  if (SENSITIVE.has(call.name)) return '[redacted: sensitive tool output]'
  return truncate(
    result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n'),
  ) as string
}

/** Strings over 1 KiB are cut (octos: "... (truncated)"). */
function truncate(value: unknown): unknown {
  if (typeof value === 'string')
    return Buffer.byteLength(value) > MAX_FIELD
      ? `${Buffer.from(value).subarray(0, MAX_FIELD).toString('utf8')}... (truncated)`
      : value
  if (Array.isArray(value)) return value.map(truncate)
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, truncate(v)]))
  return value
}
