/**
 * @module runtime/flight
 * One running tool body. It ends in exactly one way (done, caller abort, timeout, unload) and is
 * also the body's CallContext. Built for the hot path: a call that ends normally allocates one
 * promise here (the race of its work against an early end); the AbortSignal, the `ended` promise
 * and the gate's release exist only when something asks for them, and the flight is its own
 * abort listener.
 */
import { YokeError } from '../errors.ts'
import type { ProgressEvent, RegisteredTool, ToolCall } from './types.ts'

export type Ending = 'TIMEOUT' | 'UNLOADED' | 'ABORTED'

export class Flight {
  why?: Ending
  /** the work under way: what an unloading tool waits for */
  work?: Promise<unknown>
  /** the gate whose slot the flight holds, and the scope it holds it in (set and cleared by the gate) */
  slot?: { leave(flight: Flight): void }
  slotScope?: string
  #ended?: Promise<never>
  /** rejects the race, and the `ended` promise when one was asked for */
  #reject?: (reason: unknown) => void
  #rejectEnded?: (reason: unknown) => void
  #controller?: AbortController
  readonly deadline: number

  constructor(
    readonly call: ToolCall,
    readonly tool: RegisteredTool,
    readonly timeoutMs: number,
    private readonly onProgress: (call: ToolCall, event: ProgressEvent) => void,
    private readonly caller: AbortSignal | undefined,
    private readonly deadlines: Deadlines,
    private readonly graceMs: number,
    started: number,
  ) {
    this.deadline = started + timeoutMs
    deadlines.add(this)
    if (caller?.aborted) this.end('ABORTED')
    else caller?.addEventListener('abort', this, { once: true })
  }

  /** `work`, unless the flight ends first: then the early end's error. */
  race<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#reject = reject
      work.then(resolve, reject)
      if (this.why) reject(this.#reason())
    })
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
    this.#reject?.(reason)
    this.#rejectEnded?.(reason)
    if (this.slot) setTimeout(() => this.release(), this.graceMs).unref()
  }

  finish(): void {
    this.deadlines.delete(this)
    this.caller?.removeEventListener('abort', this)
  }

  #reason() {
    return new YokeError(this.why!, { name: this.call.name, ms: this.timeoutMs })
  }
}

function ignore() {}

/**
 * The timeouts of all flights on one timer, armed for the earliest deadline. Calls mostly share
 * one timeout, so a new flight's deadline is rarely the earliest: adding one costs a Set insert
 * rather than a timer.
 */
export interface Deadline {
  readonly deadline: number
  end(why: Ending): void
}

export class Deadlines {
  #flights = new Set<Deadline>()
  #timer?: NodeJS.Timeout
  #armedFor = Infinity

  add(flight: Deadline): void {
    this.#flights.add(flight)
    if (flight.deadline < this.#armedFor) this.#arm(flight.deadline)
    else if (this.#flights.size === 1) this.#timer?.ref()
  }

  /**
   * An armed timer stays armed (firing with nothing due is cheaper than re-arming per call), but
   * it keeps the process alive only while a call is in flight.
   */
  delete(flight: Deadline): void {
    this.#flights.delete(flight)
    if (!this.#flights.size) this.#timer?.unref()
  }

  /** Visits every flight in progress. */
  forEach(fn: (flight: Deadline) => void): void {
    for (const flight of this.#flights) fn(flight)
  }

  #arm(at: number) {
    clearTimeout(this.#timer)
    this.#armedFor = at
    const delay = Math.min(Math.max(0, at - performance.now()), 2 ** 31 - 1) // setTimeout's largest delay
    this.#timer = at === Infinity ? undefined : setTimeout(() => this.#fire(), delay)
    if (!this.#flights.size) this.#timer?.unref()
  }

  #fire() {
    const now = performance.now()
    let next = Infinity
    for (const flight of this.#flights) {
      if (flight.deadline <= now) {
        this.#flights.delete(flight)
        flight.end('TIMEOUT')
      } else next = Math.min(next, flight.deadline)
    }
    this.#arm(next)
  }
}
