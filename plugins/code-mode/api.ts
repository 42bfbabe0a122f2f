/**
 * The public face of code-mode: the `Executor` contract a sandbox implements (QuickJS by default),
 * what a program's host hands it (`SandboxApi`: the tools, nothing else), the limits, the `codeMode`
 * service, and the tool-name mapping the sandbox's `tools` object follows.
 */
import type { ScopeHandle } from 'yoke'

/** What one run may use. Each one past its bound ends the run with its code. */
export interface ExecuteLimits {
  /** heap of the sandbox (CODE_MEMORY) */
  memoryBytes: number
  /** stack of the sandbox (CODE_STACK) */
  stackBytes: number
  /** time spent running the program's own code, waits for tools not counted (CODE_TIMEOUT) */
  cpuMs: number
  /** console output (CODE_OUTPUT) */
  outputBytes: number
}

/** A tool call's answer as the sandbox gets it: the value, or the error a ToolError carries. */
export type HostReply =
  { value: unknown } | { error: { code: string; message: string; hint?: string; tool: string } }

/**
 * What the host hands a program: its only way out of the sandbox. `call` may throw a YokeError
 * to end the run at once with that code (a refused call, one call too many).
 */
export interface SandboxApi {
  /** `tools.a.b(args)` → call(['a', 'b'], args); `callTool(name, args)` → call([name], args) */
  call(path: readonly string[], args: unknown): Promise<HostReply>
  /** the declarations of what the program may call (`api()` in the sandbox) */
  declarations(): string
  /** aborted when the run must stop (the caller gave up, the tool timed out or was unloaded) */
  readonly signal: AbortSignal
}

/** How a run ended: `result` (JSON data) when it returned, `error` (a catalogue code) when not. */
export interface ExecuteResult {
  result?: unknown
  error?: { code: string; message: string }
  logs: string[]
}

/**
 * A sandbox. `code` is the body of an async function (top-level await and return); it sees
 * `tools`, `callTool`, `api` and `console`, and nothing of the host (no process, require, import,
 * fetch, timers or file system). Cloudflare's codemode has the same shape, so other sandboxes plug in.
 */
export interface Executor {
  readonly name: string
  execute(code: string, api: SandboxApi, limits: ExecuteLimits): Promise<ExecuteResult>
}

/** The `codeMode` service: run a program as `run_code` would, in a scope; read its API. */
export interface CodeModeApi {
  /** the TypeScript declarations of the tools a scope may call */
  declarations(scope?: string): string
  /** a provider of `codeExecutor` replaces QuickJS (read at each run) */
  readonly executor: Executor
}

declare module 'yoke' {
  interface Services {
    codeMode: CodeModeApi
    /** another sandbox for run_code (optional; QuickJS without it) */
    codeExecutor: Executor
  }
}

export type { ScopeHandle }
export const RUN_CODE = 'run_code'

/**
 * The name mapping: a tool named `mcp__<server>__<tool>` is `tools.<server>.<tool>`, any other
 * `tools.<name>`. Names are kept as they are (`tools['my-server'].get_file`), never re-cased.
 */
export function apiPath(name: string): string[] {
  const m = /^mcp__(.+?)__(.+)$/.exec(name)
  return m ? [m[1]!, m[2]!] : [name]
}

/** The tool a `tools.…` path names, or undefined when the path is not a tool's shape. */
export function toolNameOf(path: readonly string[]): string | undefined {
  if (path.length === 1) return path[0]
  if (path.length === 2) return `mcp__${path[0]}__${path[1]}`
  return undefined
}
