/**
 * Keeps one server connected. Each connection is a generation; a lost one is reopened after
 * initialDelayMs, doubling up to maxDelayMs. maxAttempts failures in a row spend the outage
 * budget; a connection that stayed up longer than maxDelayMs refills it (a crash-looping server
 * does not). When the budget is spent the supervisor gives up until `restart()`. Closing,
 * restarting or holding aborts a connection attempt under way; while held the loop is parked (no
 * connection, no timer) until `release()`.
 */
import type { Session } from './session.ts'

/** `needs-login`: the server wants a person to sign in (OAuth); no retries until restart().
 *  `held`: disconnected on purpose until release() */
export type ServerState =
  'connecting' | 'connected' | 'reconnecting' | 'gave-up' | 'needs-login' | 'held' | 'closed'

export interface ReconnectPolicy {
  initialDelayMs: number
  maxDelayMs: number
  maxAttempts: number
}

/** What an attempt that ended (a connection lost, or one never made) leaves the loop to do. */
export interface AttemptEnd {
  /** a restart or release asked for meanwhile (or the server forgot the session): not a failure */
  restarting: boolean
  /** why it ended, when that counts as a failure */
  failure?: Error
  /** the failure needs a person (a sign-in): no retry helps until restart() */
  blocked: boolean
}

/** The loop's next step: its state, the failures counted in this outage, and how long to wait. */
export interface NextStep {
  state: 'connecting' | 'reconnecting' | 'needs-login' | 'gave-up'
  attempt: number
  /** before the next attempt; Infinity: until restart() or close() */
  waitMs: number
}

/**
 * The reconnect decision. A restart connects again at once, counting nothing; a blocked failure
 * (a sign-in) waits for a person without spending the budget; any other ending counts one more
 * failed attempt, waits the backoff, and gives up once more than maxAttempts failed in a row.
 */
export function nextStep(policy: ReconnectPolicy, attempt: number, end: AttemptEnd): NextStep {
  if (end.restarting) return { state: 'connecting', attempt, waitMs: 0 }
  if (end.failure && end.blocked) return { state: 'needs-login', attempt, waitMs: Infinity }
  const failed = attempt + 1
  if (failed > policy.maxAttempts) return { state: 'gave-up', attempt: failed, waitMs: Infinity }
  return { state: 'reconnecting', attempt: failed, waitMs: backoffMs(policy, failed) }
}

/** The wait before attempt `attempt` (1-based) of an outage: initialDelayMs, doubling up to maxDelayMs. */
export function backoffMs(policy: ReconnectPolicy, attempt: number): number {
  return Math.min(policy.initialDelayMs * 2 ** Math.max(attempt - 1, 0), policy.maxDelayMs)
}

/** A connection that stayed up at least maxDelayMs refills the budget; a crash loop does not. */
export function refillsBudget(policy: ReconnectPolicy, upForMs: number): boolean {
  return upForMs >= policy.maxDelayMs
}

export interface SupervisorHooks {
  /** opens a connection; `signal` aborts the attempt (close, restart) */
  open(signal: AbortSignal): Promise<Session>
  /** runs on every new connection before it counts as connected (the tool sync); a throw fails the attempt */
  ready(session: Session): Promise<void>
  gaveUp(): Promise<void>
  /** a failure no retry can fix without a person (a sign-in): true stops the loop until restart() */
  blocked?(err: Error): boolean
  changed(state: ServerState): void
  /** a hook threw: reported, and the loop goes on */
  failed(what: string, err: unknown): void
  /** the loop parked for a hold, its connection (and process) gone: what a connection left is cleared */
  parked(): Promise<void>
}

export class Supervisor {
  state: ServerState = 'connecting'
  /** failed connections in this outage (the budget refills after a connection stays up maxDelayMs) */
  attempt = 0
  generation = 0
  lastError?: string
  session?: Session
  connectedAt?: number
  /** while held: why (describe() shows it) */
  heldFor?: string
  #closed = false
  #restarting = false
  /** aborts the connection attempt under way */
  #attempt?: AbortController
  #wake?: () => void
  #loop?: Promise<void>
  #waiters = new Set<() => void>()

