/**
 * The memory engine: the store in this process (the embedded default: replicas share nothing).
 * A `MemoryBackend` holds the state, and each `MemoryStore` is a view of it, as each replica's
 * connection is a view of one Redis: the plugin keeps one backend across reloads (`ctx.keep`), and
 * the shared suite opens two views to play two replicas. Its semantics are the Redis engine's,
 * down to the log ids and the at-least-as-late delivery of a publish (after the publisher returns).
 */
import type {
  LogEntry,
  PutOptions,
  PutResult,
  RateDecision,
  RateLimit,
  Store,
  StoreHealth,
  StoreRecord,
  Unsubscribe,
} from './api.ts'
import {
  checkCount,
  checkDeltas,
  checkKey,
  checkTtl,
  DEFAULT_READ,
  logId,
  newVersion,
  recordOf,
  toText,
} from './values.ts'

interface Expiring {
  expiresAt?: number
}
interface Held extends Expiring {
  version: string
  text: string
}
interface Counters extends Expiring {
  fields: Map<string, number>
}
interface Log {
  /** oldest first; up to a quarter more than `maxLen` (trimmed in batches, not per append) */
  entries: Array<{ id: string; text: string; at: [number, number] }>
  last: [number, number]
  /** the bound of the last append: what a read sees */
  maxLen: number
}
interface Window {
  count: number
  expiresAt: number
}

/** The in-process state every view shares. */
export class MemoryBackend {
  readonly records = new Map<string, Held>()
  readonly counters = new Map<string, Counters>()
  readonly logs = new Map<string, Log>()
  readonly windows = new Map<string, Window>()
  /** channel → one delivery per subscribed view (as Redis has one per subscribed connection) */
  readonly channels = new Map<string, Set<(text: string) => void>>()

  /** The live entry under `key` (an expired one is dropped). */
  live<V extends Expiring>(map: Map<string, V>, key: string, now = Date.now()): V | undefined {
    const entry = map.get(key)
    if (entry?.expiresAt !== undefined && entry.expiresAt <= now) {
      map.delete(key)
      return undefined
    }
    return entry
  }

  /** Drops every expired entry (the plugin runs it now and then, so memory does not grow). */
  sweep(now = Date.now()) {
    for (const map of [this.records, this.counters, this.windows] as Array<Map<string, Expiring>>)
      for (const [key, entry] of map)
        if (entry.expiresAt !== undefined && entry.expiresAt <= now) map.delete(key)
  }
}

const after = (a: [number, number], b: [number, number]) =>
  a[0] > b[0] || (a[0] === b[0] && a[1] > b[1])

/** One view of a MemoryBackend: the `Store` of the memory engine. */
export class MemoryStore implements Store {
  readonly engine = 'memory' as const
  readonly #since = Date.now()
  /** channel → this view's listeners, and its one delivery registered in the backend */
  readonly #subscribed = new Map<
    string,
    { listeners: Set<(m: unknown) => void>; deliver: (t: string) => void }
  >()

  constructor(readonly backend = new MemoryBackend()) {}

  async get<T>(key: string): Promise<StoreRecord<T> | undefined> {
    return this.#record<T>(checkKey(key))
  }

