/**
 * The Runs view's server side: the project's agent runs (listed from the transcripts' folder, the
 * newest `maxRuns`, each row cached by size and time), one run's steps, and the replays and forks
 * the page starts through the `agent` service — a replay plays the run's cassette against the
 * current tools, a fork goes on from a step with the current model — each with a cancel, and
 * compared with the run it comes from when it ends. While a browser watches, the folder is watched
 * too, so runs started anywhere (`yoke run` in a terminal) appear at once.
 */
import { readdirSync, statSync, watch, type FSWatcher } from 'node:fs'
import { resolve } from 'node:path'
import type { Context, FiberInfo } from 'yoke'
import type { AgentApi, AgentRun, RunOptions } from '../agent-loop/api.ts'
import type { ModelClient } from '../models/api.ts'
import type { RunDetail, RunJob, RunRow, RunsSection } from './protocol.ts'
import type { Answer } from './server.ts'
import { errorBody } from './server.ts'
import * as read from './transcripts.ts'

/** Jobs kept after they end, for the page. */
const JOBS = 20
/** Steps a comparison carries, per side. */
const COMPARED = 200

/** The replay plugin's cassettes load only when a replay starts (module level: see index.ts). */
const loadReplay = () => import('../replay/api.ts')

export interface RunsOptions {
  maxRuns: number
  maxRunBytes: number
  maxRunJobs: number
}

type Ctx = Context & { project: { dir: string } }

export class RunsDesk {
  readonly #rows = new Map<string, { size: number; mtime: number; row: RunRow }>()
  readonly #jobs = new Map<string, { job: RunJob; run?: AgentRun }>()
  #watcher?: FSWatcher
  #watched?: string
  #poll?: NodeJS.Timeout

  constructor(
    readonly ctx: Ctx,
    readonly options: RunsOptions,
    /** a job began or ended */
    readonly onJob: (job: RunJob) => void,
  ) {}

  get agent(): AgentApi | undefined {
    return this.ctx.get('agent') as AgentApi | undefined
  }

  /** The transcripts' folder: the agent loop's, else its default. */
  dir(): string {
    return this.agent?.transcripts ?? resolve(this.ctx.project.dir, '.yoke', 'runs')
  }

