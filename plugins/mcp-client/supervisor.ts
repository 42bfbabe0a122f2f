/**
 * Keeps one server connected. Each connection is a generation; a lost one is reopened after
 * initialDelayMs, doubling up to maxDelayMs. maxAttempts failures in a row spend the outage
 * budget; a connection that stayed up longer than maxDelayMs refills it (a crash-looping server
 * does not). When the budget is spent the supervisor gives up until `restart()`.
 */
import type { Session } from './session.ts'

export type ServerState = 'connecting' | 'connected' | 'reconnecting' | 'gave-up' | 'closed'

export interface ReconnectPolicy {
  initialDelayMs: number
  maxDelayMs: number
  maxAttempts: number
}

export interface SupervisorHooks {
  open(): Promise<Session>
  /** runs on every new connection before it counts as connected (the tool sync); a throw fails the attempt */
  ready(session: Session): Promise<void>
  gaveUp(): Promise<void>
  changed(state: ServerState): void
}

export class Supervisor {
  state: ServerState = 'connecting'
  /** failed connections in this outage (the budget refills after a connection stays up maxDelayMs) */
  attempt = 0
  generation = 0
  lastError?: string
  session?: Session
  connectedAt?: number
  #closed = false
  #restarting = false
  #wake?: () => void
  #waiters = new Set<() => void>()

  constructor(
    readonly policy: ReconnectPolicy,
    private readonly hooks: SupervisorHooks,
  ) {}

  /** Starts the loop; resolves after the first attempt with its error, if it failed. */
  start(): Promise<Error | undefined> {
    return new Promise((resolve) => void this.#run(resolve))
  }

  /** Reconnects now with a full budget (and revives a supervisor that gave up). */
  restart(): void {
    this.#restarting = true
    this.attempt = 0
    this.session?.drop('restarted')
    this.#wake?.()
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#wake?.()
    const session = this.session
    this.session = undefined
    await session?.close()
    this.#set('closed')
  }

  /** Waits until connected (true), or until `ms` pass or the supervisor gives up or closes (false). */
  connected(ms: number): Promise<boolean> {
    if (this.state === 'connected') return Promise.resolve(true)
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.#waiters.delete(done)
        resolve(this.state === 'connected')
      }
      const timer = setTimeout(done, ms)
      this.#waiters.add(done)
    })
  }

  /** For messages: "reconnecting, attempt 3 of 10 (last error: …)". */
  describe(): string {
    const last = this.lastError ? ` (last error: ${this.lastError})` : ''
    if (this.state === 'reconnecting') return `reconnecting, attempt ${this.attempt} of ${this.policy.maxAttempts}${last}`
    if (this.state === 'gave-up') return `it gave up after ${this.policy.maxAttempts} attempts${last}; edit its config or run \`yoke mcp restart\``
    return `${this.state}${last}`
  }

  async #run(firstDone: (err?: Error) => void) {
    let first: ((err?: Error) => void) | undefined = firstDone
    const settleFirst = (err?: Error) => {
      first?.(err)
      first = undefined
    }
    while (!this.#closed) {
      let session: Session | undefined
      let failure: Error | undefined
      this.#restarting = false // a restart asked for before this attempt is this attempt
      try {
        this.generation++
        session = this.session = await this.hooks.open()
        if (this.#closed) break
        await this.hooks.ready(session)
        if (session.isLost) throw await session.lost
        this.connectedAt = Date.now()
        this.#set('connected')
        settleFirst()
        const why = await session.lost
        if (this.#closed) break
        if (!this.#restarting) failure = why
        // a connection that stayed up refills the budget; a crash loop does not
        if (Date.now() - this.connectedAt >= this.policy.maxDelayMs) this.attempt = 0
      } catch (err) {
        if (this.#closed) break
        failure = err instanceof Error ? err : new Error(String(err))
      }
      // the next state first, so the caller of the first attempt and the observers see it at once
      const restart = this.#restarting
      if (failure) this.lastError = failure.message
      if (!restart) this.attempt++
      const gaveUp = !restart && this.attempt > this.policy.maxAttempts
      this.#set(restart ? 'connecting' : gaveUp ? 'gave-up' : 'reconnecting')
      settleFirst(failure)
      if (this.session === session) this.session = undefined
      await session?.close()
      if (gaveUp) {
        await this.hooks.gaveUp()
        await this.#sleep(Infinity) // until restart() or close()
      } else if (!restart) await this.#sleep(Math.min(this.policy.initialDelayMs * 2 ** (this.attempt - 1), this.policy.maxDelayMs))
    }
    settleFirst(new Error('closed'))
    await this.session?.close()
  }

  #set(state: ServerState) {
    if (this.state === state && state !== 'reconnecting') return
    this.state = state
    for (const waiter of [...this.#waiters]) if (state === 'connected' || state === 'gave-up' || state === 'closed') waiter()
    this.hooks.changed(state)
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms === Infinity ? undefined : setTimeout(wake, ms)
      const self = this
      function wake() {
        clearTimeout(timer)
        if (self.#wake === wake) self.#wake = undefined
        resolve()
      }
      this.#wake = wake
      if (this.#closed || this.#restarting) wake()
    })
  }
}
