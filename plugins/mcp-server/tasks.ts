/**
 * Calls served as MCP tasks (the `io.modelcontextprotocol/tasks` extension of 2026-07-28): a
 * client that declared the extension gets a task for a spawnOnly tool, and for a tool whose
 * source declares `execution.taskSupport`, instead of waiting for the result; it asks for the
 * task's state with `tasks/get` (from any connection, later: a client can leave and come back),
 * answers its questions with `tasks/update`, and ends it with `tasks/cancel`.
 *
 * A task follows its Exchange (the pipeline call): progress becomes its status message, an
 * approval its `input_required` state; a spawnOnly call's result names yoke's background task
 * (the `tasks` service), which the served task then waits for. Task ids are random (yoke's own
 * task ids are counters, easy to guess) and belong to the view they were made in. Ended tasks are
 * kept for TTL_MS, at most KEEP of them. Running tasks are capped (`maxTasks`, and
 * `maxTasksPerView` in one view): a call past the cap is refused, naming it, rather than queued.
 *
 * With replicas sharing a store (cluster.ts), each task's state is also written there as it
 * changes (SharedTasks), so tasks/get is answered by any replica, and tasks/update and
 * tasks/cancel are relayed to the replica that runs it. The call itself stays in that replica's
 * pipeline: when the replica is gone before the task ended, the task reads as `failed`, saying so.
 */
import { randomUUID } from 'node:crypto'
import type { CallToolResult } from '@modelcontextprotocol/server'
import type { RegisteredTool, TaskInfo, ToolResult } from 'yoke'
import type { Exchange } from './exchange.ts'
import { toCallToolResult } from './result.ts'
import type { SharedTasks } from './shared-tasks.ts'

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'

export const TTL_MS = 60 * 60_000
export const POLL_MS = 250
const KEEP = 500

/** The part of the runtime's `tasks` service a served task needs. */
export interface YokeTasks {
  wait(id: string): Promise<TaskInfo | undefined>
  cancel(id: string): boolean
}

/** a tool's failure is a completed task whose result is isError, so no task is ever 'failed' */
type Status = 'working' | 'input_required' | 'completed' | 'cancelled'

