/**
 * One run of a package executable, octos's protocol: `exe <tool>` in a process group of its own,
 * JSON arguments on stdin, the result on stdout (JSON, or plain text), progress on stderr, one
 * line at a time (protocol v2 JSON lines, or plain lines). Timeout and cancellation kill the
 * whole group, grandchildren included; so does the tool's own exit (no orphans). Output is bounded
 * while it streams: past `maxStdoutBytes` the tool is stopped, so a flood costs no memory.
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import {
  nestsDeeper,
  type CallContext,
  type ContentPart,
  type ProgressEvent,
  type ToolOutput,
  type TraceContext,
} from 'yoke'

export interface RunSpec {
  exe: string
  tool: string
  args: Record<string, unknown>
  env: Record<string, string>
  cwd: string
  maxStdoutBytes: number
}

export interface ProcessSpec {
  file: string
  args: string[]
  env: Record<string, string>
  cwd: string
  /** written to stdin, which is then closed */
  input: string
  maxStdoutBytes: number
  /** kills the group after this long (the run then reports timedOut) */
  timeoutMs?: number
  /** each stderr line (the first STDERR_EVENTS of them) */
  onStderrLine?: (line: string) => void
  /** receives the group's kill, for ends decided elsewhere (a call's timeout or cancellation) */
  onKill?: (kill: () => void) => void
}

export interface Ran {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  /** stdout passed maxStdoutBytes and the process was stopped */
  flooded: boolean
  /**
   * Why the runner stopped the program, in words, when it did for its output:
   * `output over 1048576 bytes, stopped` (its `signal` is then the runner's SIGKILL, not a crash)
   */
  stopped?: string
  timedOut: boolean
  /** the last lines of stderr (bounded) */
  stderr: string[]
}

/** What a run stopped at its output cap says, for hooks and tools alike. */
const floodStop = (maxBytes: number) => `output over ${maxBytes} bytes, stopped`

const STDERR_LINES = 50
const STDERR_EVENTS = 10_000
const STDERR_BYTES = 8 * 1024 * 1024
const LINE_CHARS = 4000

/** A tool run: `exe <tool>` with the arguments as JSON; stderr lines become progress events. */
export function runExecutable(spec: RunSpec, call: CallContext): Promise<Ran> {
  return runProcess({
    file: spec.exe,
    args: [spec.tool],
    env: withTrace(spec.env, call.call.trace),
    cwd: spec.cwd,
    input: JSON.stringify(spec.args),
    maxStdoutBytes: spec.maxStdoutBytes,
    onStderrLine: (line) => {
      const event = progressOf(line)
      if (event) call.progress(event)
    },
    onKill: (kill) => call.onEnd(kill), // timeout, cancellation, unload
  })
}

/**
 * The call's W3C trace context as the program's `TRACEPARENT` (and `TRACESTATE`), the variables
 * OpenTelemetry's environment carrier reads, so what the program traces continues the call's
 * trace. Set over whatever the allowlist let through; a call without a trace copies nothing.
 */
export function withTrace(
  env: Record<string, string>,
  trace: TraceContext | undefined,
): Record<string, string> {
  if (trace === undefined) return env
  const traced: Record<string, string> = { ...env, TRACEPARENT: trace.traceparent }
  if (trace.tracestate) traced.TRACESTATE = trace.tracestate
  else delete traced.TRACESTATE
  return traced
}

// imported at the first run: a process that never runs a program does not hold execa (~2.6 MB of heap)
let execaModule: Promise<typeof import('execa')> | undefined
const loadExeca = () => (execaModule ??= import('execa'))

/**
 * Runs a program in a process group of its own and ends the whole group: at a timeout, at a kill
 * from outside, when stdout floods, and when the program exits (what it started goes with it). The
 * run is over when the program has exited, even if something that escaped the group (setsid) still
 * holds its output.
 *
 * execa runs the program: its `timeout` and `cancelSignal` (the kill from outside) end it with
 * SIGKILL, and its result gives the exit code, the signal and `timedOut`. Kept here: the group
 * (execa kills the direct child only; the group is killed at the child's exit and at a flood), not
 * waiting for output an escaped process holds, and reading both streams. stdout is capped as it
 * arrives (execa's `maxBuffer` says so only after the exit, and with stderr unbuffered execa 9.6
 * reads stdout a second time for `result.all`), stderr is split into bounded lines (execa's line
 * splitting holds a whole line, however long).
 */
