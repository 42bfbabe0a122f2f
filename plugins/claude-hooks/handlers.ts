/**
 * Runs one Claude Code hook handler on a JSON input and reads its answer as Claude Code does:
 * exit 0 is success (stdout is JSON when it starts with `{`, else plain text), exit 2 blocks (stderr
 * is the reason; stdout is ignored), any other exit, a timeout or a crash is a non-blocking error.
 * A command runs through `bash -c` (Claude Code's default shell; /bin/sh without bash) or, with
 * `args`, as a program with arguments, in the
 * project directory, in a process group of its own that goes when it ends.
 */
import { existsSync } from 'node:fs'
import { runProcess, toolEnv } from '../process/api.ts'
import { messageOf, nestsDeeper, type ToolCall } from 'yoke'
import { defaultTimeout } from './events.ts'
import { MAX_DEPTH, type Handler, type HookEntry } from './format.ts'
import { runAgent, runMcpTool, runPrompt, type HandlerServices } from './model-handlers.ts'

/** What a handler answered. `error` never blocks anything; it is logged, naming the handler. */
export type Reply =
  | { kind: 'ok'; json?: HookJson; text: string; warning?: string }
  | { kind: 'block'; reason: string }
  | { kind: 'error'; why: string }

/** The JSON a handler may print (the fields yoke reads; others are ignored). */
export interface HookJson {
  continue?: boolean
  stopReason?: string
  suppressOutput?: boolean
  systemMessage?: string
  decision?: string
  reason?: string
  hookSpecificOutput?: {
    hookEventName?: string
    permissionDecision?: string
    permissionDecisionReason?: string
    updatedInput?: unknown
    additionalContext?: string
    updatedToolOutput?: unknown
    [key: string]: unknown
  }
  [key: string]: unknown
}

export interface RunEnv {
  projectDir: string
  pluginRoot?: string
  /** variable names passed on beyond the essentials */
  env: readonly string[]
  /** the model, the agent loop and the runtime, for prompt, agent and mcp_tool handlers */
  services: HandlerServices
}

/**
 * The shell of shell-form commands: bash, Claude Code's default (`shell`), else /bin/sh. No rc
 * file: bash reads ~/.bashrc even for `-c` when its stdin is a socket (Node's pipes are), and a
 * user's rc file must not decide what a hook reads or whether it starts.
 */
const SHELL: [string, string[]] = existsSync('/bin/bash')
  ? ['/bin/bash', ['--norc', '--noprofile', '-c']]
  : ['/bin/sh', ['-c']]

/** Claude Code caps the strings a hook hands back at 10,000 characters. */
export const MAX_TEXT = 10_000
const MAX_STDOUT = 1024 * 1024
/** 600 s as Claude Code; longer is cut to it */
export const MAX_TIMEOUT_S = 600

