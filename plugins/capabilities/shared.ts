/**
 * The metrics and the audit log shared through a `store` (issue 31): each replica adds what it
 * counted to the store's merged counters (never a last-writer-wins copy), batched — the rows
 * changed since the last flush, every `FLUSH_MS` and on stop, never a round trip per call — and
 * appends each audit entry to one bounded store log, so the replicas' changes have one order.
 *
 * A store outage keeps the deltas and entries pending (bounded: past `MAX_PENDING` the oldest go,
 * counted, warned and said by `yoke doctor`), never fails nor blocks a call, and they land when
 * the store answers again. `SharedState` is what a capabilities instance keeps across versions
 * (kept.ts); a `Sharer` is one version's work with the store it was given.
 */
import { hostname } from 'node:os'
import { messageOf } from 'yoke'
import type { LogEntry, Store, StoreRecord } from '../store/api.ts'
import type { AuditEntry, MetricsRow } from './api.ts'
import { keyOf, type MetricsStore } from './metrics.ts'
import { combine, fieldsOf, isZero, tallyFrom, tallyOf, zeroTally, type Tally } from './tally.ts'

/** how often the changed rows are added to the store (and a wanted merged view read back) */
export const FLUSH_MS = 1_000
/** the most rows of deltas, and audit entries, that wait for the store; past it the oldest go */
export const MAX_PENDING = 10_000
/** the store log's bound */
export const AUDIT_MAX_LEN = 100_000
/** how long after a reader asked the merged view is read back at each flush */
const WANTED_MS = 30_000

/** what a row is, as the store's index of rows names it */
export type Meta = Pick<MetricsRow, 'id' | 'version' | 'hash' | 'source'>
/** the first and last use of a row across replicas (a record, merged by compare-and-set) */
export interface Times {
  firstAt: string
  lastAt: string
}
interface Pending {
  meta: Meta
  delta: Tally
  times?: Times
}

/** a row as the store holds it when last read */
export interface Merged {
  meta: Meta
  tally: Tally
  times?: Times
  /** p50 / p95 over this process's recent calls, when every call of the row was counted here */
  exact?: { p50: number; p95: number }
}

/** An audit entry as the store's log holds it: which replica wrote it. */
export type SharedAuditEntry = AuditEntry & { replica: string }

/** The replica's name in what it shares: YOKE_REPLICA_ID, else host-pid (as `yoke serve` says). */
export const replicaId = () => process.env.YOKE_REPLICA_ID || `${hostname()}-${process.pid}`

/** What an instance shares and owes the store, kept across its versions (and reloads of the store). */
export class SharedState {
  /** per row: the counts handed to `pending` so far (a seeded row's: its seed, history not ours) */
  readonly handed = new Map<string, Tally>()
  /** per row: the counts the store has taken */
  readonly confirmed = new Map<string, Tally>()
  /** deltas the store has not taken yet, oldest first */
  readonly pending = new Map<string, Pending>()
  /** per row: the times record as last read or written (its version for the next compare-and-set) */
  readonly times = new Map<string, StoreRecord<Times>>()
  /** audit entries the store's log has not taken yet, in order */
  readonly audit: SharedAuditEntry[] = []
  /** what outages cost: rows of deltas (and the calls in them) and audit entries dropped */
  readonly dropped = { rows: 0, calls: 0, audit: 0 }
  /** the merged rows as last read, and what this process had confirmed when they were read */
  snapshot: { rows: Map<string, Merged>; base: Map<string, Tally> } | undefined
  /** the store failing now: since when, and why */
  down: { since: number; error: string } | undefined
  /** when a reader last asked for the merged view */
  wanted = 0
  /** one flush, read or append at a time, across versions (a reload's two overlap) */
  busy: Promise<unknown> = Promise.resolve()
  /** the version sharing now (undefined: no store) */
  active: Sharer | undefined
  /** the drops warned in this outage */
  readonly #said = new Set<string>()

