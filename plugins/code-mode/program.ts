/**
 * One `run_code` call: the program's source made JavaScript (TypeScript stripped), run in the
 * executor, each `tools.…` call made as an ordinary pipeline call in the caller's scope under the
 * run_code call (its asker, trace and signal: policy, approvals, guards, hooks, limits, metrics and
 * spans all apply), a refused call ending the program, and the answer the caller gets: what the
 * program returned, its console output and one line per tool call (no timings, so a replay of a
 * recorded run sees the same text).
 */
import {
  partText,
  YokeError,
  type CallContext,
  type RuntimeApi,
  type ToolCall,
  type ToolResult,
} from 'yoke'
import {
  RUN_CODE,
  toolNameOf,
  type ExecuteLimits,
  type ExecuteResult,
  type Executor,
  type HostReply,
} from './api.ts'
import './errors.ts'

export interface ProgramLimits extends ExecuteLimits {
  /** tool calls per run (CODE_CALLS past it) */
  maxCalls: number
}

/** One nested call as the answer records it. */
export interface CallRecord {
  tool: string
  args: unknown
  status: string
}

export interface ProgramDeps {
  runtime: Pick<RuntimeApi, 'call'>
  executor: Executor
  limits: ProgramLimits
  /** the declarations of what the caller's scope may call */
  declarations(scope: string): string
  /** whether a tool may overlap others (`safe`) as the scope lists it; anything else runs alone */
  concurrencyOf(name: string, scope: string): string | undefined
}

/**
 * A program's calls run as the agent loop runs a model's: `safe` calls together, any other call
 * alone (it waits for the calls in flight, and the calls after it wait for it), first come first
 * served. Nested calls run in run_code's own slot, so without this a program's `Promise.all`
 * would overlap calls that must run alone.
 */
export class CallGate {
  #running = 0
  #exclusive = false
  readonly #waiting: Array<{ exclusive: boolean; go: () => void }> = []

  async enter(exclusive: boolean): Promise<void> {
    if (!this.#waiting.length && this.#may(exclusive)) return this.#take(exclusive)
    await new Promise<void>((go) => this.#waiting.push({ exclusive, go }))
  }

  leave(exclusive: boolean): void {
    this.#running--
    if (exclusive) this.#exclusive = false
    while (this.#waiting.length && this.#may(this.#waiting[0]!.exclusive)) {
      const next = this.#waiting.shift()!
      this.#take(next.exclusive)
      next.go()
    }
  }

  #may(exclusive: boolean) {
    return exclusive ? this.#running === 0 : !this.#exclusive
  }

  #take(exclusive: boolean) {
    this.#running++
    if (exclusive) this.#exclusive = true
  }
}

/** Runs one program for the call `ctx.call`; resolves to the tool's output, or throws its coded error. */
export async function runProgram(
  deps: ProgramDeps,
  source: string,
  language: 'javascript' | 'typescript',
  ctx: CallContext,
): Promise<{ content: Array<{ type: 'text'; text: string }>; structured: unknown }> {
  const parent = ctx.call
  const calls: CallRecord[] = []
  const gate = new CallGate()
  const stop = new AbortController()
  ctx.onEnd((reason) => stop.abort(reason))
  const api = {
    signal: stop.signal,
    declarations: () => deps.declarations(parent.scope),
    call: (path: readonly string[], args: unknown) =>
      nestedCall(deps, parent, path, args, calls, gate, stop.signal),
  }
  let outcome: ExecuteResult
  try {
    const code = language === 'typescript' ? await stripTypes(source) : source
    outcome = await deps.executor.execute(code, api, deps.limits)
    // JavaScript that does not parse may be TypeScript the model did not label
    if (outcome.error?.code === 'CODE_SYNTAX' && language === 'javascript' && !calls.length) {
      const stripped = await stripTypes(source).catch(() => undefined)
      if (stripped !== undefined && stripped !== source) {
        const again = await deps.executor.execute(stripped, api, deps.limits)
        if (again.error?.code !== 'CODE_SYNTAX') outcome = again
      }
    }
  } finally {
    stop.abort(new Error('the program ended'))
  }
  if (outcome.error) throw programError(outcome, calls)
  return answer(outcome, calls)
}