export const cap = (text: string) =>
  text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}… (truncated)` : text

/** The variables a handler gets from yoke itself (and that `${…}` in args, urls and headers names). */
function ownVars(run: RunEnv): Record<string, string> {
  return {
    CLAUDE_PROJECT_DIR: run.projectDir,
    ...(run.pluginRoot ? { CLAUDE_PLUGIN_ROOT: run.pluginRoot } : {}),
  }
}

/** `${CLAUDE_PLUGIN_ROOT}` and `${CLAUDE_PROJECT_DIR}` (and `$NAME` forms) in exec args, urls, headers. */
function expand(text: string, vars: Record<string, string>): string {
  return text.replace(
    /\$\{(\w+)\}|\$(\w+)/g,
    (whole, a: string, b: string) => vars[a ?? b] ?? whole,
  )
}

/**
 * Runs one handler. It never throws: whatever goes wrong on the way (the input cannot be written,
 * the program cannot start, anything unforeseen) is an `error` reply, which Claude Code's rules
 * make non-blocking.
 */
export async function runHandler(
  entry: HookEntry,
  input: Record<string, unknown>,
  run: RunEnv,
  call?: ToolCall,
): Promise<Reply> {
  try {
    const { handler, event } = entry
    const timeoutS = Math.min(handler.timeout ?? defaultTimeout(event, handler.type), MAX_TIMEOUT_S)
    const ms = timeoutS * 1000
    switch (handler.type) {
      case 'command':
        return await runCommand(handler, JSON.stringify(input), run, ms)
      case 'http':
        return await runHttp(handler, JSON.stringify(input), run, ms)
      case 'prompt':
        return await runPrompt(event, handler, input, run.services, ms)
      case 'agent':
        return await runAgent(event, handler, input, run.services, ms, call)
      case 'mcp_tool':
        return await runMcpTool(handler, input, run.services, ms, readStdout, call)
    }
  } catch (err) {
    return { kind: 'error', why: `it could not run: ${messageOf(err)}` }
  }
}

async function runCommand(
  handler: Extract<Handler, { type: 'command' }>,
  input: string,
  run: RunEnv,
  timeoutMs: number,
): Promise<Reply> {
  const vars = ownVars(run)
  const [file, args] = handler.args
    ? [expand(handler.command, vars), handler.args.map((a) => expand(a, vars))]
    : [SHELL[0], [...SHELL[1], handler.command]]
  let r
  try {
    r = await runProcess({
      file,
      args,
      env: toolEnv({
        allow: [...run.env, ...Object.keys(vars)],
        extra: vars,
        cwd: run.projectDir,
      }),
      cwd: run.projectDir,
      input,
      maxStdoutBytes: MAX_STDOUT,
      timeoutMs: Math.max(1, Math.round(timeoutMs)),
    })
  } catch (err) {
    return { kind: 'error', why: `it could not start: ${messageOf(err)}` }
  }
  const stderr = r.stderr.join('\n').trim()
  // the runner's own kill at the output cap is said as the cap, not as a signal
  if (r.flooded) return { kind: 'error', why: `its ${r.stopped}` }
  if (r.timedOut) return { kind: 'error', why: timedOut(timeoutMs) }
  if (r.signal) return { kind: 'error', why: `it was killed by ${r.signal}` }
  if (r.code === 2)
    return { kind: 'block', reason: cap(stderr || 'a hook blocked it (exit 2, no stderr)') }
  if (r.code !== 0)
    return {
      kind: 'error',
      why: `exit code ${r.code}${stderr ? `: ${stderr.split('\n').at(-1)}` : ''}${r.code === 127 ? " (is the command's path right?)" : ''}`,
    }
  return readStdout(r.stdout)
}

/** Claude Code's http handler: the input POSTed as JSON; a 2xx body reads as a command's stdout. */
async function runHttp(
  handler: Extract<Handler, { type: 'http' }>,
  input: string,
  run: RunEnv,
  timeoutMs: number,
): Promise<Reply> {
  // headers may name only the variables the handler lists (and yoke's own)
  const listed = Object.fromEntries(
    (handler.allowedEnvVars ?? [])
      .map((name) => [name, process.env[name]] as const)
      .filter((e): e is readonly [string, string] => e[1] !== undefined),
  )
  const vars = { ...listed, ...ownVars(run) }
  const headers = Object.fromEntries(
    Object.entries(handler.headers ?? {}).map(([k, v]) => [k, expand(v, vars)]),
  )
  let response: Response
  let text: string
  try {
    response = await fetch(expand(handler.url, ownVars(run)), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: input,
      signal: deadline(timeoutMs),
      redirect: 'error',
    })
    const body = await readCapped(response, MAX_STDOUT)
    if (body === undefined)
      return { kind: 'error', why: `its response body is over ${MAX_STDOUT} bytes, stopped` }
    text = body
  } catch (err) {
    return thrown(err, timeoutMs, 'the request')
  }
  if (!response.ok) return { kind: 'error', why: `HTTP ${response.status}` }
  return readStdout(text)
}

/** A handler's deadline as a signal: `timeoutMs`, rounded to a whole millisecond and at least one. */
export function deadline(timeoutMs: number): AbortSignal {
  return AbortSignal.timeout(Math.max(1, Math.round(timeoutMs)))
}

/** Why a handler cut off at its timeout did not answer. */
export function timedOut(timeoutMs: number): string {
  return `it timed out after ${timeoutMs / 1000} s`
}

/** A handler's awaited step that threw: its deadline ran out (a TimeoutError), or `what` failed. */
export function thrown(err: unknown, timeoutMs: number, what: string): Reply {
  return (err as Error | undefined)?.name === 'TimeoutError'
    ? { kind: 'error', why: timedOut(timeoutMs) }
    : { kind: 'error', why: `${what} failed: ${messageOf(err)}` }
}

/** A response's body as text, read as it streams; undefined (and the rest never read) past `max` bytes. */
async function readCapped(response: Response, max: number): Promise<string | undefined> {
  if (!response.body) return ''
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let bytes = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    bytes += value.byteLength
    if (bytes > max) {
      await reader.cancel().catch(() => {})
      return undefined
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}

const TEXT_FIELDS = ['stopReason', 'systemMessage', 'decision', 'reason'] as const
const OUTPUT_TEXT_FIELDS = [
  'hookEventName',
  'permissionDecision',
  'permissionDecisionReason',
  'additionalContext',
] as const

/**
 * The fields yoke reads, each of its type or left out (then its default applies: a `deny` with a
 * reason that is no string still denies, with the default reason); a reply of the wrong shape must
 * not reach the result the model reads, or fail the call.
 */
function typed(json: Record<string, unknown>): HookJson {
  const out: Record<string, unknown> = { ...json }
  for (const key of TEXT_FIELDS) if (typeof out[key] !== 'string') delete out[key]
  if (typeof out.continue !== 'boolean') delete out.continue
  if (typeof out.suppressOutput !== 'boolean') delete out.suppressOutput
  const specific = out.hookSpecificOutput
  if (!specific || typeof specific !== 'object' || Array.isArray(specific))
    delete out.hookSpecificOutput
  else {
    const inner: Record<string, unknown> = { ...specific }
    for (const key of OUTPUT_TEXT_FIELDS) if (typeof inner[key] !== 'string') delete inner[key]
    out.hookSpecificOutput = inner
  }
  return out as HookJson
}

/**
 * Exit 0's stdout: JSON when it starts with `{`, else plain text (only UserPromptSubmit and
 * SessionStart use it). A `{` text that does not parse is plain text too, as Claude Code reads it
 * (a warning says so); JSON nested too deep is an error.
 */
export function readStdout(stdout: string): Reply {
  const text = stdout.trim()
  if (!text.startsWith('{')) return { kind: 'ok', text: cap(text) }
  try {
    const json = JSON.parse(text) // JSON.parse does not recurse: a deep text is measured after it
    if (nestsDeeper(json, MAX_DEPTH))
      return {
        kind: 'error',
        why: `its JSON output is nested deeper than ${MAX_DEPTH} levels; yoke does not read it`,
      }
    if (json && typeof json === 'object' && !Array.isArray(json))
      return { kind: 'ok', json: typed(json), text: '' }
  } catch (err) {
    return {
      kind: 'ok',
      text: cap(text),
      warning: `its stdout starts with "{" but is not JSON (${messageOf(err)}); it is read as plain text, as Claude Code reads it`,
    }
  }
  return { kind: 'error', why: 'its stdout is not a JSON object' }
}