  /**
   * A row seeded from a file (metrics-jsonl: this process's history). A store that outlives the
   * process (Redis) has it already from the run that counted it: it is not added again, and
   * readers show the store's figures. The memory engine starts empty with the process: there the
   * history is added, so the figures are what they were with no store.
   */
  seeded(key: string, row: Parameters<typeof tallyOf>[0]): void {
    this.handed.set(key, tallyOf(row))
    this.confirmed.set(key, tallyOf(row))
    if (this.#seedsGo === undefined) this.#seeds.add(key)
    else if (this.#seedsGo) this.#unseed(key)
  }

  /** Decides for the rows seeded so far and from now on (a sharer's start, by its engine). */
  seedsGo(go: boolean): void {
    this.#seedsGo = go
    if (go) for (const key of this.#seeds) this.#unseed(key)
    this.#seeds.clear()
  }

  /** a seeded row to be added: nothing of it handed or confirmed yet, and marked changed */
  #unseed(key: string): void {
    this.handed.delete(key)
    this.confirmed.delete(key)
    this.mark?.(key)
  }

  /** marks a row changed for the next flush (the kept MetricsStore's `mark`, kept.ts) */
  mark: ((key: string) => void) | undefined
  /** rows seeded before a sharer decided; whether seeded rows are added (undefined: not decided) */
  readonly #seeds = new Set<string>()
  #seedsGo: boolean | undefined

  /** Audit entries for the store's log, kept until a sharer appends them (bounded). */
  queueAudit(entries: AuditEntry[], replica: string, warn: (message: string) => void): void {
    const { audit, dropped } = this
    for (const e of entries) audit.push({ ...e, replica })
    if (audit.length <= MAX_PENDING) return
    dropped.audit += audit.splice(0, audit.length - MAX_PENDING).length
    this.sayOnce(
      'audit',
      warn,
      () =>
        `the store's audit log misses ${dropped.audit} entries (more than ${MAX_PENDING} waited for the store); the local file has them`,
    )
  }

  /** A drop is warned once per outage (yoke doctor keeps the running count). */
  sayOnce(what: string, warn: (message: string) => void, message: () => string): void {
    if (this.#said.has(what)) return
    this.#said.add(what)
    warn(message())
  }

  /** The store answers again: the next outage's drops are warned anew. */
  answering(): void {
    this.down = undefined
    this.#said.clear()
  }

  /** Runs `work` after what runs now (a failure does not stop the next). */
  serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.busy.then(work, work)
    this.busy = run.catch(() => {})
    return run
  }
}

export interface SharerOptions {
  /** before every key: the instance's key, so two capabilities instances stay apart */
  prefix: string
  /** a warning, said once per outage or drop */
  warn(message: string): void
  info(message: string): void
}

/** One version's sharing with its store: flushes, reads back, appends the audit log. */
export class Sharer {
  readonly replica = replicaId()

  constructor(
    readonly state: SharedState,
    private readonly metrics: MetricsStore,
    readonly store: Store,
    private readonly options: SharerOptions,
  ) {}

  get #index() {
    return `${this.options.prefix}metrics`
  }
  #rowKey = (k: string) => `${this.options.prefix}metrics:${k}`
  #timesKey = (k: string) => `${this.options.prefix}metrics-at:${k}`
  get auditLog() {
    return `${this.options.prefix}audit`
  }

  /** Starts counting for the store and becomes the instance's sharer. */
  start(): void {
    this.metrics.share()
    this.state.seedsGo(this.store.engine === 'memory')
    this.state.active = this
    // what was recorded while the store was coming up
    if (this.state.audit.length) void this.state.serial(() => this.#appendAudit())
  }

  /** The last flush (awaited by the version's stop); the next version takes over from the state. */
  async stop(): Promise<void> {
    await this.tick(false)
    if (this.state.active === this) this.state.active = undefined
  }

  /** A flush, then the merged view read back when a reader asked lately (or `read`). */
  tick(read = Date.now() - this.state.wanted < WANTED_MS): Promise<void> {
    return this.state.serial(async () => {
      const appended = await this.#appendAudit()
      const flushed = await this.#flush()
      // what waited is in: said once the log and the counters both took it
      if (appended && flushed && this.state.down) this.#recovered()
      if (read && flushed) await this.#read().catch((err) => this.#failed(err))
    })
  }

  /** What a reader that can wait sees: this replica's counts flushed and the store's read back. */
  async fresh(): Promise<void> {
    this.state.wanted = Date.now()
    await this.tick(true)
  }

  /** Queues audit entries for the store's log and appends them now (in order, after earlier ones). */
  record(entries: AuditEntry[]): void {
    this.state.queueAudit(entries, this.replica, this.options.warn)
    void this.state.serial(() => this.#appendAudit())
  }

  /** The store's audit log, oldest first (its last `AUDIT_MAX_LEN` entries). */
  async readAudit(): Promise<SharedAuditEntry[]> {
    const out: SharedAuditEntry[] = []
    for (let after: string | undefined; ;) {
      const page: Array<LogEntry<SharedAuditEntry>> = await this.store.read(this.auditLog, {
        ...(after && { after }),
        limit: 1_000,
      })
      out.push(...page.map((e) => e.value))
      if (page.length < 1_000) return out
      after = page.at(-1)!.id
    }
  }

  /** Appends the waiting audit entries in order; false when the store did not take them all. */
  async #appendAudit(): Promise<boolean> {
    const { audit } = this.state
    try {
      while (audit.length) {
        await this.store.append(this.auditLog, audit[0], { maxLen: AUDIT_MAX_LEN })
        audit.shift()
      }
      return true
    } catch (err) {
      this.#failed(err)
      return false
    }
  }

  /** Moves what changed into `pending` and adds it; true when the store took all of it. */
  async #flush(): Promise<boolean> {
    const { state } = this
    for (const [k, row] of this.metrics.takeUnshared()) {
      const now = tallyOf(row)
      const delta = combine(now, state.handed.get(k) ?? zeroTally(), -1)
      state.handed.set(k, now)
      const meta: Meta = {
        id: row.id,
        ...(row.version !== undefined && { version: row.version }),
        hash: row.hash,
        source: row.source,
      }
      const held = state.pending.get(k)
      const times = { firstAt: row.firstAt, lastAt: new Date(row.lastMs).toISOString() }
      state.pending.set(k, { meta, delta: held ? combine(held.delta, delta) : delta, times })
    }
    this.#cap()
    let failed = false
    const keys = [...state.pending.keys()]
    for (let i = 0; i < keys.length && !failed; i += 100)
      await Promise.all(
        keys.slice(i, i + 100).map((k) =>
          this.#send(k).catch((err) => {
            failed = true
            this.#failed(err)
          }),
        ),
      )
    return !failed
  }

  /** Past the cap the oldest rows' deltas go, counted and said. */
  #cap(): void {
    const { pending, dropped } = this.state
    if (pending.size <= MAX_PENDING) return
    for (const [k, p] of pending) {
      if (pending.size <= MAX_PENDING) break
      pending.delete(k)
      dropped.rows++
      dropped.calls += p.delta.called
    }
    this.state.sayOnce(
      'rows',
      this.options.warn,
      () =>
        `metrics lost while the store is down: ${dropped.rows} rows' counts (${dropped.calls} calls) dropped, more than ${MAX_PENDING} rows waited (yoke doctor counts them)`,
    )
  }

  /**
   * One row's pending delta and times into the store, and its name into the index (every time:
   * a Redis restarted empty forgets it); the delta is taken once, kept when it was not.
   */
  async #send(k: string): Promise<void> {
    const { state, store } = this
    const p = state.pending.get(k)!
    const delta = p.delta
    p.delta = zeroTally()
    const [named, added] = await Promise.allSettled([
      store.add(this.#index, { [JSON.stringify(metaList(p.meta))]: 1 }),
      isZero(delta) ? undefined : store.add(this.#rowKey(k), fieldsOf(delta)),
    ])
    // not taken (a timeout may have been, and is added again: counted twice rather than lost)
    if (added.status === 'rejected') p.delta = combine(delta, p.delta)
    else state.confirmed.set(k, combine(state.confirmed.get(k) ?? zeroTally(), delta))
    for (const r of [added, named]) if (r.status === 'rejected') throw r.reason
    if (p.times) {
      await this.#mergeTimes(k, p.times)
      delete p.times
    }
    if (isZero(p.delta) && !p.times) state.pending.delete(k)
  }

  /** The row's first and last use across replicas: the earliest and latest, by compare-and-set. */
  async #mergeTimes(k: string, mine: Times): Promise<void> {
    const { times } = this.state
    let current = times.get(k) ?? (await this.store.get<Times>(this.#timesKey(k)))
    for (let attempt = 0; attempt < 8; attempt++) {
      const value = current ? widest(current.value, mine) : mine
      if (
        current &&
        value.firstAt === current.value.firstAt &&
        value.lastAt === current.value.lastAt
      )
        return void times.set(k, current)
      const put = await this.store.put(this.#timesKey(k), value, {
        ifVersion: current?.version ?? null,
      })
      if (put.ok) return void times.set(k, { value, version: put.version })
      current = put.current
    }
  }

  /** The store's merged rows, with what this process had confirmed when they were read. */
  async #read(): Promise<void> {
    const { state, store } = this
    const base = new Map([...state.confirmed].map(([k, t]) => [k, t]))
    const index = await store.counters(this.#index)
    const rows = new Map<string, Merged>()
    await Promise.all(
      Object.keys(index).map(async (field) => {
        const meta = metaOf(field)
        if (!meta) return
        const k = keyOf(meta)
        const [counters, times] = await Promise.all([
          store.counters(this.#rowKey(k)),
          store.get<Times>(this.#timesKey(k)),
        ])
        if (times) state.times.set(k, times)
        rows.set(k, { meta, tally: tallyFrom(counters), ...(times && { times: times.value }) })
      }),
    )
    state.snapshot = { rows, base }
  }

  #failed(err: unknown): void {
    const { state } = this
    if (state.down) return
    state.down = { since: Date.now(), error: messageOf(err) }
    this.options.warn(
      `metrics and audit entries wait for the store (${state.down.error}); calls go on, and they are added when it answers`,
    )
  }

  #recovered(): void {
    const since = this.state.down!.since
    this.state.answering()
    this.options.info(
      `the store answers again after ${((Date.now() - since) / 1000).toFixed(1)} s: the pending metrics and audit entries were added`,
    )
  }
}

const metaList = (m: Meta) => [m.id, m.version ?? null, m.hash, m.source]

/** A row's meta from its index field (undefined: not one of ours). */
export function metaOf(field: string): Meta | undefined {
  try {
    const [id, version, hash, source] = JSON.parse(field) as unknown[]
    if (typeof id !== 'string' || typeof hash !== 'string') return undefined
    return {
      id,
      ...(typeof version === 'string' && { version }),
      hash,
      source: typeof source === 'string' ? source : '',
    }
  } catch {
    return undefined
  }
}

export const widest = (a: Times, b: Times): Times => ({
  firstAt: a.firstAt < b.firstAt ? a.firstAt : b.firstAt,
  lastAt: a.lastAt > b.lastAt ? a.lastAt : b.lastAt,
})