  section(): RunsSection {
    const dir = this.dir()
    let names: string[] = []
    try {
      names = readdirSync(dir).filter((f) => f.endsWith('.jsonl') && !f.endsWith('.cassette.jsonl'))
    } catch {
      // no runs yet
    }
    names.sort().reverse()
    // ids sort by their start's second; within one second, by the start's time
    const runs = names
      .slice(0, this.options.maxRuns)
      .map((f) => this.#row(dir, f.slice(0, -6)))
      .sort((a, b) => (a.id.slice(0, 15) === b.id.slice(0, 15) ? (b.at ?? 0) - (a.at ?? 0) : 0))
    const agent = this.agent
    const blocked = {
      ...(!agent && { replay: this.#why('agent'), fork: this.#why('agent') }),
      ...(agent && !this.ctx.get('model') && { fork: this.#why('model') }),
    }
    return {
      dir,
      runs,
      ...(names.length > runs.length && { more: names.length - runs.length }),
      ...(Object.keys(blocked).length && { blocked }),
      ...(agent &&
        !agent.transcripts && {
          unavailable:
            'the agent loop writes no transcripts (its config transcripts: false): runs are not kept, so there is nothing to list, replay or fork',
        }),
      jobs: [...this.#jobs.values()].map((j) => j.job).reverse(),
    }
  }

  /** One run's row, read again only when its file changed. */
  #row(dir: string, id: string): RunRow {
    const file = read.transcriptOf(dir, id)
    let stat
    try {
      stat = statSync(file)
    } catch (err) {
      return { id, status: 'unreadable', bytes: 0, problem: `${file}: ${(err as Error).message}` }
    }
    const cached = this.#rows.get(file)
    if (cached && cached.size === stat.size && cached.mtime === stat.mtimeMs) return cached.row
    const row = read.runRow(dir, id, stat, this.ctx.project.dir)
    if (this.#jobs.get(id)?.job.state === 'running') row.status = 'running'
    this.#rows.set(file, { size: stat.size, mtime: stat.mtimeMs, row })
    if (this.#rows.size > this.options.maxRuns * 2)
      this.#rows.delete(this.#rows.keys().next().value!)
    return row
  }

  /** Why a replay or fork cannot start: the agent loop or the model is missing, and the fix. */
  #why(service: 'agent' | 'model'): string {
    const fiber = this.ctx
      .instances()
      .find((f: FiberInfo) => f.plugin.provides?.includes(service) && f.state !== 'disposed')
    if (fiber?.error)
      return `${fiber.label} is ${fiber.state}: ${fiber.error.message}${fiber.error.hint ? ` — ${fiber.error.hint}` : ''}`
    if (fiber) return `${fiber.label} is ${fiber.state}`
    return service === 'agent'
      ? 'no agent loop in this composition: add `agent: { use: agent-loop }` to the config (replay and fork run through it)'
      : 'no model in this composition: add a provider as `model` (openai, anthropic, or replay with a cassette)'
  }

  detail(id: string): Answer {
    if (!read.validRunId(id)) return bad(`"${id}" is not a run id`)
    const dir = this.dir()
    const file = read.transcriptOf(dir, id)
    if (!statSync(file, { throwIfNoEntry: false })?.isFile())
      return {
        status: 404,
        body: errorBody('NOT_FOUND', `no run ${id} in ${dir}`, 'the runs list has the ids'),
      }
    const body: RunDetail = read.detail(this.#row(dir, id), file, this.options.maxRunBytes)
    return { status: 200, body }
  }

  async act(id: string, verb: string, body: unknown): Promise<Answer> {
    if (!read.validRunId(id)) return bad(`"${id}" is not a run id`)
    if (verb === 'cancel') {
      const held = this.#jobs.get(id)
      if (!held?.run)
        return { status: 404, body: errorBody('NOT_FOUND', `no replay or fork ${id} runs here`) }
      held.run.cancel('cancelled from the console')
      return { status: 200, body: held.job }
    }
    const running = [...this.#jobs.values()].filter((j) => j.job.state === 'running').length
    if (running >= this.options.maxRunJobs)
      return {
        status: 429,
        body: errorBody(
          'BUSY',
          `${running} replays or forks run already (console config maxRunJobs)`,
          'wait for one to end, or cancel it',
        ),
      }
    const dir = this.dir()
    const file = read.transcriptOf(dir, id)
    if (!statSync(file, { throwIfNoEntry: false })?.isFile())
      return { status: 404, body: errorBody('NOT_FOUND', `no run ${id} in ${dir}`) }
    const row = this.#row(dir, id)
    try {
      return verb === 'replay'
        ? await this.#replay(row, file)
        : await this.#fork(row, file, (body as { turn?: unknown } | null)?.turn)
    } catch (err) {
      const e = err as { code?: string; message?: string; hint?: string }
      return { status: 422, body: errorBody(e.code ?? 'FAILED', e.message ?? String(err), e.hint) }
    }
  }

  async #replay(row: RunRow, file: string): Promise<Answer> {
    const agent = this.agent
    if (!agent) return unavailable(this.#why('agent'))
    if (row.noReplay || !row.cassette) return unavailable(row.noReplay ?? 'no recording')
    const { createReplayModel, replayMismatchOf, firstDifference } = await loadReplay()
    const played = createReplayModel({ cassette: row.cassette, lane: 'main' })
    let mismatch: RunJob['mismatch']
    const model: ModelClient = {
      ...played,
      complete: (request, options) =>
        played.complete(request, options).catch((err: unknown) => {
          const m = replayMismatchOf(err)
          if (m) mismatch ??= { turn: m.turn, lane: m.lane, difference: m.difference }
          throw err
        }),
    }
    const { records } = read.readRecords(file, this.options.maxRunBytes)
    const old = read.stepsOf(records).filter((s) => s.turn >= 1)
    return this.#start(row, records, { kind: 'replay', model }, (job, now) => {
      if (mismatch) job.mismatch = mismatch
      this.#compare(job, old, now, firstDifference)
    })
  }

  async #fork(row: RunRow, file: string, turn: unknown): Promise<Answer> {
    const agent = this.agent
    if (!agent) return unavailable(this.#why('agent'))
    if (!this.ctx.get('model')) return unavailable(this.#why('model'))
    if (row.noFork) return unavailable(row.noFork)
    const { records, truncated } = read.readRecords(file, this.options.maxRunBytes)
    const turns = records.filter((r) => r.type === 'turn').length
    if (typeof turn !== 'number' || !Number.isInteger(turn) || turn < 1 || turn > turns)
      return bad(
        `the body is { "turn": N } with N a turn of the run (1 to ${turns}${truncated ? ', of the part read' : ''})`,
      )
    const { firstDifference } = await loadReplay()
    const messages = read.messagesBefore(records, turn)
    const old = read.stepsOf(records).filter((s) => s.turn >= turn)
    return this.#start(row, records, { kind: 'fork', turn, messages }, (job, now) =>
      this.#compare(job, old, now, firstDifference),
    )
  }

  /** Starts the new run and answers its job; `done` fills in how it came out, from its transcript. */
  #start(
    row: RunRow,
    records: read.Record_[],
    how: Pick<RunOptions, 'model' | 'messages'> & { kind: RunJob['kind']; turn?: number },
    done: (job: RunJob, steps: read.Record_[]) => void,
  ): Answer {
    const start = records.find((r) => r.type === 'start') ?? {}
    const budget = (start as { budget?: RunOptions['budget'] }).budget
    const run = this.agent!.run(row.task ?? '', {
      caller: 'console',
      origin: { kind: how.kind, runId: row.id, by: 'console', ...(how.turn && { turn: how.turn }) },
      ...(how.model && { model: how.model }),
      ...(how.messages && { messages: how.messages }),
      ...(budget && { budget }),
    })
    const job: RunJob = {
      id: run.id,
      kind: how.kind,
      of: row.id,
      ...(how.turn && { turn: how.turn }),
      state: 'running',
      at: new Date().toISOString(),
    }
    this.#jobs.set(run.id, { job, run })
    while (this.#jobs.size > JOBS) this.#jobs.delete(this.#jobs.keys().next().value!)
    void run.result.then((result) => {
      job.status = result.status
      if (result.reason) job.reason = result.reason
      job.state = result.status === 'cancelled' ? 'cancelled' : 'matched'
      try {
        const now = result.transcript
          ? read.readRecords(result.transcript, this.options.maxRunBytes).records
          : []
        done(job, now)
      } catch (err) {
        job.reason = `${job.reason ? `${job.reason}; ` : ''}its transcript: ${(err as Error).message}`
      }
      if (job.state === 'matched' && result.status === 'failed' && !job.departure)
        job.state = 'failed'
      this.#jobs.set(run.id, { job })
      this.#rows.clear()
      this.onJob(job)
    })
    this.onJob(job)
    return { status: 200, body: job }
  }

  #compare(
    job: RunJob,
    old: ReturnType<typeof read.stepsOf>,
    now: read.Record_[],
    differ: (a: unknown, b: unknown, path: string) => string | undefined,
  ) {
    const steps = read.stepsOf(now).filter((s) => s.turn >= 1)
    const departure = read.departure(old, steps, differ)
    job.compared = { old: old.slice(0, COMPARED), new: steps.slice(0, COMPARED) }
    if (departure) job.departure = departure
    if ((departure || job.mismatch) && job.state !== 'cancelled') job.state = 'departed'
  }

  /** Watches the folder while a browser is here (`onChange` coalesced by the caller). */
  watch(onChange: () => void): void {
    const dir = this.dir()
    if (this.#watched === dir && (this.#watcher || this.#poll)) return
    this.unwatch()
    this.#watched = dir
    try {
      this.#watcher = watch(dir, () => onChange())
      this.#watcher.on('error', () => this.unwatch())
      // a watch never holds the dev's exit
      this.#watcher.unref()
    } catch {
      // no folder yet: look for it now and then, until the first run makes it
      this.#poll = setInterval(() => {
        if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) return
        this.unwatch()
        this.watch(onChange)
        onChange()
      }, 1000)
      this.#poll.unref()
    }
  }

  unwatch(): void {
    this.#watcher?.close()
    clearInterval(this.#poll)
    this.#watcher = this.#poll = this.#watched = undefined
  }

  /** The console closes: its replays and forks end with it. */
  close(): void {
    this.unwatch()
    for (const { run } of this.#jobs.values()) run?.cancel('the console closed')
  }
}

const bad = (message: string): Answer => ({ status: 400, body: errorBody('BAD_REQUEST', message) })
const unavailable = (message: string): Answer => ({
  status: 409,
  body: errorBody('UNAVAILABLE', message),
})
