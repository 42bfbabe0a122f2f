/**
 * The redis engine: the store every replica with the same url and key prefix shares, on ioredis.
 * Read-then-write operations are Lua scripts (scripts.ts), so compare-and-set, claim-once, the
 * counters and the rate window are atomic across replicas; the append log is a stream (XADD with
 * an exact MAXLEN); pub/sub has its own connection (a subscribed connection runs no commands),
 * made at the first subscribe.
 *
 * Keys: `<prefix>r:<key>` records, `c:` counters, `l:` logs, `q:` rate windows; channels are
 * `<prefix><channel>`. Every operation waits at most `commandTimeoutMs` for Redis (or, while the
 * first connection is made, `connectTimeoutMs` for it) and otherwise fails with
 * STORE_UNAVAILABLE; a lost connection is said once, and so is its return.
 */
import { YokeError } from 'yoke'
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
import { Connection, type ConnectionOptions } from './connection.ts'
import './errors.ts'
import { scripts, type ScriptCommands } from './scripts.ts'
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
import type { Redis } from 'ioredis'

export interface RedisStoreOptions {
  /** the store instance's key: named in every error and log line */
  name: string
  url: string
  password?: string
  keyPrefix: string
  connectTimeoutMs: number
  commandTimeoutMs: number
  /** connect at the first operation (a one-shot command) instead of now */
  lazy?: boolean
  /** where the store says what happens to its connection */
  say?: (level: 'info' | 'warn', message: string) => void
}

type Client = Redis & ScriptCommands
type Listener = (message: unknown) => void

/** The url as it may be printed: its password left out. */
export function printable(url: string): string {
  const u = new URL(url)
  if (u.password) u.password = ''
  return u.toString().replace(/\/$/, '')
}

export class RedisStore implements Store {
  readonly engine = 'redis' as const
  readonly target: string
  readonly #options: RedisStoreOptions
  readonly #commands: Connection<Client>
  #subscriber: Connection | undefined
  /** full channel name → its listeners, and the SUBSCRIBE that made it */
  readonly #channels = new Map<string, { listeners: Set<Listener>; subscribed: Promise<void> }>()
  readonly #watchers = new Set<(health: StoreHealth) => void>()
  #state: StoreHealth['state'] = 'connecting'
  #since = Date.now()
  #everReady = false
  #closed = false

