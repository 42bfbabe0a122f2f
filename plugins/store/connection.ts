/**
 * One ioredis connection and what the store knows of it: connecting (the first attempt, which
 * operations wait for, bounded), ready, or down (operations fail at once, naming the last error,
 * while ioredis reconnects with backoff). ioredis queues nothing offline and resends nothing after
 * a reconnect: an operation that failed is never done later behind its caller's back (a `take`
 * that said STORE_UNAVAILABLE did not take the record a minute later).
 */
import { Redis, type RedisOptions } from 'ioredis'

export type ConnectionState = 'connecting' | 'ready' | 'down'

export interface ConnectionOptions {
  url: string
  password?: string
  name: string
  connectTimeoutMs: number
  commandTimeoutMs: number
  scripts?: RedisOptions['scripts']
}

/** Reconnect after 50, 100, 200 … ms, at most a second apart, for as long as it takes. */
export const backoff = (attempt: number) => Math.min(50 * 2 ** Math.min(attempt - 1, 5), 1_000)

export function clientOptions(options: ConnectionOptions): RedisOptions {
  return {
    connectionName: options.name,
    lazyConnect: true,
    connectTimeout: options.connectTimeoutMs,
    commandTimeout: options.commandTimeoutMs,
    // a socket that stops answering is dropped (then reconnected), not waited on for ever
    socketTimeout: options.commandTimeoutMs * 2,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
    maxRetriesPerRequest: 0,
    retryStrategy: backoff,
    ...(options.scripts ? { scripts: options.scripts } : {}),
  }
}

/**
 * The url with the password in it: ioredis takes the url's (empty) password over an option's, so
 * a password from `passwordEnv` goes into the url (percent-encoded; ioredis decodes it).
 */
function urlOf(options: ConnectionOptions): string {
  if (options.password === undefined) return options.url
  const url = new URL(options.url)
  url.password = encodeURIComponent(options.password)
  return url.toString()
}

export class Connection<C extends Redis = Redis> {
  readonly client: C
  state: ConnectionState = 'connecting'
  since = Date.now()
  /** the last connection error (why it is down) */
  error: string | undefined
  #started = false
  #closed = false
  #first: Promise<void> | undefined
  /** ends the first connection's wait (it is ready, or down) */
  #settled = () => {}

  /**
   * @param onChange called after every state change
   * @param onReady work before the connection counts as ready again (the subscriber resubscribes)
   */
  constructor(
    options: ConnectionOptions,
    private readonly onChange: (c: Connection<C>) => void,
    private readonly onReady: () => Promise<void> = async () => {},
    private readonly waitMs = options.connectTimeoutMs,
  ) {
    this.client = new Redis(urlOf(options), clientOptions(options)) as C
    this.client.on('error', (error: Error) => (this.error = error.message || String(error)))
    this.client.on('ready', () => void this.#ready())
    this.client.on('close', () => this.#lost())
  }

  /** Starts connecting (once). */
  start() {
    if (this.#started || this.#closed) return
    this.#started = true
    this.#first = new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        if (this.state === 'connecting')
          this.#set('down', `no connection within ${this.waitMs} ms${this.#why()}`)
      }, this.waitMs)
      timer.unref()
      this.#settled = () => {
        clearTimeout(timer)
        resolve()
      }
    })
    this.client.connect().catch(() => {})
  }

  /** Resolves when operations can run; throws (an Error whose message says why) when not. */
  async ready(): Promise<void> {
    if (this.state === 'ready') return
    if (this.#closed) throw new Error('the store is closed')
    this.start()
    if (this.state === 'connecting') await this.#first
    // the state changed while the first connection was awaited (TypeScript cannot see it)
    if (!this.#isReady()) throw new Error(this.error ?? 'not connected')
  }

  #isReady() {
    return this.state === 'ready'
  }

  close() {
    this.#closed = true
    this.client.disconnect()
    this.#set('down', 'closed')
  }

  async #ready() {
    try {
      await this.onReady()
    } catch (error) {
      this.error = (error as Error).message
      this.client.disconnect(true)
      return
    }
    if (this.client.status === 'ready') this.#set('ready', undefined)
  }

  #lost() {
    if (this.#closed) return
    if (this.state === 'ready') this.#set('down', this.error ?? 'connection closed')
    else if (this.state === 'connecting' && this.error) this.#set('down', this.error)
  }

  #why() {
    return this.error ? ` (${this.error})` : ''
  }

  #set(state: ConnectionState, error: string | undefined) {
    if (state === 'ready') this.error = undefined
    else if (error !== undefined) this.error = error
    if (state === this.state) return
    this.state = state
    this.since = Date.now()
    this.#settled()
    this.onChange(this)
  }
}