export async function runProcess(spec: ProcessSpec): Promise<Ran> {
  const cancel = spec.onKill && new AbortController()
  if (cancel) spec.onKill!(() => cancel.abort())
  const { execa } = await loadExeca()
  const child = execa(spec.file, spec.args, {
    cwd: spec.cwd,
    env: spec.env,
    extendEnv: false,
    detached: true, // a process group of its own, for the group kill
    buffer: false, // both streams are read here
    timeout: spec.timeoutMs,
    cancelSignal: cancel?.signal,
    killSignal: 'SIGKILL',
    forceKillAfterDelay: false, // SIGKILL already
    cleanup: false, // no exit handler per run: the group goes with the run
    stripFinalNewline: false,
    reject: false,
  })
  // written here rather than through `input`: sooner (the program waits for it), and cheaper
  child.stdin!.on('error', () => {}) // a program that never reads its input
  child.stdin!.end(spec.input)
  const killGroup = () => {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL')
    } catch {
      // the group is gone already
    }
  }
  let grace: NodeJS.Timeout | undefined
  child.once('exit', () => {
    killGroup() // what the program left running in its group
    // a process that escaped the group (setsid) and holds stdout or stderr must not keep the run open
    grace = setTimeout(() => {
      child.stdout!.destroy()
      child.stderr!.destroy()
    }, 100).unref()
  })
  const stdout = capStdout(child.stdout!, spec.maxStdoutBytes, killGroup)
  const stderr = stderrLines(child.stderr!, spec.onStderrLine)
  const r = await child
  clearTimeout(grace)
  if (r.exitCode === undefined && r.signal === undefined) throw r.cause ?? r // spawn failed (ENOENT, EACCES)
  const { flooded } = stdout
  return {
    code: r.exitCode ?? null,
    signal: r.signal ?? null,
    stdout: stdout.text(),
    flooded,
    ...(flooded ? { stopped: floodStop(spec.maxStdoutBytes) } : {}),
    timedOut: r.timedOut,
    stderr: stderr.end(),
  }
}

/** stdout, read as it arrives up to `max` bytes; past it the rest is dropped and `flood` runs once. */
function capStdout(stream: NodeJS.ReadableStream, max: number, flood: () => void) {
  const chunks: Buffer[] = []
  let bytes = 0
  const state = { flooded: false, text: () => Buffer.concat(chunks).toString('utf8') }
  stream.on('data', (chunk: Buffer) => {
    if (state.flooded) return
    if (bytes + chunk.length > max) {
      state.flooded = true
      chunks.push(chunk.subarray(0, max - bytes))
      bytes = max
      return flood()
    }
    chunks.push(chunk)
    bytes += chunk.length
  })
  return state
}

/**
 * stderr as bounded lines: each cut at LINE_CHARS, the last STDERR_LINES kept, the first
 * STDERR_EVENTS handed to `onLine`; past STDERR_BYTES the stream is drained unread. `end()` adds
 * the unfinished last line and gives the lines kept.
 */
function stderrLines(stream: NodeJS.ReadableStream, onLine?: (line: string) => void) {
  const kept: string[] = []
  let events = 0
  let partial = ''
  let bytes = 0
  const line = (text: string) => {
    const cut = text.slice(0, LINE_CHARS)
    if (!cut.trim()) return
    kept.push(cut)
    if (kept.length > STDERR_LINES) kept.shift()
    if (events++ < STDERR_EVENTS) onLine?.(cut)
  }
  stream.setEncoding('utf8')
  stream.on('data', (text: string) => {
    if ((bytes += text.length) > STDERR_BYTES) return // drained, no longer read: a flood costs no CPU
    const lines = (partial + text).split('\n')
    partial = lines.pop()!.slice(-LINE_CHARS)
    for (const l of lines) line(l)
  })
  return {
    end(): string[] {
      line(partial)
      return kept
    },
  }
}

/**
 * A stderr line as a progress event. Protocol v2 JSON lines: progress {stage, pct | progress/total,
 * message}, phase {phase, message}, cost {provider, input_tokens, output_tokens, usd}, artifact
 * {kind, path}, log {level, message}; anything else (plain text, unknown types) is the line itself.
 */
export function progressOf(line: string): ProgressEvent | undefined {
  const text = line.trimEnd()
  if (!text.trim()) return undefined
  let v: Record<string, unknown>
  try {
    v = text.startsWith('{') ? JSON.parse(text) : undefined
  } catch {
    return { message: text }
  }
  if (!v || typeof v !== 'object') return { message: text }
  const s = (key: string) => String(scalar(v[key]) ?? '')
  switch (v.type) {
    case 'progress': {
      const pct =
        typeof v.pct === 'number'
          ? v.pct
          : typeof v.progress === 'number' && typeof v.total === 'number' && v.total > 0
            ? (v.progress / v.total) * 100
            : undefined
      const head = [v.stage && `[${s('stage')}]`, pct !== undefined && `${Math.round(pct)}%`]
        .filter(Boolean)
        .join(' ')
      return {
        ...(pct !== undefined && { progress: Math.round(pct), total: 100 }),
        message: [head, s('message')].filter(Boolean).join(' '),
        kind: 'progress',
      }
    }
    case 'phase':
      return { message: `[${s('phase') || s('name')}] ${s('message')}`.trimEnd(), kind: 'phase' }
    case 'cost':
      return {
        message: `[cost] ${s('provider')}: in=${s('input_tokens')} out=${s('output_tokens')} ($${s('usd')})`,
        kind: 'cost',
        // only scalars go on: a line's JSON is the program's, and whatever reads an event may recurse
        cost: {
          provider: scalar(v.provider),
          inputTokens: scalar(v.input_tokens),
          outputTokens: scalar(v.output_tokens),
          usd: scalar(v.usd),
        },
      }
    case 'artifact':
      return {
        message: `[artifact:${s('kind')}] ${s('path')}`,
        kind: 'artifact',
        path: scalar(v.path),
      }
    case 'log':
      return { message: `[${s('level') || 'info'}] ${s('message')}`, kind: 'log' }
    default:
      return { message: text }
  }
}

