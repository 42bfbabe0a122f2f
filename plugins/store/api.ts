/**
 * The public face of the store plugin: the `store` service, the state that replicas of a gateway
 * must share (issue 31). Two engines behind this one interface: `memory` (the default, everything
 * in this process, as before) and `redis` (shared by every replica with the same url and
 * `keyPrefix`). Nothing else knows which one runs (DESIGN §10).
 *
 * Every operation that needs the store is bounded (the redis engine's `commandTimeoutMs`, or
 * `connectTimeoutMs` while the first connection is made) and fails with `STORE_UNAVAILABLE` when
 * it cannot answer; the client reconnects by itself. Values are JSON: each engine stores a copy
 * (a later change to the object is not stored; each read is a new object).
 *
 * @example
 * const store = ctx.store
 * const made = await store.put(`task:${id}`, { state: 'working' }, { ifVersion: null, ttlMs: 3_600_000 })
 * const answer = await store.take<Answer>(`answer:${id}`)   // exactly one replica gets it
 */

export type StoreEngine = 'memory' | 'redis'

/** A keyed record and its version (an opaque token, new on every write). */
export interface StoreRecord<T = unknown> {
  value: T
  version: string
  /** how long until it expires, in ms; absent when it does not */
  ttlMs?: number
}

export interface PutOptions {
  /** expiry in ms; absent or 0: kept until deleted (a put without it removes an earlier expiry) */
  ttlMs?: number
  /**
   * compare-and-set: `null` writes only when the key holds no record (create once), a version
   * only when the record is at that version; absent writes whatever is there
   */
  ifVersion?: string | null
}

/** A put's outcome: written (the new version), or refused by `ifVersion` (what is there now). */
export type PutResult<T = unknown> =
  { ok: true; version: string } | { ok: false; current: StoreRecord<T> | undefined }

/** One entry of an append log: its id (ordered, `<ms>-<seq>` as Redis streams write) and value. */
export interface LogEntry<T = unknown> {
  id: string
  value: T
}

export interface RateLimit {
  /** hits allowed per window */
  max: number
  /** the window starts at its first hit and lasts this long */
  windowMs: number
  /** what this hit counts (default 1) */
  cost?: number
}

/** A rate-limit hit: allowed or not, and where the window stands after it. */
export interface RateDecision {
  allowed: boolean
  /** hits counted in the window (a refused hit is not counted) */
  count: number
  /** hits left in the window (0 when a lower `max` than before is already passed) */
  remaining: number
  /** ms until the window resets */
  resetMs: number
}

/** What the store says of itself (readiness, `yoke doctor`). */
export interface StoreHealth {
  engine: StoreEngine
  /** `memory`, or the Redis URL (its password left out) and key prefix */
  target: string
  /** ready: operations run; connecting: the first connection is being made; down: they fail */
  state: 'ready' | 'connecting' | 'down'
  /** when it entered this state (epoch ms) */
  since: number
  /** a PING's round trip, when `health()` measured one */
  latencyMs?: number
  /** why it is not ready (the last connection error) */
  error?: string
}

export type Unsubscribe = () => Promise<void>

export interface Store {
  readonly engine: StoreEngine

  /** The record under `key`, or undefined. */
  get<T = unknown>(key: string): Promise<StoreRecord<T> | undefined>
  /** Writes `value` (JSON) under `key`; with `ifVersion`, only if the record is as expected. */
  put<T = unknown>(key: string, value: T, options?: PutOptions): Promise<PutResult<T>>
  /** Removes the record (only at `ifVersion` when given); true when one was removed. */
  delete(key: string, options?: { ifVersion?: string }): Promise<boolean>
  /**
   * Claim-once: removes the record and hands it to this caller. Of any number of concurrent
   * takers, on any replica, exactly one gets it; the others get undefined.
   */
  take<T = unknown>(
    key: string,
    options?: { ifVersion?: string },
  ): Promise<StoreRecord<T> | undefined>

  /**
   * Sends `message` (JSON) to every subscriber of `channel` on every replica; resolves to how
   * many replicas' subscriptions received it. At most once: a replica that was disconnected
   * misses it, so a waiter re-reads the record it waits on when the store is ready again
   * (`onState`).
   */
  publish(channel: string, message: unknown): Promise<number>
  /** Calls `listener` with each message on `channel`; resolves once messages are being received. */
  subscribe(channel: string, listener: (message: unknown) => void): Promise<Unsubscribe>

  /**
   * Adds each delta to its field of the counters under `key`, atomically, so replicas' additions
   * merge (none is lost, none overwrites another); resolves to the fields' new values.
   */
  add(
    key: string,
    deltas: Record<string, number>,
    options?: { ttlMs?: number },
  ): Promise<Record<string, number>>
  /** Every field of the counters under `key` ({} when none). */
  counters(key: string): Promise<Record<string, number>>

  /** Appends `value` (JSON) to the log, keeping its last `maxLen` entries; resolves to its id. */
  append(log: string, value: unknown, options: { maxLen: number }): Promise<string>
  /** The log's entries in order, after the id `after` (exclusive), at most `limit` (default 100). */
  read<T = unknown>(
    log: string,
    options?: { after?: string; limit?: number },
  ): Promise<Array<LogEntry<T>>>

  /** Counts a hit against `key`'s fixed window, atomically across replicas. */
  hit(key: string, limit: RateLimit): Promise<RateDecision>

  /** The store's state now; for Redis, a PING (bounded) measures it. */
  health(): Promise<StoreHealth>
  /** Follows the store's state changes (a lost connection, a reconnect); returns the removal. */
  onState(listener: (health: StoreHealth) => void): () => void
}

/**
 * The deltas that record one observation of a histogram with these bucket upper bounds (sorted,
 * ascending): `count`, `sum` and the one bucket it falls in (`le:<bound>`, or `le:+Inf`).
 * Counters made of them merge across replicas; `histogramOf` reads them back.
 *
 * @example await store.add('metrics:tool:alpha', histogramDeltas(12.5, [5, 10, 50]))
 */
export function histogramDeltas(value: number, bounds: readonly number[]): Record<string, number> {
  const bound = bounds.find((b) => value <= b)
  return { count: 1, sum: value, [`le:${bound ?? '+Inf'}`]: 1 }
}

/** A histogram read back from its counters: count, sum and the cumulative count at each bound. */
export function histogramOf(counters: Record<string, number>, bounds: readonly number[]) {
  let running = 0
  const cumulative = bounds.map((b) => (running += counters[`le:${b}`] ?? 0))
  return { count: counters.count ?? 0, sum: counters.sum ?? 0, bounds: [...bounds], cumulative }
}

declare module 'yoke' {
  interface Services {
    store: Store
  }
}
