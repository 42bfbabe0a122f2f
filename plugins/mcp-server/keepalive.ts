/**
 * SSE comments on quiet streams: a 2025 session's GET stream, `subscriptions/listen`, a long call
 * answered as a stream can go minutes without an event, and a balancer or proxy that cuts idle
 * connections (nginx's `proxy_read_timeout` 60 s, HAProxy's `timeout server`, a cloud load
 * balancer's idle timeout) ends it; its client then reconnects, or, for a call, waits. A comment
 * line (`: keep-alive`) is ignored by every SSE reader (the spec's rule for lines starting `:`), so
 * it is written whenever a stream has been quiet for `everyMs`. Only responses that are event
 * streams are watched: a JSON answer costs one wrapper of `writeHead` and nothing else.
 */
import type { ServerResponse } from 'node:http'

/** the comment each quiet period ends with */
export const KEEP_ALIVE = ': keep-alive\n\n'

/** Watches `res`: once it turns out to be an event stream, a quiet `everyMs` gets a comment. */
export function keepStreamAlive(res: ServerResponse, everyMs: number): void {
  if (!everyMs) return
  const writeHead = res.writeHead
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    const written = (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args)
    if (isEventStream(res, args)) new QuietStream(res, everyMs)
    return written
  } as typeof res.writeHead
}

/** One event stream's watch: when it last wrote, and the timer that fills its silences. */
class QuietStream {
  #last = performance.now()
  readonly #timer: NodeJS.Timeout
  readonly #write: ServerResponse['write']

  constructor(
    private readonly res: ServerResponse,
    private readonly everyMs: number,
  ) {
    this.#write = res.write
    const write = this.#write
    // every write (an event) restarts the quiet period
    res.write = ((...args: Parameters<ServerResponse['write']>) => {
      this.#last = performance.now()
      return (write as (...a: unknown[]) => boolean).apply(res, args)
    }) as ServerResponse['write']
    this.#timer = setInterval(() => this.#tick(), Math.max(10, Math.floor(everyMs / 2)))
    this.#timer.unref()
    res.once('close', () => clearInterval(this.#timer))
  }

  #tick() {
    const { res } = this
    if (res.writableEnded || res.destroyed) return clearInterval(this.#timer)
    if (performance.now() - this.#last < this.everyMs) return
    this.#last = performance.now()
    ;(this.#write as (chunk: string) => boolean).call(res, KEEP_ALIVE)
  }
}

/** Whether the head `writeHead` wrote (its headers argument, or those set before) says event stream. */
function isEventStream(res: ServerResponse, args: unknown[]): boolean {
  const headers = args.find((a) => typeof a === 'object' && a !== null) as
    Record<string, unknown> | unknown[] | undefined
  let type: unknown = res.getHeader('content-type')
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2)
      if (String(headers[i]).toLowerCase() === 'content-type') type = headers[i + 1]
  } else if (headers)
    for (const [name, value] of Object.entries(headers))
      if (name.toLowerCase() === 'content-type') type = value
  return String(type ?? '').startsWith('text/event-stream')
}
