/**
 * The cluster soak's kinds of work, each a loop of units of work through the balancer, with what a
 * client of that kind does when a replica or Redis goes away (it tries again, a bounded number of
 * times) and the checks of each answer:
 *
 *   echo      a 2026-07-28 SDK client calls `echo` (stateless)
 *   task      a `long_job` started as an MCP task (tasks extension declared) and polled with
 *             tasks/get until it ends: completed, or `failed` naming its replica, which is expected
 *             only when that replica was SIGKILLed after the task started (a drained replica
 *             finishes its short jobs)
 *   approval  a high-risk call answered `input_required`, then answered by a retry carrying the
 *             decision (allow and deny alternate); the answer must match the decision
 *   legacy    a 2025-era v1 SDK session (sealed id, round robin) whose elicitation handler answers
 *             the approval (allow and deny alternate)
 *
 * Each unit's arguments carry its label and attempt (`t3-17#2`): an answer naming another label is
 * crossed; the tools write each run to a log (cluster.ts reads it for work that ran twice).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { modernPost } from '../../test/helpers/modern.ts'
import { messagesOf } from '../../test/helpers/serve.ts'
import { sleep, Tracker } from './track.ts'

export const TOKEN = 'soak-cluster-token-0123456789'
/** the replicas' shared secret: a 2025-era session id is sealed, so any replica resumes it */
export const SESSION_KEY = 'soak-cluster-session-secret-0123456789'
/** tries of one unit before it counts as failed after retries */
const ATTEMPTS = 8
/** a unit's own bound (the tracker's): over it, it is hung */
export const UNIT_MS = 30_000
/** how long a task is polled before the client gives up on it */
const TASK_POLL_MS = 25_000
/** the v1 client's bound on one call (a POST whose replica died never ends its SSE stream) */
const LEGACY_CALL_MS = 10_000

const backoff = (attempt: number) => sleep(Math.min(100 * 2 ** attempt, 2_000))
const textOf = (r: unknown) =>
  ((r as { content?: Array<{ text?: string }> })?.content ?? []).map((c) => c.text ?? '').join('')
const why = (err: unknown) => (err as Error)?.message ?? String(err)

/** What a replica's process was told, and when: the checks of a task's failure read it. */
export interface Chaos {
  /** replica id -> the times it was sent SIGKILL */
  killed: Map<string, number[]>
  /** replica id -> the times it was sent SIGTERM (a drain) */
  drained: Map<string, number[]>
}

/** One kind of work: its tracker (made, statuses, lost, hung) and what the tracker does not count. */
export class Work {
  readonly tracker: Tracker
  retries = 0
  /** expected task failures, by the SIGKILLed replica they name */
  readonly expected = new Map<string, number>()
  /** labels (with attempt) denied: a run of one in the tools' log is a problem */
  readonly denied = new Set<string>()
  /** labels (with attempt) this kind's client allowed: an approved tool's run of another is crossed */
  readonly allowed = new Set<string>()
  /** what the retried errors said, by their first words */
  readonly errors = new Map<string, number>()
  /** answers naming another call (also counted in the statuses where they end a unit) */
  crossings = 0
  /** questions a v1 client heard for a call it had given up on (its own, not another's) */
  late = 0

  constructor(readonly kind: string) {
    this.tracker = new Tracker(kind, UNIT_MS)
  }

  /** One unit of work, tried up to ATTEMPTS times; `attempt` returns its status or throws. */
  unit(label: string, attempt: (tag: string) => Promise<string>) {
    return this.tracker.track(label, async () => {
      for (let a = 1; ; a++)
        try {
          return { status: await attempt(`${label}#${a}`), callId: label } as never
        } catch (err) {
          if (a === ATTEMPTS) {
            this.tracker.problem(`${label} failed after ${ATTEMPTS} tries: ${why(err)}`)
            return { status: 'FAILED', callId: label } as never
          }
          this.retries++
          this.noteError(why(err))
          await backoff(a)
        }
    })
  }

