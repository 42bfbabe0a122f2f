/**
 * The soak's bookkeeping: every call goes through a Tracker, which counts its result by status,
 * notices a call id seen twice (duplicated), a call that ran past its own bound (hung) and a call
 * whose promise never settled by the scenario's end (lost). Plus the process checks every
 * scenario shares: is a pid (or its process group) still there, which children does this
 * process have, how much memory it holds.
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { ToolResult } from '../../src/index.ts'
import { alive } from '../../test/helpers/mcp.ts'

export { alive }

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** What one scenario found. `problems` are its own failed expectations, each said in a sentence. */
export interface Report {
  name: string
  made: number
  statuses: Map<string, number>
  lost: number
  duplicated: number
  hung: number
  orphans: number[]
  problems: string[]
  /** extra figures for the line (RSS, reloads, kills, …) */
  notes: string[]
  ms: number
}

interface Pending {
  label: string
  started: number
  settled: boolean
  hung: boolean
}

export class Tracker {
  readonly statuses = new Map<string, number>()
  readonly problems: string[] = []
  readonly notes: string[] = []
  readonly orphans: number[] = []
  made = 0
  duplicated = 0
  hung = 0
  inFlight = 0
  maxInFlight = 0
  #ids = new Set<string>()
  #pending = new Set<Pending>()
  readonly #started = performance.now()

  /** `perCallMs`: a call not settled by then is hung (it still counts when it settles later). */
  constructor(
    readonly name: string,
    readonly perCallMs: number,
  ) {}

  /**
   * Tracks one call; resolves with its result (undefined when it rejected, which a runtime call
   * must never do: that counts as a REJECTED status and a problem).
   */
  track(label: string, call: () => Promise<ToolResult>): Promise<ToolResult | undefined> {
    this.made++
    this.inFlight++
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
    const entry: Pending = { label, started: performance.now(), settled: false, hung: false }
    this.#pending.add(entry)
    const timer = setTimeout(() => {
      entry.hung = true
      this.hung++
      this.problem(`call ${label} still running after ${this.perCallMs} ms`)
    }, this.perCallMs)
    const settle = () => {
      clearTimeout(timer)
      entry.settled = true
      this.#pending.delete(entry)
      this.inFlight--
    }
    let promise: Promise<ToolResult>
    try {
      promise = call()
    } catch (err) {
      promise = Promise.reject(err)
    }
    return promise.then(
      (result) => {
        settle()
        this.result(label, result)
        return result
      },
      (err) => {
        settle()
        this.count('REJECTED')
        this.problem(`call ${label} rejected instead of resolving: ${(err as Error)?.message}`)
        return undefined
      },
    )
  }

  /** Counts one result; a call id seen before is a duplicate. */
  result(label: string, result: ToolResult) {
    this.count(result.status)
    if (this.#ids.has(result.callId)) {
      this.duplicated++
      this.problem(`call ${label}: call id ${result.callId} answered twice`)
    }
    this.#ids.add(result.callId)
  }

  count(status: string, n = 1) {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + n)
  }

  /** Counts a call made some other way (a CLI run, a control request) by hand. */
  external(status: string) {
    this.made++
    this.count(status)
  }

  status(name: string): number {
    return this.statuses.get(name) ?? 0
  }

  problem(text: string) {
    if (this.problems.length < 20) this.problems.push(text)
    else if (this.problems.length === 20) this.problems.push('… (more problems left out)')
  }

  /** Waits (bounded) for every tracked call to settle. */
  async drain(ms: number): Promise<void> {
    const end = Date.now() + ms
    while (this.#pending.size && Date.now() < end) await sleep(20)
  }

  /** The report; calls still pending now are lost. */
  report(): Report {
    const lost = [...this.#pending]
    for (const entry of lost.slice(0, 5))
      this.problem(
        `call ${entry.label} never settled (${Math.round(performance.now() - entry.started)} ms)`,
      )
    return {
      name: this.name,
      made: this.made,
      statuses: this.statuses,
      lost: lost.length,
      duplicated: this.duplicated,
      hung: this.hung,
      orphans: this.orphans,
      problems: this.problems,
      notes: this.notes,
      ms: performance.now() - this.#started,
    }
  }

  /** A check that must hold: a problem when it does not. */
  expect(ok: boolean, what: string) {
    if (!ok) this.problem(what)
  }
}

/** Rejects after `ms` with `what` in the message; the timer never keeps the process alive. */
export function within<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)
    timer.unref()
  })
  return Promise.race([work, expired]).finally(() => clearTimeout(timer))
}

