/**
 * @module runtime/flight
 * One running tool body. It ends in exactly one way (done, caller abort, timeout, unload) and is
 * also the body's CallContext. Built for the hot path: the AbortSignal is made only when the body
 * reads it, and the flight is its own timer argument and abort listener, so a call allocates
 * next to no closures.
 */
import { YokeError } from '../errors.ts'
import type { ProgressEvent, ToolCall } from './types.ts'

export type Ending = 'TIMEOUT' | 'UNLOADED' | 'ABORTED'

export class Flight {
  why?: Ending
  /** the work under way: what an unloading tool waits for */
  work?: Promise<unknown>
  /** called (once, after the grace period) when the flight ends early: gives back a gate slot */
  release?: () => void
  /** rejects when the flight ends early, so a body that ignores its signal still ends */
  readonly ended: Promise<never>
  #reject!: (reason: unknown) => void
  #controller?: AbortController
  #signal?: AbortSignal
  readonly deadline: number

  constructor(
    readonly call: ToolCall,
    readonly timeoutMs: number,
    private readonly onProgress: (call: ToolCall, event: ProgressEvent) => void,
    private readonly caller: AbortSignal | undefined,
    private readonly deadlines: Deadlines,
    private readonly graceMs: number,
  ) {
    this.ended = new Promise<never>((_, reject) => (this.#reject = reject))
    this.ended.catch(ignore) // an end after the body finished rejects nobody
    this.deadline = performance.now() + timeoutMs
    deadlines.add(this)
    if (caller?.aborted) this.end('ABORTED')
    else caller?.addEventListener('abort', this, { once: true })
  }

  /** What the body gets as `ctx.signal`: aborted on any early end. */
  get signal(): AbortSignal {
    if (!this.#signal) {
      this.#controller = new AbortController()
      if (this.why) this.#controller.abort(this.#reason())
      this.#signal = this.#controller.signal // the flight listens to the caller's signal and aborts this one
    }
    return this.#signal
  }

  progress(event: ProgressEvent): void {
    this.onProgress(this.call, event)
  }

  onEnd(fn: (reason: Error) => void): void {
    this.ended.catch(fn)
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
    this.#reject(reason)
    if (this.release) setTimeout(this.release, this.graceMs).unref()
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