  async put<T>(key: string, value: T, options: PutOptions = {}): Promise<PutResult<T>> {
    const text = toText(value, 'a record')
    const ttl = checkTtl(options.ttlMs)
    const held = this.backend.live(this.backend.records, checkKey(key))
    const expected = options.ifVersion
    if (expected !== undefined && (expected === null ? held : held?.version !== expected))
      return { ok: false, current: this.#record<T>(key) }
    const version = newVersion()
    this.backend.records.set(key, {
      version,
      text,
      ...(ttl ? { expiresAt: Date.now() + ttl } : {}),
    })
    return { ok: true, version }
  }

  async delete(key: string, options: { ifVersion?: string } = {}): Promise<boolean> {
    return this.#remove(checkKey(key), options.ifVersion) !== undefined
  }

  async take<T>(key: string, options: { ifVersion?: string } = {}) {
    const held = this.#remove(checkKey(key), options.ifVersion)
    return held && recordOf<T>(held.version, held.text)
  }

  async publish(channel: string, message: unknown): Promise<number> {
    const text = toText(message, 'a message')
    const deliveries = [...(this.backend.channels.get(checkKey(channel)) ?? [])]
    // delivered after the publisher goes on, in order, as a Redis subscriber gets it
    if (deliveries.length) setImmediate(() => deliveries.forEach((deliver) => deliver(text)))
    return deliveries.length
  }

  async subscribe(channel: string, listener: (message: unknown) => void): Promise<Unsubscribe> {
    let sub = this.#subscribed.get(checkKey(channel))
    if (!sub) {
      const listeners = new Set<(m: unknown) => void>()
      const deliver = (text: string) => {
        const message: unknown = JSON.parse(text)
        for (const l of listeners) l(message)
      }
      sub = { listeners, deliver }
      this.#subscribed.set(channel, sub)
      const all = this.backend.channels.get(channel) ?? new Set()
      this.backend.channels.set(channel, all.add(deliver))
    }
    const mine = sub
    const wrapped = (m: unknown) => listener(m)
    mine.listeners.add(wrapped)
    return async () => {
      mine.listeners.delete(wrapped)
      if (mine.listeners.size || this.#subscribed.get(channel) !== mine) return
      this.#subscribed.delete(channel)
      this.#unregister(channel, mine.deliver)
    }
  }

  async add(key: string, deltas: Record<string, number>, options: { ttlMs?: number } = {}) {
    const entries = checkDeltas(deltas)
    const ttl = checkTtl(options.ttlMs)
    const map = this.backend.counters
    const held = this.backend.live(map, checkKey(key)) ?? { fields: new Map<string, number>() }
    const out: Record<string, number> = {}
    for (const [field, n] of entries) {
      const sum = (held.fields.get(field) ?? 0) + n
      held.fields.set(field, sum)
      out[field] = sum
    }
    if (ttl) held.expiresAt = Date.now() + ttl
    if (entries.length) map.set(key, held)
    return out
  }

  async counters(key: string): Promise<Record<string, number>> {
    const held = this.backend.live(this.backend.counters, checkKey(key))
    return Object.fromEntries(held?.fields ?? [])
  }

  async append(log: string, value: unknown, options: { maxLen: number }): Promise<string> {
    const text = toText(value, 'a log entry')
    const maxLen = checkCount('maxLen', options.maxLen, 1)
    const held = this.backend.logs.get(checkKey(log)) ?? { entries: [], last: [0, 0], maxLen }
    const now = Date.now()
    const at: [number, number] = now > held.last[0] ? [now, 0] : [held.last[0], held.last[1] + 1]
    const id = `${at[0]}-${at[1]}`
    held.entries.push({ id, text, at })
    held.last = at
    held.maxLen = maxLen
    // trimmed in batches: one splice per maxLen/4 appends, not a shift of the whole log per append
    if (held.entries.length > maxLen + Math.max(16, maxLen >> 2))
      held.entries.splice(0, held.entries.length - maxLen)
    this.backend.logs.set(log, held)
    return id
  }

  async read<T>(
    log: string,
    options: { after?: string; limit?: number } = {},
  ): Promise<Array<LogEntry<T>>> {
    const from = options.after === undefined ? undefined : logId(options.after)
    const limit = checkCount('limit', options.limit ?? DEFAULT_READ, 1)
    const held = this.backend.logs.get(checkKey(log))
    if (!held) return []
    const { entries } = held
    let start = Math.max(0, entries.length - held.maxLen)
    // the first entry after `from`: ids only grow, so a binary search finds it
    for (let end = entries.length; from && start < end;) {
      const mid = (start + end) >> 1
      if (after(entries[mid]!.at, from)) end = mid
      else start = mid + 1
    }
    return entries
      .slice(start, start + limit)
      .map((e) => ({ id: e.id, value: JSON.parse(e.text) as T }))
  }

  async hit(key: string, limit: RateLimit): Promise<RateDecision> {
    const max = checkCount('max', limit.max, 0)
    const windowMs = checkCount('windowMs', limit.windowMs, 1)
    const cost = checkCount('cost', limit.cost ?? 1, 1)
    const now = Date.now()
    const held = this.backend.live(this.backend.windows, checkKey(key), now)
    const count = held?.count ?? 0
    if (count + cost > max)
      return {
        allowed: false,
        count,
        remaining: Math.max(0, max - count),
        resetMs: held ? held.expiresAt - now : 0,
      }
    const window = held ?? { count: 0, expiresAt: now + windowMs }
    window.count += cost
    this.backend.windows.set(key, window)
    return {
      allowed: true,
      count: window.count,
      remaining: max - window.count,
      resetMs: window.expiresAt - now,
    }
  }

  async health(): Promise<StoreHealth> {
    return { engine: 'memory', target: 'memory', state: 'ready', since: this.#since }
  }

  /** Its state never changes: nothing to follow. */
  onState(): () => void {
    return () => {}
  }

  /** Ends this view's subscriptions (the backend's state stays). */
  close() {
    for (const [channel, sub] of this.#subscribed) this.#unregister(channel, sub.deliver)
    this.#subscribed.clear()
  }

  #record<T>(key: string): StoreRecord<T> | undefined {
    const now = Date.now()
    const held = this.backend.live(this.backend.records, key, now)
    return held && recordOf<T>(held.version, held.text, held.expiresAt && held.expiresAt - now)
  }

  #remove(key: string, ifVersion: string | undefined): Held | undefined {
    const held = this.backend.live(this.backend.records, key)
    if (!held || (ifVersion !== undefined && held.version !== ifVersion)) return undefined
    this.backend.records.delete(key)
    return held
  }

  #unregister(channel: string, deliver: (text: string) => void) {
    const all = this.backend.channels.get(channel)
    all?.delete(deliver)
    if (all && !all.size) this.backend.channels.delete(channel)
  }
}