/** Polls `check` until true or `ms` passes; returns whether it held. */
export async function until(check: () => boolean, ms: number, every = 20): Promise<boolean> {
  const end = Date.now() + ms
  for (;;) {
    if (check()) return true
    if (Date.now() >= end) return false
    await sleep(every)
  }
}

/** True while any process of the group led by `pid` runs (zombies aside, as far as /proc says). */
export function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0)
  } catch {
    return false
  }
  // a group of zombies only: ask ps for live members
  return groupMembers(pid).some((p) => alive(p))
}

function groupMembers(pgid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=,pgid=', '-e'], { encoding: 'utf8', timeout: 5000 })
      .split('\n')
      .map((line) => line.trim().split(/\s+/).map(Number))
      .filter(([, group]) => group === pgid)
      .map(([pid]) => pid!)
  } catch {
    return []
  }
}

/**
 * The live children of this process (`ps --ppid`), the ps itself left out, and tsx's esbuild
 * service (the TypeScript loader's own helper, started when a .ts module is first imported).
 */
export function children(): Array<{ pid: number; command: string }> {
  let out: string
  try {
    out = execFileSync('ps', ['--ppid', String(process.pid), '-o', 'pid=,stat=,args='], {
      encoding: 'utf8',
      timeout: 5000,
    })
  } catch {
    return [] // ps exits 1 when it lists nothing
  }
  return out
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(line))
    .filter(
      (m): m is RegExpExecArray =>
        !!m && !m[2]!.startsWith('Z') && !/^ps |esbuild --service/.test(m[3]!),
    )
    .map((m) => ({ pid: Number(m[1]), command: m[3]!.slice(0, 120) }))
}

/**
 * Live processes (other than this one) that run in `dir` or name it on their command line: what a
 * scenario's temporary project started, grandchildren that left their parent included.
 */
export function processesIn(dir: string): Array<{ pid: number; command: string }> {
  const found: Array<{ pid: number; command: string }> = []
  let entries: string[]
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e))
  } catch {
    return found
  }
  for (const entry of entries) {
    const pid = Number(entry)
    if (pid === process.pid) continue
    try {
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
      let cwd = ''
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`)
      } catch {}
      if ((cwd === dir || cwd.startsWith(dir + '/') || command.includes(dir)) && alive(pid))
        found.push({ pid, command: command.slice(0, 120) })
    } catch {}
  }
  return found
}

/**
 * After a scenario closed what it started: each pid it saw (and its process group) must be gone,
 * and this process must have no live child. Waits up to `ms` for stragglers that are exiting.
 */
export async function orphanCheck(
  tracker: Tracker,
  pids: Iterable<number>,
  dir?: string,
  ms = 3000,
) {
  const seen = [...new Set(pids)]
  const left = () => seen.filter((pid) => alive(pid) || groupAlive(pid))
  const inDir = () => (dir ? processesIn(dir) : [])
  await until(() => !left().length && !children().length && !inDir().length, ms, 50)
  for (const pid of left()) {
    tracker.orphans.push(pid)
    tracker.problem(`process ${pid} (or its group) outlived the composition`)
  }
  for (const p of inDir()) {
    if (!tracker.orphans.includes(p.pid)) tracker.orphans.push(p.pid)
    tracker.problem(`process ${p.pid} still runs in the scenario's project: ${p.command}`)
  }
  for (const child of children()) {
    if (!tracker.orphans.includes(child.pid)) tracker.orphans.push(child.pid)
    tracker.problem(`child ${child.pid} left running: ${child.command}`)
  }
}

/** Ends what an orphan check found, so one scenario's leftovers do not spoil the next. */
export function reap(pids: number[]) {
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {}
    try {
      process.kill(pid, 'SIGKILL')
    } catch {}
  }
}

let collect: (() => void) | undefined
/** A full garbage collection (the flag is set at run time: `npm run soak` passes no node flags). */
export function gc() {
  if (!collect) {
    setFlagsFromString('--expose-gc')
    collect = runInNewContext('gc') as () => void
  }
  collect()
}

export const mib = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`

/**
 * Watches this process while something runs: the longest the event loop was blocked (a 10 ms
 * timer's lateness) and the highest RSS.
 */
export function probe(): () => { lagMs: number; rssPeak: number } {
  let lagMs = 0
  let rssPeak = process.memoryUsage().rss
  let last = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    lagMs = Math.max(lagMs, now - last - 10)
    last = now
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss)
  }, 10)
  return () => {
    clearInterval(timer)
    const now = performance.now()
    lagMs = Math.max(lagMs, now - last - 10)
    return { lagMs: Math.round(lagMs), rssPeak: Math.max(rssPeak, process.memoryUsage().rss) }
  }
}
