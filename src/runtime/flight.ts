/**
 * @module runtime/flight
 * One running tool body. It ends in exactly one way (done, caller abort, timeout, unload) and is
 * also the body's CallContext. Built for the hot path: a call that ends normally allocates one
 * promise here (the race of its work against an early end); the AbortSignal, the `ended` promise
 * and the gate's release exist only when something asks for them, and the flight is its own
 * abort listener.
 */
import { YokeError } from '../errors.ts'
import { PENDING, type Sink } from './taps.ts'
import type { CallOptions, ProgressEvent, RegisteredTool, ToolCall } from './types.ts'

export type Ending = 'TIMEOUT' | 'UNLOADED' | 'ABORTED'

export class Flight implements Deadline, Sink {
  why?: Ending
  /** its place among the flights with deadlines (Deadlines) */
  older?: Deadline = undefined
  newer?: Deadline = undefined
  listed = false
  /** the work under way: what an unloading tool waits for */
  work?: Promise<unknown>
  /** the gate whose slot the flight holds, and the scope it holds it in (set and cleared by the gate) */
  slot?: { leave(flight: Flight): void }
  slotScope?: string
  #ended?: Promise<never>
  /** ends the race (the first to call it wins); the `ended` promise is rejected when one was asked for */
  #settle?: (ok: boolean, value: unknown) => void
  #rejectEnded?: (reason: unknown) => void
  #controller?: AbortController
  /** whether it waits under its deadline (a call that never waited never joins the timer) */
  #timed = false
  readonly deadline: number

  constructor(
    readonly call: ToolCall,
    readonly tool: RegisteredTool,
    readonly timeoutMs: number,
    private readonly onProgress: (call: ToolCall, event: ProgressEvent) => void,
    /** the call's options: the caller's signal, the parent call */
    readonly options: CallOptions,
    private readonly deadlines: Deadlines,
    private readonly graceMs: number,
    /** when the call began (performance.now()) */
    readonly started: number,
  ) {
    this.deadline = started + timeoutMs
    const caller = options.signal
    if (caller?.aborted) this.end('ABORTED')
    else caller?.addEventListener('abort', this, { once: true })
  }

