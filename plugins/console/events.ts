/**
 * The live event stream (Server-Sent Events): one `event:` kind per view, JSON data, a heartbeat
 * comment. A browser that does not read keeps at most `maxQueued` events in its queue, then it is
 * dropped (its EventSource reconnects and fetches the snapshot again): a slow client never holds
 * the harness, and a send never waits.
 */
import type { ServerResponse } from 'node:http'
import type { EventKind, EventMap } from './protocol.ts'

interface Client {
  res: ServerResponse
  /** frames waiting for the socket to drain */
  queue: string[]
  draining: boolean
}

export class EventHub {
  readonly #clients = new Set<Client>()
  #timer?: NodeJS.Timeout
  /** a browser came or went (the console holds the telemetry recorder only while one is here) */
  onCount: (count: number) => void = () => {}

  constructor(
    private readonly maxQueued: number,
    private readonly heartbeatMs: number,
  ) {}

  get count(): number {
    return this.#clients.size
  }

  /** Takes a request as an event stream; `hello` is its first event. */
  open(res: ServerResponse, hello: EventMap['hello']): void {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    })
    const client: Client = { res, queue: [], draining: false }
    this.#clients.add(client)
    res.on('close', () => this.#drop(client))
    res.on('drain', () => this.#flush(client))
    this.#write(client, frame('hello', hello))
    this.#timer ??= setInterval(() => this.#broadcast(': ping\n\n'), this.heartbeatMs)
    this.#timer.unref()
    this.onCount(this.#clients.size)
  }

  send<K extends EventKind>(kind: K, data: EventMap[K]): void {
    if (!this.#clients.size) return
    this.#broadcast(frame(kind, data))
  }

  /** Ends every stream (the console closes). */
  close(): void {
    for (const client of [...this.#clients]) {
      client.res.end()
      this.#drop(client)
    }
  }

  #broadcast(text: string) {
    for (const client of [...this.#clients]) this.#write(client, text)
  }

  #write(client: Client, text: string) {
    if (client.draining) {
      if (client.queue.length >= this.maxQueued) {
        // a browser that does not keep up is let go; it reconnects and reads the snapshot again
        client.res.destroy()
        this.#drop(client)
        return
      }
      client.queue.push(text)
      return
    }
    if (!client.res.write(text)) client.draining = true
  }

  #flush(client: Client) {
    client.draining = false
    while (client.queue.length && !client.draining)
      if (!client.res.write(client.queue.shift()!)) client.draining = true
  }

  #drop(client: Client) {
    if (!this.#clients.delete(client)) return
    client.queue.length = 0
    if (!this.#clients.size && this.#timer) {
      clearInterval(this.#timer)
      this.#timer = undefined
    }
    this.onCount(this.#clients.size)
  }
}

function frame(kind: string, data: unknown): string {
  return `event: ${kind}\ndata: ${JSON.stringify(data)}\n\n`
}
