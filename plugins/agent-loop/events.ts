/**
 * A run's events as an async iterable: events are buffered until read, so a reader that starts
 * late still sees the run from its start. One reader per run (the CLI, a test, the MCP endpoint).
 */
export class EventQueue<T> implements AsyncIterable<T> {
  readonly #buffer: T[] = []
  #ended = false
  #waiting?: () => void

  push(event: T): void {
    if (this.#ended) return
    this.#buffer.push(event)
    this.#waiting?.()
  }

  end(): void {
    this.#ended = true
    this.#waiting?.()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      while (this.#buffer.length) yield this.#buffer.shift()!
      if (this.#ended) return
      await new Promise<void>((resolve) => (this.#waiting = resolve))
      this.#waiting = undefined
    }
  }
}
