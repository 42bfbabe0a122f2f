/**
 * One call's link to the SDK: the part of an AbortSignal that the SDK's request() reads (aborted,
 * reason, throwIfAborted, an abort listener) and the progress callback, over the call's cheap
 * onEnd. A real AbortSignal per call costs an AbortController and an EventTarget listener, which
 * shows at thousands of calls a second. The v2 SDK (2.4.0) reads the same: its
 * request() checks `aborted`, takes `reason`, and adds and removes an `abort` listener; on
 * 2026-07-28 over HTTP it closes the request's stream on that abort. The cancellation tests (both
 * eras, test/plugins/mcp-client/bridge-matrix.test.ts) keep this honest.
 */
import type { CallContext } from 'yoke'

export class SdkCall {
  aborted = false
  reason: unknown
  #listeners: Array<() => void> = []

  /** the SDK's progress callback for this call (it is called unbound) */
  readonly onprogress: (p: Progress) => void

  constructor(call: CallContext) {
    call.onEnd((why) => this.#abort(why))
    this.onprogress = progressOf(call)
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    this.#listeners.push(listener)
  }

  removeEventListener(): void {}

  #abort(why: Error) {
    this.aborted = true
    this.reason = why
    for (const listener of this.#listeners) listener()
  }
}

type Progress = { progress: number; total?: number; message?: string }

/** A call's progress callback, made by a function: a class field's arrow is renamed per instance under tsx (keepNames). */
function progressOf(call: CallContext): (p: Progress) => void {
  return (p) => call.progress({ progress: p.progress, total: p.total, message: p.message })
}