/** A `tools.…` call: named, counted, then run through the pipeline under the run_code call. */
async function nestedCall(
  deps: ProgramDeps,
  parent: ToolCall,
  path: readonly string[],
  args: unknown,
  calls: CallRecord[],
  gate: CallGate,
  signal: AbortSignal,
): Promise<HostReply> {
  const name = toolNameOf(path)
  const shown = `tools.${path.join('.')}`
  if (!name || name === RUN_CODE) {
    const why = name
      ? 'run_code cannot be called from a program'
      : `${shown} is not a tool (tools.<server>.<tool> or tools.<name>; api() lists them)`
    return { error: { code: 'UNKNOWN_TOOL', message: why, tool: shown } }
  }
  if (calls.length >= deps.limits.maxCalls)
    throw new YokeError('CODE_CALLS', { max: deps.limits.maxCalls, reason: '' })
  const record: CallRecord = { tool: name, args, status: 'running' }
  calls.push(record)
  const exclusive = deps.concurrencyOf(name, parent.scope) !== 'safe'
  await gate.enter(exclusive)
  let result: ToolResult
  try {
    result = await deps.runtime.call(name, args, {
      scope: parent.scope,
      caller: parent.caller,
      parent,
      signal,
    })
  } finally {
    gate.leave(exclusive)
  }
  record.status = result.status
  if (result.status === 'DENIED')
    throw new YokeError('CODE_DENIED', {
      tool: name,
      reason: result.error?.message ?? 'refused',
      trail: trail(calls),
    })
  if (!result.ok)
    return {
      error: {
        code: result.status,
        message: result.error?.message ?? result.status,
        ...(result.error?.hint && { hint: result.error.hint }),
        tool: name,
      },
    }
  return { value: valueOf(result) }
}

/** What a call resolves to in the program: its structured result, else its text (non-text parts: the content). */
function valueOf(result: ToolResult): unknown {
  if (result.structured !== undefined) return result.structured
  if (result.content.every((p) => p.type === 'text')) return result.content.map(partText).join('\n')
  return result.content
}

/** The program's answer: the returned value, then its console output and its tool calls. */
function answer(outcome: ExecuteResult, calls: CallRecord[]) {
  const { result, logs } = outcome
  const shown =
    result === undefined
      ? '(the program returned nothing)'
      : typeof result === 'string'
        ? result
        : JSON.stringify(result, null, 2)
  const parts = [shown]
  if (logs.length) parts.push(`console:\n${logs.join('\n')}`)
  if (calls.length) parts.push(callLine(calls))
  return {
    content: [{ type: 'text' as const, text: parts.join('\n\n') }],
    structured: { result: result ?? null, logs, calls },
  }
}

const callLine = (calls: CallRecord[]) =>
  `tool calls (${calls.length}): ${calls.map((c) => `${c.tool} ${c.status}`).join(', ')}`

/** What the program did before it ended, for an error's message. */
function trail(calls: CallRecord[], logs: string[] = []): string {
  const done = calls.filter((c) => c.status !== 'running' && c.status !== 'DENIED')
  const parts = done.length ? [`after ${callLine(done)}`] : []
  if (logs.length) parts.push(`console: ${logs.slice(-5).join(' | ').slice(0, 500)}`)
  return parts.length ? ` (${parts.join('; ')})` : ''
}

function programError(outcome: ExecuteResult, calls: CallRecord[]): YokeError {
  const { code, message } = outcome.error!
  // a refusal's message already says what came before it
  return rethrown(
    code,
    code === 'CODE_DENIED' ? message : `${message}${trail(calls, outcome.logs)}`,
  )
}

/** The executor's error as a YokeError of its code, with the message it already has. */
function rethrown(code: string, message: string): YokeError {
  const err = new YokeError(code as 'CODE_ERROR', { reason: '' })
  Object.defineProperty(err, 'message', { value: message })
  return err
}

/** TypeScript to JavaScript: types stripped (no checking), the body kept a function body. */
async function stripTypes(source: string): Promise<string> {
  const ts = (await import('typescript')).default
  const wrapped = `async function __program() {\n${source}\n}`
  const out = ts.transpileModule(wrapped, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
    reportDiagnostics: false,
  }).outputText
  const start = out.indexOf('{\n') + 2
  const end = out.lastIndexOf('}')
  return out.slice(start, end)
}
