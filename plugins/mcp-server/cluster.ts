/**
 * The replicas of one gateway, as each sees the others through the shared store (issue 31). Each
 * replica listens on a channel of its own (`mcp:to:<replica>`) and keeps a heartbeat record
 * (`mcp:alive:<replica>`, refreshed every HEARTBEAT_MS, gone ALIVE_MS after its last refresh).
 *
 * What lives in one process stays there (a pipeline call waiting for an answer, a task running),
 * so a request for it that reaches another replica is relayed: `request` sends it to the replica
 * that holds the state and waits for the answer, a bounded wait that ends as soon as that replica
 * is gone (no subscriber took the message, or its heartbeat lapsed) or the asker gives up. What
 * every replica must hear (a list changed) is shouted on `mcp:all:<topic>`, and a replica's own
 * shouts are not news to itself.
 *
 * The store is at most once and may be down: a relay that cannot be sent fails at once, saying
 * so (STORE_UNAVAILABLE), and nothing else waits on it.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { messageOf } from 'yoke'
import type { Store, Unsubscribe } from '../store/api.ts'

/** how often a replica says it is alive, and how long after its last word it counts as gone */
export const HEARTBEAT_MS = 2_000
export const ALIVE_MS = 6_000
/**
 * how long a relayed answer is sent again while no replica hears it (the store is down, or the
 * asker's subscription is reconnecting): messages are at most once, so a lost answer would leave
 * its asker waiting while this replica lives
 */
export const ANSWER_RESEND_MS = 30_000
/** how many handled request ids a replica remembers, to run a request sent twice once */
const HANDLED_KEPT = 4096
/** the pause between two attempts to deliver a message no one heard */
const RESEND_EVERY_MS = 250

/** A request one replica sends another; `op` names the handler (see `Cluster.handle`). */
export interface Relay {
  op: string
  [field: string]: unknown
}

/** What travels on a replica's channel: a request, its cancellation, or an answer. */
type Message =
  | { t: 'ping' }
  | { t: 'req'; rid: string; from: string; body: Relay }
  | { t: 'cancel'; rid: string }
  | { t: 'res'; rid: string; ok: true; value: unknown }
  | { t: 'res'; rid: string; ok: false; message: string; code?: number }

/** A relayed request's failure as the replica that handled it said it (a protocol code, if any). */
export class RelayError extends Error {
  constructor(
    message: string,
    readonly code?: number,
  ) {
    super(message)
  }
}

/** What one replica shouts to all the others, under a topic. */
interface Shout {
  from: string
  payload: unknown
}

type Handler = (body: Relay, signal: AbortSignal) => Promise<unknown>

interface Waiting {
  owner: string
  settle(outcome: { ok: true; value: unknown } | { ok: false; error: Error }): void
}

export class Cluster {
  /** this process, among those that bear its replica id over time (a replica restarted keeps it) */
  readonly incarnation = randomUUID().slice(0, 12)
  readonly #pending = new Map<string, Waiting>()
  /** requests of other replicas being handled here, by id: a cancellation aborts one */
  readonly #handling = new Map<string, AbortController>()
  readonly #handlers = new Map<string, Handler>()
  readonly #topics = new Map<string, (payload: unknown) => void>()
  #unsubscribe: Unsubscribe[] = []
  #heartbeat?: NodeJS.Timeout
  #watch?: NodeJS.Timeout
  #closed = false
  /** set when a heartbeat failed, so the outage is said once, and its end too */
  #down?: string
  /** the heartbeat record's version: when it is not there any more, the store lost its records */
  #beatVersion?: string
  /**
   * called when the store may have lost what this replica wrote (it was down, or its heartbeat
   * record went: a store restarted empty), so its records are written again
   */
  onLost?: () => void
  /** when this replica last saw the store lose its records (or come back from an outage) */
  #lostAt?: number
  /** the ids of the requests handled lately: one sent again (a publish that ran late) runs once */
  readonly #handled = new Set<string>()

  constructor(
    readonly store: Store,
    readonly replica: string,
    private readonly warn: (message: string) => void,
    private readonly info: (message: string) => void = () => {},
  ) {}

  /** Handles the relayed requests named `op` with `handler` (its value or its error goes back). */
  handle(op: string, handler: Handler): void {
    this.#handlers.set(op, handler)
  }

  /** Hears what the other replicas shout under `topic` (call before `start`). */
  hear(topic: string, listener: (payload: unknown) => void): void {
    this.#topics.set(topic, listener)
  }