  /** Counts a retried error, its ids and labels left out so alike errors count together. */
  noteError(message: string) {
    const key = message
      .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>')
      .replace(/\b[etal]\d+-\d+#\d+\b/g, '<label>')
      .slice(0, 150)
    this.errors.set(key, (this.errors.get(key) ?? 0) + 1)
  }

  crossed(label: string, what: string): string {
    this.crossings++
    this.tracker.problem(`${label}: answered with another call's: ${what.slice(0, 160)}`)
    return 'CROSSED'
  }
}

/** One 2026-07-28 request: its result or JSON-RPC error, and the replica that answered; throws on HTTP failures. */
export async function rpc(url: string, method: string, params: Record<string, unknown>) {
  const { id, res } = await modernPost(url, method, params, {
    token: TOKEN,
    client: 'soak-cluster',
    ms: 20_000,
  })
  const replica = res.headers.get('yoke-replica') ?? '?'
  if (!res.ok)
    throw new Error(`HTTP ${res.status} from ${replica}: ${(await res.text()).slice(0, 80)}`)
  const reply = (await messagesOf(res)).find((m) => m.id === id)
  if (!reply) throw new Error(`${method}: no answer in the response from ${replica}`)
  return { result: reply.result, error: reply.error as { message: string } | undefined, replica }
}

/** A 2026-07-28 SDK client through the balancer. */
export async function modernClient(url: string): Promise<Client> {
  const c = new Client(
    { name: 'soak-cluster', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  )
  await c.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    }),
  )
  return c
}

/** Runs `unit` with rising numbers until `end`. */
async function loop(end: number, unit: (i: number) => Promise<unknown>) {
  for (let i = 0; Date.now() < end; i++) await unit(i)
}

export async function echoWorker(w: Work, url: string, n: number, end: number) {
  const c = await modernClient(url)
  await loop(end, (i) =>
    w.unit(`e${n}-${i}`, async (tag) => {
      const text = textOf(
        await c.callTool({ name: 'echo', arguments: { text: tag, record: true } }),
      )
      return text === `echo: ${tag}` ? 'ok' : w.crossed(tag, text)
    }),
  )
  await c.close()
}

export async function taskWorker(w: Work, url: string, n: number, end: number, chaos: Chaos) {
  await loop(end, (i) =>
    w.unit(`t${n}-${i}`, async (tag) => {
      const startedAt = Date.now()
      const ms = 200 + ((n * 7 + i * 13) % 6) * 100
      const started = await rpc(url, 'tools/call', {
        name: 'long_job',
        arguments: { text: tag, ms },
      })
      if (started.error) throw new Error(`start: ${started.error.message}`)
      if (started.result?.resultType !== 'task')
        throw new Error(`start: not a task: ${JSON.stringify(started.result).slice(0, 120)}`)
      return pollTask(w, url, tag, started.result.taskId, started.replica, startedAt, chaos)
    }),
  )
}

/** Polls a task through the balancer until it ends; a poll that fails is tried again. */
async function pollTask(
  w: Work,
  url: string,
  tag: string,
  taskId: string,
  runner: string,
  startedAt: number,
  chaos: Chaos,
): Promise<string> {
  let last = 'no read yet'
  for (const giveUp = Date.now() + TASK_POLL_MS; Date.now() < giveUp; await sleep(250)) {
    let read: Awaited<ReturnType<typeof rpc>>
    try {
      read = await rpc(url, 'tasks/get', { taskId })
    } catch (err) {
      last = why(err)
      w.noteError(`poll: ${last}`)
      continue
    }
    if (read.error) {
      last = `${read.error.message} (from ${read.replica})`
      w.noteError(`poll: ${read.error.message}`)
      continue
    }
    const task = read.result
    last = `${task?.status} (from ${read.replica})`
    if (task?.status === 'completed') {
      const text = textOf(task.result)
      return text === `long job done on ${runner}: ${tag}` ? 'ok' : w.crossed(tag, text)
    }
    if (task?.status === 'failed' || task?.status === 'cancelled') {
      const message = String(task.error?.message ?? task.statusMessage ?? '')
      const named = /replica running this task \((\S+)\) stopped/.exec(message)?.[1]
      const killed = named && chaos.killed.get(named)?.some((at) => at >= startedAt)
      if (task.status === 'failed' && named === runner && killed) {
        w.expected.set(named, (w.expected.get(named) ?? 0) + 1)
        return 'failed: its replica was SIGKILLed'
      }
      w.tracker.problem(
        `${tag}: task ${taskId} on ${runner} ended ${task.status}: ${message} (drained: ${[...chaos.drained.keys()].join(',') || 'none'})`,
      )
      return `UNEXPECTED ${task.status}`
    }
  }
  w.tracker.problem(
    `${tag}: task ${taskId} started on ${runner} did not end in ${TASK_POLL_MS} ms; last read: ${last}`,
  )
  return 'UNENDED'
}