export class ServedTask {
  readonly taskId = randomUUID()
  readonly createdAt = new Date().toISOString()
  lastUpdatedAt = this.createdAt
  statusMessage?: string
  endedAt?: number
  #status: Status = 'working'
  #result?: CallToolResult
  /** yoke's background task, once a spawnOnly call has started one */
  #background?: string
  /** told of every change of what tasks/get answers (the shared store's copy follows it) */
  onChange?: (task: ServedTask) => void
  #settled!: () => void
  /** resolves once the task ended: completed or cancelled */
  readonly ended = new Promise<void>((resolve) => (this.#settled = resolve))

  constructor(
    readonly view: string,
    readonly exchange: Exchange,
    tool: RegisteredTool | undefined,
    private readonly tasks: () => YokeTasks | undefined,
  ) {
    exchange.progress = (event) => {
      const of = typeof event.total === 'number' ? `/${event.total}` : ''
      this.#touch(
        typeof event.message === 'string' ? event.message : `progress ${event.progress ?? ''}${of}`,
      )
    }
    exchange.onQuestion = () => this.#touch('waiting for an answer (tasks/update)')
    void exchange.result.then(async (result) => {
      let final: ToolResult = result
      const background = result.ok ? result.task : undefined
      if (background) {
        this.#background = background
        this.#touch(result.content.map((c) => (c.type === 'text' ? c.text : '')).join(''))
        final = (await this.tasks()?.wait(background))?.result ?? result
      }
      this.#end(final, tool)
    })
  }

  get status(): Status {
    if (this.#status === 'working' && this.exchange.inputRequests) return 'input_required'
    return this.#status
  }

  /** Ends it: the pipeline call (and yoke's background task, if one runs) is aborted. */
  cancel(why = 'cancelled by the client'): void {
    if (this.endedAt !== undefined) return
    this.#status = 'cancelled'
    this.endedAt = Date.now()
    this.#settled()
    this.#touch(why)
    this.exchange.abort(new Error(`the MCP task was ${why}`))
    if (this.#background) this.tasks()?.cancel(this.#background)
  }

  /**
   * The task as the tools/call that made it answers (CreateTaskResult): its state with no
   * questions or result in it, which tasks/get tells. A call asked a question at once (an
   * approval) is `input_required` already.
   */
  created(): Record<string, unknown> {
    const { inputRequests: _questions, result: _result, ...task } = this.wire()
    return task
  }

  /** The task as tasks/get answers it (DetailedTask of the tasks extension). */
  wire(): Record<string, unknown> {
    const status = this.status
    const inputRequests = status === 'input_required' ? this.exchange.inputRequests : undefined
    return {
      taskId: this.taskId,
      status,
      ...(this.statusMessage !== undefined && { statusMessage: this.statusMessage }),
      createdAt: this.createdAt,
      lastUpdatedAt: this.lastUpdatedAt,
      ttlMs: TTL_MS,
      pollIntervalMs: POLL_MS,
      ...(inputRequests && { inputRequests }),
      ...(status === 'completed' && { result: { resultType: 'complete', ...this.#result } }),
    }
  }

  #end(result: ToolResult, tool: RegisteredTool | undefined) {
    if (this.endedAt !== undefined) return // cancelled first
    this.endedAt = Date.now()
    this.#settled()
    if (result.status === 'ABORTED') {
      this.#status = 'cancelled'
      this.#touch('aborted')
      return
    }
    // a tool's failure is a result (isError), as it would be without a task
    this.#status = 'completed'
    this.#result = toCallToolResult(result, tool)
    this.#touch(result.ok ? 'done' : `ended ${result.status}`)
  }

  #touch(message: string) {
    this.statusMessage = message
    this.lastUpdatedAt = new Date().toISOString()
    this.onChange?.(this)
  }
}

/** The most tasks running at once. */
export interface TaskLimits {
  total: number
  perView: number
}

export class TaskTable {
  readonly #tasks = new Map<string, ServedTask>()

  /** the replicas' copy of each task, while a store is shared */
  shared?: SharedTasks

  constructor(
    private readonly yokeTasks: () => YokeTasks | undefined,
    private readonly limits: TaskLimits = { total: Infinity, perView: Infinity },
  ) {}

  /** Why one more task in `view` may not start now (too many run), or undefined. */
  refusal(view: string): string | undefined {
    let all = 0
    let here = 0
    for (const task of this.#tasks.values()) {
      if (task.endedAt !== undefined) continue
      all++
      if (task.view === view) here++
    }
    const { total, perView } = this.limits
    if (all >= total)
      return `too many MCP tasks are running (${all}, maxTasks ${total}): wait for one to end, or cancel one (tasks/cancel)`
    if (here >= perView)
      return `too many MCP tasks are running in the view "${view}" (${here}, maxTasksPerView ${perView}): wait for one to end, or cancel one (tasks/cancel)`
    return undefined
  }

  start(view: string, exchange: Exchange, tool: RegisteredTool | undefined): ServedTask {
    this.#prune()
    const task = new ServedTask(view, exchange, tool, this.yokeTasks)
    this.#tasks.set(task.taskId, task)
    task.onChange = (t) => this.shared?.save(t)
    this.shared?.save(task)
    return task
  }

  /** A task of this view (another view's, or an unknown id, is not found: ids are not shared). */
  get(id: string, view: string): ServedTask | undefined {
    this.#prune()
    const task = this.#tasks.get(id)
    return task?.view === view ? task : undefined
  }

  get size(): number {
    return this.#tasks.size
  }

  /** Writes every task's state to the store again (it may have lost them: restarted empty). */
  saveAll(): void {
    this.#prune()
    for (const task of this.#tasks.values()) this.shared?.save(task)
  }

  /** the tasks not ended yet */
  get running(): number {
    let n = 0
    for (const task of this.#tasks.values()) if (task.endedAt === undefined) n++
    return n
  }

  /**
   * A drain: waits up to `ms` for the running tasks to end (their results stay readable from the
   * other replicas through the store), then cancels the rest, saying why.
   */
  async settle(ms: number, why: string): Promise<{ finished: number; cut: number }> {
    const running = [...this.#tasks.values()].filter((t) => t.endedAt === undefined)
    let bound: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.all(running.map((t) => t.ended)),
      new Promise<void>((resolve) => (bound = setTimeout(resolve, ms))),
    ])
    clearTimeout(bound)
    const cut = running.filter((t) => t.endedAt === undefined)
    for (const task of cut) task.cancel(why)
    await this.shared?.flush()
    return { finished: running.length - cut.length, cut: cut.length }
  }

  /** Ends every running task (the instance stops). */
  cancelAll(why?: string): void {
    for (const task of this.#tasks.values()) task.cancel(why)
  }

  #prune() {
    const now = Date.now()
    const ended = [...this.#tasks.values()]
      .filter((t) => t.endedAt !== undefined)
      .sort((a, b) => a.endedAt! - b.endedAt!)
    const over = ended.length - KEEP // the oldest go first
    ended.forEach((t, i) => {
      if (i < over || now - t.endedAt! > TTL_MS) this.#tasks.delete(t.taskId)
    })
  }
}