  /** Listens on this replica's channel and on the topics it hears; starts the heartbeat. */
  async start(): Promise<void> {
    this.#unsubscribe.push(
      await this.store.subscribe(`mcp:to:${this.replica}`, (m) => this.#received(m as Message)),
    )
    for (const [topic, listener] of this.#topics)
      this.#unsubscribe.push(
        await this.store.subscribe(`mcp:all:${topic}`, (m) => {
          const shout = m as Shout | undefined
          if (shout && shout.from !== this.replica) listener(shout.payload)
        }),
      )
    await this.#beat()
    this.#heartbeat = setInterval(() => void this.#beat(), HEARTBEAT_MS)
    this.#heartbeat.unref()
    // a request waiting on a replica that died answers no sooner than its heartbeat lapses
    this.#watch = setInterval(() => void this.#checkOwners(), HEARTBEAT_MS)
    this.#watch.unref()
  }

  /**
   * Whether `replica` runs (the process `incarnation` of it, when given): its heartbeat is
   * current; or the record is missing because the store lately lost every record (it restarted
   * empty), and then it counts as running until its next beat can have come (a death is told by
   * the heartbeat lapsing after that, not by the loss).
   */
  async alive(replica: string, incarnation?: string): Promise<boolean> {
    if (replica === this.replica)
      return !this.#closed && (!incarnation || incarnation === this.incarnation)
    const beat = await this.store.get<{ incarnation?: string }>(`mcp:alive:${replica}`)
    // the replica restarted since (the same id, another process): the one asked about is gone
    if (beat) return !incarnation || beat.value.incarnation === incarnation
    // a lapsed heartbeat is a death (a frozen replica keeps its subscription, so a listener alone
    // proves nothing), unless the store lately lost every record: this replica saw its own go, or
    // has not written its own since
    const lately = this.#lostAt !== undefined && Date.now() - this.#lostAt <= 2 * ALIVE_MS
    if (!lately && (await this.store.get(`mcp:alive:${this.replica}`)) !== undefined) return false
    // not a death yet: its next beat is due, and a ping proves nothing while every replica's
    // subscription reconnects too (a task read in that moment was said "failed"); once this
    // replica has beaten again and 2 × ALIVE_MS have passed, a record still missing is a death
    return true
  }