  /**
   * The call's outcome once its stages, which wait now, give it: `done` with it, unless one of
   * them fails or the flight ends first (the timeout is armed now): then `fail` with the error.
   * The flight is finished before either runs.
   */
  race<T, R>(done: (outcome: T) => R, fail: (err: unknown) => R): Promise<R> {
    this.#timed = true
    this.deadlines.add(this)
    return (this.work = new Promise<R>((resolve, reject) => {
      this.#settle = (ok, value) => {
        this.#settle = undefined
        this.finish()
        try {
          resolve(ok ? done(value as T) : fail(value))
        } catch (err) {
          reject(err)
        }
      }
      if (this.why) this.#settle(false, this.#reason())
    }))
  }

  /**
   * A stage waits on `wait`: then goes on with `next`, whose outcome (or error) ends the race
   * unless it waits again (PENDING); a failed wait ends it with `mapError`'s error.
   */
  after<T>(
    wait: PromiseLike<T>,
    next: (value: T) => unknown,
    mapError?: (err: unknown) => unknown,
  ): typeof PENDING {
    wait.then(
      (value) => {
        let step: unknown
        try {
          step = next(value)
        } catch (err) {
          return this.#settle?.(false, err)
        }
        if (step !== PENDING) this.#settle?.(true, step)
      },
      (err: unknown) => this.#settle?.(false, mapError ? mapError(err) : err),
    )
    return PENDING
  }

  /** Rejects when the flight ends early, so a wait (the gate, a tap) still ends. */
  get ended(): Promise<never> {
    if (!this.#ended) {
      this.#ended = this.why
        ? Promise.reject(this.#reason())
        : new Promise<never>((_, reject) => (this.#rejectEnded = reject))
      this.#ended.catch(ignore) // an end after the body finished rejects nobody
    }
    return this.#ended
  }

  /** What the body gets as `ctx.signal`: aborted on any early end. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (this.why) this.#controller.abort(this.#reason())
    }
    return this.#controller.signal // the flight listens to the caller's signal and aborts this one
  }

  progress(event: ProgressEvent): void {
    this.onProgress(this.call, event)
  }

  onEnd(fn: (reason: Error) => void): void {
    this.ended.catch(fn)
  }

  /** Gives the concurrency slot back before the body ends (a body that waits on other calls). */
  release(): void {
    this.slot?.leave(this)
  }

  /** The caller's signal aborted (EventTarget listener object). */
  handleEvent(): void {
    this.end('ABORTED')
  }

  end(why: Ending): void {
    if (this.why) return
    this.why = why
    const reason = this.#reason()
    this.#controller?.abort(reason)
    this.#settle?.(false, reason)
    this.#rejectEnded?.(reason)
    if (this.slot) setTimeout(() => this.release(), this.graceMs).unref()
  }

  finish(): void {
    if (this.#timed) this.deadlines.delete(this)
    this.options.signal?.removeEventListener('abort', this)
  }

  #reason() {
    return new YokeError(this.why!, { name: this.call.name, ms: this.timeoutMs })
  }
}

function ignore() {}

/**
 * The timeouts of all flights on one timer, armed for the earliest deadline. Calls mostly share
 * one timeout, so a new flight's deadline is rarely the earliest: adding one links it into a list
 * (no hashing, no allocation) rather than arming a timer.
 */
export interface Deadline {
  readonly deadline: number
  end(why: Ending): void
  /** the list's links, kept by Deadlines */
  older?: Deadline | undefined
  newer?: Deadline | undefined
  listed?: boolean
}

export class Deadlines {
  #newest?: Deadline
  #size = 0
  #timer?: NodeJS.Timeout
  #armedFor = Infinity
  #idling = false

  add(flight: Deadline): void {
    flight.listed = true
    flight.older = this.#newest
    if (this.#newest) this.#newest.newer = flight
    this.#newest = flight
    this.#size++
    if (flight.deadline < this.#armedFor) this.#arm(flight.deadline)
    else if (this.#size === 1 && !this.#idling) this.#timer?.ref()
  }

  /**
   * An armed timer stays armed (firing with nothing due is cheaper than re-arming per call), but
   * it keeps the process alive only while a call is in flight: once none is, it is unref'd on the
   * next turn of the event loop (calls made one after another do not toggle it each time).
   */
  delete(flight: Deadline): void {
    if (!flight.listed) return
    flight.listed = false
    if (flight.newer) flight.newer.older = flight.older
    else this.#newest = flight.older
    if (flight.older) flight.older.newer = flight.newer
    flight.older = flight.newer = undefined
    if (--this.#size || this.#idling) return
    this.#idling = true
    setImmediate(this.#idle)
  }

  readonly #idle = () => {
    this.#idling = false
    if (!this.#size) this.#timer?.unref()
  }

  /** Visits every flight in progress (`fn` may delete the one it is given). */
  forEach(fn: (flight: Deadline) => void): void {
    for (let flight = this.#newest; flight;) {
      const older: Deadline | undefined = flight.older
      fn(flight)
      flight = older
    }
  }

  #arm(at: number) {
    clearTimeout(this.#timer)
    this.#armedFor = at
    const delay = Math.min(Math.max(0, at - performance.now()), 2 ** 31 - 1) // setTimeout's largest delay
    this.#timer = at === Infinity ? undefined : setTimeout(() => this.#fire(), delay)
    if (!this.#size) this.#timer?.unref()
  }

  #fire() {
    const now = performance.now()
    let next = Infinity
    this.forEach((flight) => {
      if (flight.deadline > now) return void (next = Math.min(next, flight.deadline))
      this.delete(flight)
      flight.end('TIMEOUT')
    })
    this.#arm(next)
  }
}
