/**
 * One configured hook as an object: its argv resolved from the base directory, and its run, which
 * counts failures in a row (three disable it with a warning). A failure — a crash, a timeout, an
 * exit code the event does not take, a program this machine cannot run — never blocks: the run
 * answers undefined and the caller goes on as if there were no hook.
 */
import { realpathSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import { messageOf, type Logger } from 'yoke'
import { executableFormat, runProcess, toolEnv } from '../process/api.ts'
import type { HookEvent, hookConfig } from './api.ts'
import type { z } from 'zod'

/** What a run of a hook answered: its exit code and stdout, or why it failed. */
export interface Outcome {
  code?: number
  stdout: string
  failure?: string
}

/** a hook's stdout is read up to this; past it the hook is stopped (a failure, never a block) */
const MAX_STDOUT = 1024 * 1024
/** failures in a row that disable a hook */
export const BREAKER = 3

export class HookRunner {
  readonly event: HookEvent
  /** `event#index command…`: names the hook in taps and warnings */
  readonly name: string
  /** the command as configured, words joined */
  readonly command: string
  /** the argv to run: a first word starting `./` or `../` resolved from the base directory */
  readonly #argv: string[]
  /** failures in a row; at BREAKER the hook runs no more */
  #failures = 0

  constructor(
    private readonly hook: z.output<typeof hookConfig>,
    index: number,
    private readonly baseDir: string,
    private readonly logger: Logger,
    /** the instance's lifetime: a hook still running when it ends is killed (its process group) */
    private readonly lifetime: AbortSignal,
  ) {
    this.event = hook.event
    this.command = hook.command.join(' ')
    this.name = `${hook.event}#${index} ${this.command}`
    this.#argv = hook.command.map((part, i) =>
      i === 0 && /^\.\.?\//.test(part) ? resolve(baseDir, part) : part,
    )
  }

  /** Whether the hook runs for a call of `tool` (its tool_filter; empty: every tool). */
  applies(tool: string): boolean {
    return !this.hook.tool_filter.length || this.hook.tool_filter.includes(tool)
  }

  get disabled(): boolean {
    return this.#failures >= BREAKER
  }

  /** Runs the hook with `fields` in its payload; undefined when it failed (counted, logged) or is disabled. */
  async run(fields: Record<string, unknown>, codes: number[]): Promise<Outcome | undefined> {
    if (this.disabled) return undefined
    const payload = { schema_version: 1, event: this.event, ...fields }
    // whatever goes wrong on the way is this hook's failure, counted and logged, never a block
    const outcome = await runHook(
      this.#argv,
      payload,
      this.hook,
      this.baseDir,
      codes,
      this.lifetime,
    ).catch((err): Outcome => ({ stdout: '', failure: messageOf(err) }))
    if (!outcome.failure) {
      this.#failures = 0
      return outcome
    }
    this.#failures++
    this.logger.warn(
      `hook ${this.name} failed: ${outcome.failure}${this.disabled ? `; disabled after ${BREAKER} failures in a row` : ''}`,
    )
    return undefined
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
  hook: { timeout_ms: number; env: readonly string[] },
  cwd: string,
  codes: number[],
  lifetime: AbortSignal,
): Promise<Outcome> {
  const [file, ...args] = argv as [string, ...string[]]
  const refused = file.includes('/') ? formatProblem(resolve(cwd, file)) : undefined
  if (refused) return { stdout: '', failure: refused }
  let r
  let kill: (() => void) | undefined
  try {
    r = await runProcess({
      file,
      args,
      env: toolEnv({ allow: hook.env, cwd }),
      cwd,
      input: JSON.stringify(payload),
      maxStdoutBytes: MAX_STDOUT,
      timeoutMs: hook.timeout_ms,
      onKill: (k) => lifetime.addEventListener('abort', (kill = k), { once: true }),
    })
  } catch (err) {
    return { stdout: '', failure: messageOf(err) }
  } finally {
    if (kill) lifetime.removeEventListener('abort', kill)
  }
  // the runner's own kill at the output cap is said as the cap, not as a signal
  if (r.flooded) return { stdout: '', failure: r.stopped! }
  if (r.timedOut) return { stdout: r.stdout, failure: `hook timed out after ${hook.timeout_ms}ms` }
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