  constructor(options: RedisStoreOptions) {
    this.#options = options
    this.target = `${printable(options.url)}, keys ${options.keyPrefix}*`
    this.#commands = new Connection<Client>({ ...this.#connection('store'), scripts }, () =>
      this.#changed(),
    )
    if (!options.lazy) this.#commands.start()
  }

  async get<T>(key: string): Promise<StoreRecord<T> | undefined> {
    const k = this.#key('r', key)
    const r = await this.#run((c) => c.yokeGet(k))
    return r ? recordOf<T>(r[0], r[1], r[2]) : undefined
  }

  async put<T>(key: string, value: T, options: PutOptions = {}): Promise<PutResult<T>> {
    const k = this.#key('r', key)
    const text = toText(value, 'a record')
    const ttl = checkTtl(options.ttlMs) ?? 0
    const expected = options.ifVersion
    const mode = expected === undefined ? 'any' : expected === null ? 'absent' : 'version'
    const version = newVersion()
    const r = await this.#run((c) => c.yokePut(k, mode, expected ?? '', version, text, ttl))
    if (r[0] === 1) return { ok: true, version: r[1] }
    const [, v, d, pttl] = r
    return {
      ok: false,
      current: v !== undefined && d !== undefined ? recordOf<T>(v, d, pttl) : undefined,
    }
  }

  async delete(key: string, options: { ifVersion?: string } = {}): Promise<boolean> {
    return (await this.take(key, options)) !== undefined
  }

  async take<T>(key: string, options: { ifVersion?: string } = {}) {
    const k = this.#key('r', key)
    const r = await this.#run((c) => c.yokeTake(k, options.ifVersion ?? ''))
    return r ? recordOf<T>(r[0], r[1]) : undefined
  }

  async publish(channel: string, message: unknown): Promise<number> {
    const name = this.#key('', channel)
    const text = toText(message, 'a message')
    return this.#run((c) => c.publish(name, text))
  }

  async subscribe(channel: string, listener: Listener): Promise<Unsubscribe> {
    const name = this.#key('', channel)
    const sub = this.#subscriberConnection()
    let entry = this.#channels.get(name)
    if (!entry) {
      const subscribed = this.#guard(sub, () => sub.client.subscribe(name)).then(() => {})
      entry = { listeners: new Set(), subscribed }
      this.#channels.set(name, entry)
      subscribed.catch(() => this.#channels.get(name) === entry && this.#channels.delete(name))
    }
    const mine = entry
    await mine.subscribed
    // a channel subscribed earlier counts only while its connection is up (else it fails, as a
    // first subscribe would; the connection resubscribes every channel when it is back)
    await this.#guard(sub, async () => {})
    const wrapped: Listener = (m) => listener(m)
    mine.listeners.add(wrapped)
    return async () => {
      mine.listeners.delete(wrapped)
      if (mine.listeners.size || this.#channels.get(name) !== mine) return
      this.#channels.delete(name)
      if (sub.state === 'ready') await sub.client.unsubscribe(name).catch(() => {})
    }
  }

  async add(key: string, deltas: Record<string, number>, options: { ttlMs?: number } = {}) {
    const k = this.#key('c', key)
    const entries = checkDeltas(deltas)
    const ttl = checkTtl(options.ttlMs) ?? 0
    const values = await this.#run((c) => c.yokeAdd(k, ttl, ...entries.flat()))
    return Object.fromEntries(entries.map(([field], i) => [field, Number(values[i])]))
  }

  async counters(key: string): Promise<Record<string, number>> {
    const k = this.#key('c', key)
    const all = await this.#run((c) => c.hgetall(k))
    return Object.fromEntries(Object.entries(all).map(([f, v]) => [f, Number(v)]))
  }

  async append(log: string, value: unknown, options: { maxLen: number }): Promise<string> {
    const k = this.#key('l', log)
    const text = toText(value, 'a log entry')
    const maxLen = checkCount('maxLen', options.maxLen, 1)
    const id = await this.#run((c) => c.xadd(k, 'MAXLEN', maxLen, '*', 'd', text))
    return id!
  }

  async read<T>(
    log: string,
    options: { after?: string; limit?: number } = {},
  ): Promise<Array<LogEntry<T>>> {
    const k = this.#key('l', log)
    // the id after `after` (XRANGE's exclusive `(` needs Redis 6.2; this works from 5.0)
    const at = options.after === undefined ? undefined : logId(options.after)
    const from = at ? `${at[0]}-${at[1] + 1}` : '-'
    const limit = checkCount('limit', options.limit ?? DEFAULT_READ, 1)
    const rows = await this.#run((c) => c.xrange(k, from, '+', 'COUNT', limit))
    return rows.map(([id, fields]) => ({ id, value: JSON.parse(fields[1] ?? 'null') as T }))
  }

  async hit(key: string, limit: RateLimit): Promise<RateDecision> {
    const k = this.#key('q', key)
    const max = checkCount('max', limit.max, 0)
    const windowMs = checkCount('windowMs', limit.windowMs, 1)
    const cost = checkCount('cost', limit.cost ?? 1, 1)
    const [allowed, count, resetMs] = await this.#run((c) => c.yokeHit(k, max, windowMs, cost))
    return { allowed: allowed === 1, count, remaining: Math.max(0, max - count), resetMs }
  }

  async health(): Promise<StoreHealth> {
    let latencyMs: number | undefined
    try {
      await this.#commands.ready()
      const started = performance.now()
      await this.#commands.client.ping()
      latencyMs = Math.round((performance.now() - started) * 100) / 100
    } catch {}
    const health = this.#health()
    return latencyMs === undefined || health.state !== 'ready' ? health : { ...health, latencyMs }
  }

  onState(listener: (health: StoreHealth) => void): () => void {
    this.#watchers.add(listener)
    return () => this.#watchers.delete(listener)
  }

  /** Closes both connections; every later operation fails with STORE_UNAVAILABLE. */
  close() {
    this.#closed = true
    this.#channels.clear()
    this.#subscriber?.close()
    this.#commands.close()
  }

  #say(level: 'info' | 'warn', message: string) {
    this.#options.say?.(level, `store ${this.#options.name}: ${message}`)
  }

  #connection(role: string): ConnectionOptions {
    const o = this.#options
    return {
      url: o.url,
      ...(o.password !== undefined ? { password: o.password } : {}),
      name: `yoke-${role}-${o.name}`.replace(/[^\w.:-]/g, '_'),
      connectTimeoutMs: o.connectTimeoutMs,
      commandTimeoutMs: o.commandTimeoutMs,
    }
  }

  /** The full key (or channel) in Redis: the deployment's prefix, the kind, the caller's key. */
  #key(kind: string, key: string) {
    checkKey(key)
    return `${this.#options.keyPrefix}${kind ? `${kind}:` : ''}${key}`
  }

  /** Runs one operation on the command connection: ready (bounded), answered (bounded). */
  #run<T>(op: (client: Client) => Promise<T>): Promise<T> {
    return this.#guard(this.#commands, () => op(this.#commands.client))
  }

  async #guard<T, C extends Redis>(connection: Connection<C>, op: () => Promise<T>): Promise<T> {
    try {
      if (this.#closed) throw new Error('the store is closed')
      await connection.ready()
      return await op()
    } catch (error) {
      throw new YokeError(
        'STORE_UNAVAILABLE',
        { store: this.#options.name, target: this.target, reason: reasonOf(error, this.#options) },
        { cause: error },
      )
    }
  }

  /** The pub/sub connection, made at the first subscribe; it resubscribes when it reconnects. */
  #subscriberConnection(): Connection {
    if (this.#subscriber) return this.#subscriber
    const sub: Connection = new Connection(
      this.#connection('pubsub'),
      () => this.#changed(),
      async () => {
        const names = [...this.#channels.keys()]
        if (names.length) await sub.client.subscribe(...names)
      },
    )
    sub.client.on('message', (channel: string, text: string) => this.#deliver(channel, text))
    this.#subscriber = sub
    sub.start()
    return sub
  }

  #deliver(channel: string, text: string) {
    const listeners = this.#channels.get(channel)?.listeners
    if (!listeners?.size) return
    let message: unknown
    try {
      message = JSON.parse(text)
    } catch {
      this.#say('warn', `a message on ${channel} is not JSON (${text.slice(0, 80)}): left out`)
      return
    }
    for (const listener of listeners)
      try {
        listener(message)
      } catch (error) {
        this.#say('warn', `a listener of ${channel} threw: ${(error as Error).message}`)
      }
  }

  #health(): StoreHealth {
    const down = [this.#commands, this.#subscriber].find((c) => c && c.state !== 'ready')
    return {
      engine: 'redis',
      target: this.target,
      state: this.#state,
      since: this.#since,
      ...(down?.error ? { error: down.error } : {}),
    }
  }

  /**
   * After a connection's change: the store's state, said when it changes. The commands'
   * connection decides it, and a pub/sub connection that is down makes it down too (messages
   * would be missed); one still making its first connection does not.
   */
  #changed() {
    const state = this.#subscriber?.state === 'down' ? 'down' : this.#commands.state
    if (state === this.#state) return
    const since = this.#since
    this.#state = state
    this.#since = Date.now()
    if (!this.#closed) this.#tell(since)
    const health = this.#health()
    for (const watcher of this.#watchers) watcher(health)
  }

  #tell(since: number) {
    const error = this.#health().error ?? 'no answer'
    const meanwhile = 'what needs the store fails with STORE_UNAVAILABLE meanwhile'
    if (this.#state === 'ready' && this.#everReady) {
      const down = ((Date.now() - since) / 1000).toFixed(1)
      this.#say('info', `reconnected to ${this.target} after ${down} s`)
    } else if (this.#state === 'ready') this.#say('info', `connected to ${this.target}`)
    else if (this.#state === 'down' && this.#everReady)
      this.#say('warn', `lost ${this.target} (${error}); reconnecting, and ${meanwhile}`)
    else if (this.#state === 'down')
      this.#say('warn', `cannot reach ${this.target} (${error}); retrying, and ${meanwhile}`)
    if (this.#state === 'ready') this.#everReady = true
  }
}

/** Why an operation failed, as the error says it. */
function reasonOf(error: unknown, options: RedisStoreOptions): string {
  const message = error instanceof Error ? error.message : String(error)
  if (message === 'Command timed out') return `no answer within ${options.commandTimeoutMs} ms`
  if (/enableOfflineQueue|Stream isn't writeable/i.test(message)) return 'not connected'
  return message
}