  constructor(
    readonly policy: ReconnectPolicy,
    private readonly hooks: SupervisorHooks,
  ) {}

  /** Starts the loop; resolves after the first attempt with its error, if it failed. */
  start(): Promise<Error | undefined> {
    return new Promise((resolve) => {
      this.#loop = this.#run(resolve).catch((err) => {
        this.hooks.failed('the connection loop', err)
        resolve(err instanceof Error ? err : new Error(String(err)))
      })
    })
  }

  /** Reconnects now with a full budget (and revives a supervisor that gave up). */
  restart(): void {
    if (this.#closed || this.heldFor !== undefined) return
    this.#restarting = true
    this.attempt = 0
    this.#attempt?.abort(new Error('restarted'))
    this.session?.close().catch((err) => this.hooks.failed('closing for a restart', err)) // ends an HTTP session on the server too
    this.#set('connecting')
    this.#wake?.()
  }

  /** Disconnects until release(): the attempt under way is abandoned, the connection closed. Again while held: a new why. */
  hold(why: string): void {
    if (this.#closed) return
    const already = this.heldFor !== undefined
    this.heldFor = why
    if (already) return this.#announce('held')
    this.#restarting = true // released before the loop notices: it reconnects at once, no failure counted
    this.#attempt?.abort(new Error('held'))
    // the loop sees it end, closes it too and parks
    this.session?.close().catch((err) => this.hooks.failed('closing for a hold', err))
    this.#set('held')
    this.#wake?.()
  }

  /** Connects again as at start (a full budget). */
  release(): void {
    if (this.#closed || this.heldFor === undefined) return
    this.heldFor = undefined
    this.attempt = 0
    this.#set('connecting')
    this.#wake?.()
  }

  /** Ends the connection and the loop; returns once the server's process (if any) is gone. */
  async close(): Promise<void> {
    this.#closed = true
    this.#attempt?.abort(new Error('closed'))
    this.#wake?.()
    const session = this.session
    this.session = undefined
    await session?.close()
    await this.#loop // it may be closing a session of its own (a failed attempt, one opened just now)
    this.#set('closed')
  }

  /** Waits until a connection other than `previous` is up (true), or `ms` pass, or it gives up or closes (false). */
  connected(ms: number, previous?: Session): Promise<boolean> {
    const up = () =>
      this.state === 'connected' &&
      this.session !== undefined &&
      this.session !== previous &&
      !this.session.isLost
    if (up()) return Promise.resolve(true)
    return new Promise((resolve) => {
      const done = () => {
        const stopped = ['gave-up', 'needs-login', 'held', 'closed'].includes(this.state)
        if (!up() && !stopped && !timedOut) return
        clearTimeout(timer)
        this.#waiters.delete(done)
        resolve(up())
      }
      let timedOut = false
      const timer = setTimeout(() => ((timedOut = true), done()), ms)
      this.#waiters.add(done)
    })
  }

  /** For messages: "reconnecting, attempt 3 of 10 (last error: …)". */
  describe(): string {
    const last = this.lastError ? ` (last error: ${this.lastError})` : ''
    if (this.state === 'reconnecting')
      return `reconnecting, attempt ${this.attempt} of ${this.policy.maxAttempts}${last}`
    if (this.state === 'needs-login') return this.lastError ?? 'it needs a sign-in'
    if (this.state === 'held') return `held: ${this.heldFor}`
    if (this.state === 'gave-up')
      return `it gave up after ${this.policy.maxAttempts} attempts${last}; edit its config or run \`yoke mcp restart\``
    return `${this.state}${last}`
  }

  async #run(firstDone: (err?: Error) => void) {
    let first: ((err?: Error) => void) | undefined = firstDone
    const settleFirst = (err?: Error) => {
      first?.(err)
      first = undefined
    }
    while (!this.#closed) {
      if (this.heldFor !== undefined) {
        settleFirst() // an instance held while it starts has started: it is held, not broken
        await this.#park()
        continue
      }
      const ended = await this.#connection(settleFirst)
      if (ended === 'closed') break
      const { session, failure } = ended
      if (this.heldFor !== undefined) {
        // held: not a failure, nothing to count; the top of the loop parks
        if (this.session === session) this.session = undefined
        await session?.close()
        continue
      }
      // the next state first, so the caller of the first attempt and the observers see it at once
      const restarting = this.#restarting
      if (failure) this.lastError = failure.message
      const blocked = !restarting && failure !== undefined && this.hooks.blocked?.(failure) === true
      const next = nextStep(this.policy, this.attempt, { restarting, failure, blocked })
      this.attempt = next.attempt
      this.#set(next.state)
      if (!restarting) settleFirst(failure)
      if (this.session === session) this.session = undefined
      await session?.close()
      if (next.state === 'gave-up')
        await this.hooks.gaveUp().catch((err) => this.hooks.failed('giving up', err))
      if (next.waitMs > 0) await this.#sleep(next.waitMs) // Infinity: until restart() or close()
    }
    settleFirst(new Error('closed'))
    await this.session?.close()
  }

  /** Held: what a connection left is cleared, and the loop sleeps until release() or close(). */
  async #park(): Promise<void> {
    this.#restarting = false
    await this.hooks.parked().catch((err) => this.hooks.failed('parking for a hold', err))
    if (this.heldFor !== undefined && !this.#closed) await this.#sleep(Infinity)
  }

  /**
   * One connection, from the attempt to its end: `closed` when the supervisor closed meanwhile,
   * else the session (if one opened) and the failure, when its end counts as one (not after a
   * restart, a hold, or a session the server forgot).
   */
  async #connection(
    connected: () => void,
  ): Promise<{ session?: Session; failure?: Error } | 'closed'> {
    let session: Session | undefined
    this.#restarting = false // a restart asked for before this attempt is this attempt
    const attempt = (this.#attempt = new AbortController())
    try {
      this.generation++
      session = this.session = await this.hooks.open(attempt.signal)
      if (this.#closed) return 'closed'
      attempt.signal.throwIfAborted() // opened just as it was held or restarted: no tool sync
      await this.hooks.ready(session)
      if (session.isLost) throw await session.lost
      if (attempt.signal.aborted) throw attempt.signal.reason
      this.connectedAt = Date.now()
      this.#set('connected')
      connected()
      const why = await session.lost
      if (this.#closed) return 'closed'
      if (session.expired) this.#restarting = true // not an outage: a new session at once
      // a connection that stayed up refills the budget; a crash loop does not
      if (refillsBudget(this.policy, Date.now() - this.connectedAt)) this.attempt = 0
      return { session, failure: this.#restarting ? undefined : why }
    } catch (err) {
      if (this.#closed) return 'closed'
      if (this.#restarting) return { session }
      // a connection that ended under the sync failed for why it ended, not for "Connection closed"
      const failure =
        session?.isLost && session.why
          ? new Error(session.why, { cause: err })
          : err instanceof Error
            ? err
            : new Error(String(err))
      return { session, failure }
    }
  }

  #set(state: ServerState) {
    if (this.state === state && state !== 'reconnecting') return
    this.state = state
    this.#announce(state)
  }

  #announce(state: ServerState) {
    for (const waiter of [...this.#waiters]) waiter()
    try {
      this.hooks.changed(state)
    } catch (err) {
      this.hooks.failed('a state observer', err)
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        if (this.#wake === wake) this.#wake = undefined
        resolve()
      }
      const timer = ms === Infinity ? undefined : setTimeout(wake, ms)
      this.#wake = wake
      if (this.#closed || this.#restarting) wake()
    })
  }
}
