/**
 * @module runtime/tasks
 * Background tasks: a spawnOnly tool's call returns at once with a task id and runs on here.
 * The `tasks` service tracks status and results and announces each completion on a hook.
 */
import { SyncHook } from 'tapable'
import { defineHooks, notify } from '../kernel/hooks.ts'
import { freezeDeep } from './json.ts'
import type { ResultStatus, ToolCall, ToolResult } from './types.ts'

export interface TaskInfo {
  id: string
  tool: string
  scope: string
  status: 'running' | 'done' | 'failed' | 'cancelled'
  result?: ToolResult
  startedAt: number
  endedAt?: number
}

type TaskRun = (signal: AbortSignal) => Promise<Partial<ToolResult> & { status: ResultStatus }>

let nextTask = 0
const KEEP = 100

export class Tasks {
  readonly hooks = defineHooks('tasks', {
    /** a task ended: done, failed or cancelled */
    completed: new SyncHook<[TaskInfo]>(['task']),
  })
  readonly #tasks = new Map<
    string,
    { info: TaskInfo; abort: AbortController; done: Promise<TaskInfo> }
  >()

  constructor(private readonly onError: (message: string, err: unknown) => void = () => {}) {}

  start(call: ToolCall, run: TaskRun): TaskInfo {
    const info: TaskInfo = {
      id: `task_${++nextTask}`,
      tool: call.name,
      scope: call.scope,
      status: 'running',
      startedAt: Date.now(),
    }
    const abort = new AbortController()
    const done = run(abort.signal).then(
      (partial) =>
        this.#end(info, {
          callId: call.id,
          tool: call.name,
          ok: partial.status === 'ok',
          content: [],
          durationMs: Date.now() - info.startedAt,
          ...partial,
        }),
      (err) =>
        this.#end(info, {
          callId: call.id,
          tool: call.name,
          status: 'EXEC_FAILED',
          ok: false,
          content: [{ type: 'text', text: String(err?.message ?? err) }],
          durationMs: Date.now() - info.startedAt,
        }),
    )
    this.#tasks.set(info.id, { info, abort, done })
    return info
  }

  get(id: string): TaskInfo | undefined {
    return this.#tasks.get(id)?.info
  }

  list(): TaskInfo[] {
    return [...this.#tasks.values()].map((t) => t.info)
  }

  /** Resolves when the task ends (undefined for an unknown id). */
  async wait(id: string): Promise<TaskInfo | undefined> {
    return this.#tasks.get(id)?.done
  }

  cancel(id: string): boolean {
    const task = this.#tasks.get(id)
    if (!task || task.info.status !== 'running') return false
    task.abort.abort()
    return true
  }

  #end(info: TaskInfo, result: ToolResult): TaskInfo {
    info.result = freezeDeep(result)
    info.endedAt = Date.now()
    info.status = result.ok ? 'done' : result.status === 'ABORTED' ? 'cancelled' : 'failed'
    notify(this.hooks.completed, [info], (message, err) =>
      this.onError(`${message} (task ${info.id})`, err),
    )
    // finished tasks are kept for looking up, the most recent KEEP of them
    const ended = [...this.#tasks.values()].filter((t) => t.info.status !== 'running')
    for (const t of ended.slice(0, Math.max(0, ended.length - KEEP))) this.#tasks.delete(t.info.id)
    return info
  }
}