/** A number, string or boolean as it is; anything else (an object, an array) left out. */
const scalar = (v: unknown) =>
  typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean' ? v : undefined

const NAMED_OUTPUT = /^[a-z][a-z0-9_]*$/

/** How deep a tool's JSON result may nest: the runtime's own bound on what crosses the pipeline. */
const MAX_DEPTH = 64

/**
 * The tool's result, octos's way. JSON stdout: `output` (else the raw stdout), `success` (else
 * exit code 0), `file_modified` (else a "Report saved to: " line), `files_to_send`,
 * `named_outputs`; plain stdout: the text plus stderr, success by exit code. Reported files come
 * back as resource links.
 */
export function resultOf(ran: Ran, what: string, cwd: string): ToolOutput {
  // the runner's own stop at the output cap is said as such, never as a kill by a signal
  if (ran.flooded)
    return failed(
      ran,
      `${what} wrote more than the output limit to stdout and was stopped (${ran.stopped}); the first part:\n${ran.stdout}`,
    )
  const died = ran.signal ? `${what} was killed by ${ran.signal}` : undefined
  const json = jsonObjectOf(ran.stdout, what)
  if (typeof json === 'string') return failed(ran, json)
  return json ? jsonResult(ran, json, what, cwd, died) : plainResult(ran, died)
}

/** stdout's JSON object; undefined for plain text (or JSON that is no object); why, when refused. */
function jsonObjectOf(stdout: string, what: string): Record<string, unknown> | string | undefined {
  let value: unknown
  try {
    value = JSON.parse(stdout) // JSON.parse does not recurse; what reads it next does
  } catch {
    return undefined // plain text
  }
  if (nestsDeeper(value, MAX_DEPTH))
    return `${what} printed JSON nested deeper than ${MAX_DEPTH} levels; yoke does not read it (results are JSON data at most ${MAX_DEPTH} deep)`
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined
}

/** Plain stdout: the text plus stderr (and how it died), success by exit code. */
function plainResult(ran: Ran, died: string | undefined): ToolOutput {
  const text = [
    ran.stdout.trimEnd(),
    ...(ran.stderr.length ? [ran.stderr.join('\n')] : []),
    ...(died ? [died] : []),
  ]
    .filter(Boolean)
    .join('\n')
  return {
    content: [{ type: 'text', text }],
    structured: { exitCode: ran.code, signal: ran.signal },
    isError: ran.code !== 0,
  }
}

/** JSON stdout, octos's fields: output, success, file_modified, files_to_send, named_outputs. */
function jsonResult(
  ran: Ran,
  parsed: Record<string, unknown>,
  what: string,
  cwd: string,
  died: string | undefined,
): ToolOutput {
  const named = parsed.named_outputs
  if (
    named !== undefined &&
    (typeof named !== 'object' ||
      named === null ||
      Object.entries(named).some(([k, v]) => !NAMED_OUTPUT.test(k) || typeof v !== 'string'))
  )
    return failed(
      ran,
      `${what} emitted malformed named_outputs: keys must match [a-z][a-z0-9_]* and values must be strings`,
    )
  const output =
    typeof parsed.output === 'string'
      ? parsed.output
      : parsed.output === undefined
        ? ran.stdout
        : JSON.stringify(parsed.output)
  const success = typeof parsed.success === 'boolean' ? parsed.success : ran.code === 0
  const fileModified =
    typeof parsed.file_modified === 'string'
      ? parsed.file_modified
      : /^Report saved to: (.+)$/m.exec(output)?.[1]
  const files = [
    ...(Array.isArray(parsed.files_to_send)
      ? parsed.files_to_send.filter((f): f is string => typeof f === 'string')
      : []),
    ...(fileModified ? [fileModified] : []),
  ]
  const links: ContentPart[] = [...new Set(files)].map((file) => ({
    type: 'resource_link',
    uri: pathToFileURL(resolve(cwd, file)).href,
    name: file,
  }))
  return {
    content: [{ type: 'text', text: died ? `${output}\n${died}` : output }, ...links],
    structured: {
      success,
      exitCode: ran.code,
      ...(fileModified && { file_modified: fileModified }),
      ...(files.length && { files_to_send: files }),
      ...(named !== undefined && { named_outputs: named }),
    },
    isError: !success || Boolean(died),
  }
}

function failed(ran: Ran, text: string): ToolOutput {
  return {
    content: [{ type: 'text', text }],
    structured: { exitCode: ran.code, signal: ran.signal },
    isError: true,
  }
}
