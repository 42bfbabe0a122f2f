/**
 * Test helpers: temporary projects on disk, running the real `yoke` binary with a bounded wait,
 * and driving `yoke dev --events json` event by event.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync, renameSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { after } from 'node:test'
import { fileURLToPath } from 'node:url'
import { removeTreeSync } from './temp.ts'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const YOKE = join(ROOT, 'bin', 'yoke.js')

export interface Project {
  dir: string
  home: string
  path(rel: string): string
  write(rel: string, text: string): string
  /** writes through a temp file and a rename, as editors do */
  writeAtomic(rel: string, text: string): string
  /** removes the project, retrying a tree still being written (end its processes first) */
  cleanup(): void
}

export function tempProject(files: Record<string, string> = {}): Project {
  const dir = mkdtempSync(join(tmpdir(), 'yoke-test-'))
  const home = join(dir, '.home')
  mkdirSync(home)
  const project: Project = {
    dir,
    home,
    path: (rel) => join(dir, rel),
    write(rel, text) {
      const file = join(dir, rel)
      mkdirSync(dirname(file), { recursive: true })
      writeFileSync(file, text)
      return file
    },
    writeAtomic(rel, text) {
      const file = join(dir, rel)
      writeFileSync(file + '.tmp', text)
      renameSync(file + '.tmp', file)
      return file
    },
    cleanup: () => removeTreeSync(dir),
  }
  for (const [rel, text] of Object.entries(files)) project.write(rel, text)
  return project
}

/** A maker of temporary projects for one suite: every one it made is removed when the suite ends. */
export function suiteProjects(): (files?: Record<string, string>) => Project {
  const made: Project[] = []
  after(() => made.forEach((p) => p.cleanup()))
  return (files = {}) => {
    const p = tempProject(files)
    made.push(p)
    return p
  }
}

export interface RunResult {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * How long one `yoke` command may run before it is killed as hung (default of `timeoutMs`): a
 * one-shot command takes a second or two, and 15-20 s on a machine loaded 15 times over its
 * cores (measured: `yoke inspect` on a 2-core machine at a load of 30); the bound only catches a
 * command that never ends.
 */
export const RUN_MS = 120_000

/** Runs `yoke ...args` to completion (killed after `timeoutMs`, default RUN_MS). */
export function runYoke(args: string[], options: RunOptions = {}): Promise<RunResult> {
  return runYokeWithInput(args, options)
}

type RunOptions = { cwd?: string; home?: string; env?: Record<string, string>; timeoutMs?: number }

/** runYoke with `input` piped to stdin (closed after it); with no input, stdin is closed at once. */
export function runYokeWithInput(
  args: string[],
  options: RunOptions = {},
  input = '',
): Promise<RunResult> {
  const env = {
    ...(process.env as Record<string, string>),
    NO_COLOR: '1',
    YOKE_HOME: options.home ?? join(options.cwd ?? ROOT, '.home'),
    ...options.env,
  }
  const ms = options.timeoutMs ?? RUN_MS
  return runCommand(process.execPath, [YOKE, ...args], { cwd: options.cwd ?? ROOT, env, input, ms })
}

/**
 * Runs `command args` to its end, stdout and stderr collected, stdin given `input` and closed;
 * killed (and rejected with what it printed) after `ms`, which only catches a hang.
 */
export function runCommand(
  command: string,
  args: string[],
  options: { cwd: string; env: Record<string, string>; input?: string; ms: number },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.stdin.end(options.input ?? '')
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(`${args.join(' ')} did not finish in ${options.ms} ms\n${stdout}\n${stderr}`),
      )
    }, options.ms)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

export type DevEvent = Record<string, any> & { type: string }

/** A running `yoke dev --events json`, read event by event. */
export class DevProcess {
  readonly child: ChildProcess
  readonly events: DevEvent[] = []
  stderr = ''
  #waiters: Array<{
    match: (e: DevEvent) => boolean
    resolve: (e: DevEvent) => void
    from: number
  }> = []
  #exited: Promise<number | null>

  constructor(
    args: string[],
    options: { cwd: string; home: string; env?: Record<string, string> },
  ) {
    this.child = spawn(process.execPath, [YOKE, 'dev', '--events', 'json', ...args], {
      cwd: options.cwd,
      env: { ...process.env, NO_COLOR: '1', YOKE_HOME: options.home, ...options.env },
    })
    this.child.stderr!.on('data', (d) => (this.stderr += d))
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      let event: DevEvent
      try {
        event = JSON.parse(line)
      } catch {
        event = { type: 'non-json', line }
      }
      this.events.push(event)
      for (const w of [...this.#waiters]) {
        if (w.match(event)) {
          this.#waiters.splice(this.#waiters.indexOf(w), 1)
          w.resolve(event)
        }
      }
    })
    this.#exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)))
  }

  /**
   * The next event (after the `after`-th event seen, default: now) that matches; fails after
   * `timeoutMs` (default 60 s: a wait for an event, bounded only to catch one that never comes).
   */
  next(
    match: (e: DevEvent) => boolean,
    timeoutMs = 60_000,
    after = this.events.length,
  ): Promise<DevEvent> {
    const seen = this.events.slice(after).find(match)
    if (seen) return Promise.resolve(seen)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w.resolve !== done)
        reject(
          new Error(
            `no matching dev event within ${timeoutMs} ms; events:\n${this.events.map((e) => JSON.stringify(e)).join('\n')}\nstderr:\n${this.stderr}`,
          ),
        )
      }, timeoutMs)
      const done = (e: DevEvent) => {
        clearTimeout(timer)
        resolve(e)
      }
      this.#waiters.push({ match, resolve: done, from: after })
    })
  }

  /** `ready` (default bound 120 s, as RUN_MS: a start on a loaded machine takes a while). */
  ready(timeoutMs = 120_000) {
    return this.next((e) => e.type === 'ready', timeoutMs, 0)
  }

  /**
   * Performs `edit`, then waits for the reloads it causes to end: the last reload event after
   * which nothing reloads for `quietMs` (an edit can cause more than one reload).
   */
  async reloadAfter(edit: () => void, timeoutMs = 60_000, quietMs = 300): Promise<DevEvent> {
    const after = this.events.length
    edit()
    let last = await this.next((e) => e.type === 'reload', timeoutMs, after)
    for (;;) {
      const seen = this.events.length
      const more = await this.next((e) => e.type === 'reload', quietMs, seen).catch(() => undefined)
      if (!more) return last
      last = more
    }
  }

  async stop(timeoutMs = 10000): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode
    this.child.kill('SIGINT')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs)
    const code = await this.#exited
    clearTimeout(timer)
    return code
  }
}

export function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