export async function approvalWorker(w: Work, url: string, n: number, end: number) {
  await loop(end, (i) => {
    const decision = i % 2 ? 'deny' : 'allow-once'
    return w.unit(`a${n}-${i}`, async (tag) => {
      const args = { name: 'guarded', arguments: { text: tag } }
      const asked = await rpc(url, 'tools/call', args)
      if (asked.error) throw new Error(`ask: ${asked.error.message}`)
      if (asked.result?.resultType !== 'input_required')
        throw new Error(`ask: not input_required: ${JSON.stringify(asked.result).slice(0, 120)}`)
      const question = JSON.stringify(asked.result.inputRequests)
      if (!question.includes(JSON.stringify(tag).slice(1, -1))) return w.crossed(tag, question)
      const [key] = Object.keys(asked.result.inputRequests)
      ;(decision === 'deny' ? w.denied : w.allowed).add(tag)
      const answered = await rpc(url, 'tools/call', {
        ...args,
        requestState: asked.result.requestState,
        inputResponses: { [key!]: { action: 'accept', content: { decision } } },
      })
      if (answered.error)
        throw new Error(`answer (${asked.replica} asked): ${answered.error.message}`)
      return matches(w, tag, decision, answered.result, asked.replica)
    })
  })
}

/** Whether an approved call's answer says what its decision asked for. */
function matches(w: Work, tag: string, decision: string, result: unknown, asker?: string) {
  const text = textOf(result)
  if (decision === 'deny')
    return /DENIED/.test(text) && !/guarded ran/.test(text) ? 'ok' : w.crossed(tag, text)
  const ran = /^guarded ran on (\S+): (.*)$/.exec(text)
  if (ran?.[2] !== tag) return w.crossed(tag, text)
  if (asker && ran[1] !== asker) w.tracker.problem(`${tag}: asked on ${asker}, ran on ${ran[1]}`)
  return 'ok'
}

export async function legacyWorker(w: Work, url: string, n: number, end: number) {
  const c = new V1Client(
    { name: `soak-legacy-${n}`, version: '1' },
    { capabilities: { elicitation: {} } },
  )
  let current = ''
  let decision = 'allow-once'
  const sent = new Set<string>()
  c.setRequestHandler(ElicitRequestSchema, async (request) => {
    const about = /"text":"([^"]+)"/.exec(request.params.message)?.[1] ?? '?'
    if (about === current) {
      ;(decision === 'deny' ? w.denied : w.allowed).add(current)
      return { action: 'accept', content: { decision } }
    }
    if (sent.has(about))
      w.late++ // a call of this client's it gave up on (timed out)
    else w.crossed(current, `a question for another call: ${request.params.message}`)
    return { action: 'decline' }
  })
  c.onerror = () => {} // the GET stream of a replica that died; its requests go on elsewhere
  await c.connect(
    new V1Transport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    }),
  )
  await loop(end, (i) =>
    w.unit(`l${n}-${i}`, async (tag) => {
      current = tag
      sent.add(tag)
      decision = i % 2 ? 'deny' : 'allow-once'
      const result = await c.callTool({ name: 'guarded', arguments: { text: tag } }, undefined, {
        timeout: LEGACY_CALL_MS,
      })
      return matches(w, tag, decision, result)
    }),
  )
  await c.close()
}