  /**
   * Sends `body` to `owner` and resolves to what its handler returned; rejects with a RelayError
   * when the handler failed, and with an Error saying why when `owner` is gone, the store cannot
   * carry it, or `signal` ends the wait (the owner is told to stop).
   */
  async request<T>(owner: string, body: Relay, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw signal.reason
    const rid = randomUUID()
    const answered = new Promise<unknown>((resolve, reject) => {
      const onAbort = () => {
        this.#pending.get(rid)?.settle({ ok: false, error: signal!.reason as Error })
        void this.store.publish(`mcp:to:${owner}`, { t: 'cancel', rid }).catch(() => {})
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#pending.set(rid, {
        owner,
        settle: (outcome) => {
          this.#pending.delete(rid)
          signal?.removeEventListener('abort', onAbort)
          if (outcome.ok) resolve(outcome.value)
          else reject(outcome.error)
        },
      })
    })
    // it may fail while the request is still being sent (the asker gave up): handled below
    answered.catch(() => {})
    const sent = await this.#deliver(
      `mcp:to:${owner}`,
      { t: 'req', rid, from: this.replica, body } satisfies Message,
      ALIVE_MS,
      () => !this.#pending.has(rid),
    )
    if (sent !== true) this.#pending.get(rid)?.settle({ ok: false, error: sent ?? gone(owner) })
    return (await answered) as T
  }

  /** Tells every other replica `payload` under `topic` (at most once, to those listening now). */
  async shout(topic: string, payload: unknown): Promise<void> {
    await this.store.publish(`mcp:all:${topic}`, { from: this.replica, payload } satisfies Shout)
  }

  /**
   * A secret every replica shares, made once by whichever replica comes first (for what must be
   * sealed the same way on all of them when no secret was configured).
   */
  async sharedSecret(name: string): Promise<string> {
    const key = `mcp:secret:${name}`
    await this.store.put(key, randomBytes(32).toString('base64url'), { ifVersion: null })
    const record = await this.store.get<string>(key)
    if (typeof record?.value !== 'string') throw new Error(`the shared secret ${key} is missing`)
    return record.value
  }

  /** Writes `value` back as the secret `name` where the store has none (it restarted empty). */
  async keepSecret(name: string, value: string): Promise<void> {
    await this.store.put(`mcp:secret:${name}`, value, { ifVersion: null }).catch((err: unknown) => {
      this.warn(`the shared secret ${name} was not written back: ${messageOf(err)}`)
    })
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    clearInterval(this.#heartbeat)
    clearInterval(this.#watch)
    for (const controller of this.#handling.values())
      controller.abort(new Error('the replica stopped'))
    for (const waiting of this.#pending.values())
      waiting.settle({ ok: false, error: new Error('the replica stopped') })
    const unsubscribe = this.#unsubscribe
    this.#unsubscribe = []
    await Promise.allSettled([
      ...unsubscribe.map((off) => off()),
      this.store.delete(`mcp:alive:${this.replica}`),
    ])
  }

  async #beat() {
    const key = `mcp:alive:${this.replica}`
    try {
      const value = { at: Date.now(), incarnation: this.incarnation }
      let beat = await this.store.put(key, value, { ttlMs: ALIVE_MS, ifVersion: this.#beatVersion })
      const lost = !beat.ok || this.#down !== undefined
      if (!beat.ok) beat = await this.store.put(key, value, { ttlMs: ALIVE_MS })
      if (beat.ok) this.#beatVersion = beat.version
      if (this.#down) this.info(`the shared store answers again (it did not: ${this.#down})`)
      this.#down = undefined
      if (lost) {
        this.#lostAt = Date.now()
        this.onLost?.()
      }
    } catch (err) {
      if (!this.#down)
        this.warn(
          `the shared store does not answer (${messageOf(err)}): calls and tasks that another replica holds cannot be reached until it does; this replica goes on serving its own`,
        )
      this.#down = messageOf(err)
    }
  }

  /** Ends the waits on replicas whose heartbeat lapsed. */
  async #checkOwners() {
    const owners = new Set([...this.#pending.values()].map((w) => w.owner))
    for (const owner of owners) {
      const alive = await this.alive(owner).catch(() => true) // an outage is not a death
      if (alive) continue
      for (const waiting of this.#pending.values())
        if (waiting.owner === owner) waiting.settle({ ok: false, error: gone(owner) })
    }
  }

  #received(message: Message) {
    if (!message || typeof message !== 'object') return
    if (message.t === 'res') {
      const waiting = this.#pending.get(message.rid)
      if (!waiting) return // it gave up already
      waiting.settle(
        message.ok
          ? { ok: true, value: message.value }
          : { ok: false, error: new RelayError(message.message, message.code) },
      )
    } else if (message.t === 'cancel') {
      this.#handling.get(message.rid)?.abort(new Error('the replica that relayed it gave up'))
    } else if (message.t === 'req') void this.#serve(message)
  }

  async #serve({ rid, from, body }: Extract<Message, { t: 'req' }>) {
    if (this.#handled.has(rid)) return
    this.#handled.add(rid)
    if (this.#handled.size > HANDLED_KEPT)
      this.#handled.delete(this.#handled.values().next().value!)
    const handler = this.#handlers.get(body?.op)
    const controller = new AbortController()
    this.#handling.set(rid, controller)
    let answer: Message
    try {
      if (!handler) throw new Error(`replica ${this.replica} cannot handle "${body?.op}"`)
      answer = { t: 'res', rid, ok: true, value: await handler(body, controller.signal) }
    } catch (err) {
      const code = (err as { code?: unknown }).code
      answer = {
        t: 'res',
        rid,
        ok: false,
        message: messageOf(err),
        ...(typeof code === 'number' && { code }),
      }
    } finally {
      this.#handling.delete(rid)
    }
    const sent = await this.#deliver(`mcp:to:${from}`, answer, ANSWER_RESEND_MS, () => this.#closed)
    if (sent !== true)
      this.warn(
        `could not answer replica ${from}'s ${body?.op} within ${ANSWER_RESEND_MS / 1000} s (${sent ? messageOf(sent) : 'no replica heard it'}): its client's request fails there`,
      )
  }

  /**
   * Publishes `message` on `channel` until a subscriber hears it, the store failing or no one
   * listening meanwhile, for `ms` at most or until `stop()`: true once heard, else the last error
   * (undefined: the store answered, but no one listened).
   */
  async #deliver(
    channel: string,
    message: Message,
    ms: number,
    stop: () => boolean,
  ): Promise<true | Error | undefined> {
    const deadline = Date.now() + ms
    let last: Error | undefined
    for (;;) {
      try {
        if ((await this.store.publish(channel, message)) > 0) return true
        last = undefined
      } catch (err) {
        last = err as Error
      }
      if (stop() || Date.now() >= deadline) return last
      await new Promise((resolve) => setTimeout(resolve, RESEND_EVERY_MS))
    }
  }
}

const gone = (owner: string) =>
  new Error(`the replica that holds it (${owner}) is gone, so what it held went with it`)
