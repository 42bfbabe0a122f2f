/**
 * MCP tasks across replicas: the replica that runs a task writes what tasks/get answers to the
 * shared store as it changes (`mcp:task:<id>`, kept TTL_MS after its last change), so any replica
 * answers tasks/get, and after the runner is gone too: a completed task's result stays readable,
 * a task whose runner died before it ended reads `failed`, saying so. tasks/update and
 * tasks/cancel are relayed to the runner (cluster.ts), which alone holds the pipeline call.
 *
 * Writes are coalesced (one in flight per task, the latest state wins) so a chatty progress
 * stream costs the store little; a task's end is written at once. A write the store refuses is
 * retried with the next change and said once per outage: the runner's own tasks/get never
 * depends on it.
 */
import { messageOf } from 'yoke'
import type { Cluster } from './cluster.ts'
import { POLL_MS, TTL_MS, type ServedTask } from './tasks.ts'

/** A task as the store keeps it. */
export interface TaskRecord {
  /** the replica that runs it */
  owner: string
  /** the process of that replica that runs it (a replica restarted under its id is another) */
  incarnation?: string
  view: string
  /** the caller base of the connection (or token holder) that started it: only it may see it */
  connection: string
  ended: boolean
  /** what tasks/get answers, as the runner last wrote it */
  wire: Record<string, unknown>
}

const keyOf = (id: string) => `mcp:task:${id}`
/** how soon a task's end that the store refused is written again */
const RETRY_MS = 1_000

export class SharedTasks {
  /** per task: a write in flight, and whether another change came while it was */
  readonly #writing = new Map<string, { again: boolean; done: Promise<void> }>()
  #failing = false

  constructor(
    private readonly cluster: Cluster,
    private readonly warn: (message: string) => void,
  ) {}

  /** Writes the task's state (coalesced: the latest state is what lands). */
  save(task: ServedTask): void {
    const writing = this.#writing.get(task.taskId)
    if (writing) {
      writing.again = true
      return
    }
    const entry = { again: false, done: Promise.resolve() }
    entry.done = this.#write(task, entry)
    this.#writing.set(task.taskId, entry)
  }

  /** Resolves when the writes of task `id` begun so far have landed (or failed). */
  async written(id: string): Promise<void> {
    while (this.#writing.has(id)) await this.#writing.get(id)!.done
  }

  /** Resolves when every write begun so far has landed (or failed). */
  async flush(): Promise<void> {
    while (this.#writing.size) await Promise.all([...this.#writing.values()].map((w) => w.done))
  }

  /**
   * The task `id` as tasks/get answers it from another replica, or undefined when the store has
   * none (never started, or ended over TTL_MS ago). A task whose runner is gone before it ended
   * is `failed`. Throws (STORE_UNAVAILABLE) when the store cannot answer.
   */
  async read(id: string): Promise<TaskRecord | undefined> {
    const record = (await this.cluster.store.get<TaskRecord>(keyOf(id)))?.value
    if (!record || record.ended || (await this.cluster.alive(record.owner, record.incarnation)))
      return record
    return {
      ...record,
      ended: true,
      wire: {
        ...record.wire,
        status: 'failed',
        statusMessage: `the replica running it (${record.owner}) stopped before it ended`,
        error: {
          code: -32603,
          message: `the replica running this task (${record.owner}) stopped before it ended, so its result is lost; call the tool again`,
        },
        pollIntervalMs: POLL_MS,
      },
    }
  }

  async #write(task: ServedTask, entry: { again: boolean }): Promise<void> {
    try {
      do {
        entry.again = false
        const record: TaskRecord = {
          owner: this.cluster.replica,
          incarnation: this.cluster.incarnation,
          view: task.view,
          connection: task.exchange.connection,
          ended: task.endedAt !== undefined,
          wire: task.wire(),
        }
        await this.cluster.store.put(keyOf(task.taskId), record, { ttlMs: TTL_MS })
        if (this.#failing) this.#failing = false
      } while (entry.again)
    } catch (err) {
      if (!this.#failing)
        this.warn(
          `MCP task ${task.taskId}: its state could not be written to the shared store (${messageOf(err)}); other replicas answer tasks/get with what they last read until the store is back`,
        )
      this.#failing = true
      // an end that did not land is tried again: no later change would carry it
      if (task.endedAt !== undefined && Date.now() - task.endedAt < TTL_MS)
        setTimeout(() => this.save(task), RETRY_MS).unref()
    } finally {
      this.#writing.delete(task.taskId)
    }
  }
}
