/**
 * @module repository/worker-host
 * The host side of a dynamic plugin module: one worker_threads Worker per running version, with
 * a heap limit (the V8 heap only), an empty process.env (not a secret boundary: the process's
 * environment is readable from the thread) and no inherited loader flags; what it sends is capped.
 * Its initialisation (import plus apply) has a time limit; past it the worker is terminated. A
 * call that ends early (its timeout, the caller's abort) is cancelled in the worker, which must
 * then answer a ping within PING_MS: one that does not (a loop that never yields) is terminated,
 * and the plugin with it.
 */
import { Worker } from 'node:worker_threads'
import type { CallContext, ProgressEvent, ToolOutput } from 'yoke'

export interface WorkerLimits {
  initTimeoutMs: number
  maxOldGenerationSizeMb: number
}

/** What the worker's ctx.runtime.register sends: a tool's shape without its body. */
export interface RemoteTool {
  name: string
  description?: string
  inputSchema?: Record<string, unknown>
  risk?: string
  concurrency?: string
  timeoutMs?: number
}

export interface HostEvents {
  register(tool: RemoteTool): void
  unregister(name: string): void
  log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void
  /** the worker ended without being asked to (a crash, a memory limit, a stuck call) */
  died(reason: string): void
}

const PING_MS = 1_000
/** One message from the worker (a result, a log line, a tool's shape), at most. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024
/** In any one second, at most this much and this many messages: a flood ends the worker. */
export const MAX_BYTES_PER_SECOND = 64 * 1024 * 1024
export const MAX_MESSAGES_PER_SECOND = 5_000
const DISPOSE_MS = 2_000
const WORKER = new URL('./worker.mjs', import.meta.url)

type Message = Record<string, unknown> & { type: string }

export class WorkerHost {
  readonly #worker: Worker
  readonly #calls = new Map<
    number,
    { resolve(v: unknown): void; reject(e: Error): void; progress(e: ProgressEvent): void }
  >()
  readonly #pings = new Map<number, () => void>()
  #seq = 0
  #window = { start: 0, bytes: 0, messages: 0 }
  #ending = false
  #ready: Promise<void>
  #disposed?: () => void

  constructor(
    code: string,
    key: string,
    config: unknown,
    inject: readonly string[],
    readonly limits: WorkerLimits,
    readonly events: HostEvents,
  ) {
    this.#worker = new Worker(WORKER, {
      workerData: { code, key, config, inject },
      execArgv: [],
      env: {},
      resourceLimits: { maxOldGenerationSizeMb: limits.maxOldGenerationSizeMb },
      stdout: false,
      stderr: false,
    })
    let settle!: { resolve(): void; reject(e: Error): void }
    this.#ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }))
    this.#worker.on('message', (m: Message) => this.#receive(m, settle))
    this.#worker.on('error', (err) => this.#end(`it threw outside a call: ${err.message}`, settle))
    this.#worker.on('exit', (code) => this.#end(`its worker exited (code ${code})`, settle))
  }

  /** Resolves when apply has finished; rejects (and terminates the worker) past initTimeoutMs. */
  async ready(signal: AbortSignal): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `its initialisation did not finish within ${this.limits.initTimeoutMs} ms (initTimeoutMs); the worker was terminated`,
            ),
          ),
        this.limits.initTimeoutMs,
      )
      signal.addEventListener('abort', () => reject(new Error('the run was abandoned')), {
        once: true,
      })
    })
    try {
      await Promise.race([this.#ready, late])
    } catch (err) {
      await this.terminate()
      throw err
    } finally {
      clearTimeout(timer)
    }
  }

  call(tool: string, args: Record<string, unknown>, ctx: CallContext): Promise<ToolOutput> {
    if (this.#ending) return Promise.reject(new Error('the plugin is not running'))
    const id = ++this.#seq
    return new Promise((resolve, reject) => {
      this.#calls.set(id, { resolve, reject, progress: (e) => ctx.progress(e) })
      this.#worker.postMessage({ type: 'call', id, tool, args })
      ctx.onEnd(() => {
        if (!this.#calls.delete(id) || this.#ending) return
        this.#worker.postMessage({ type: 'cancel', id })
        void this.#checkAlive(tool)
      })
    })
  }

  /** Asks the worker to clean up (its apply's cleanup), then terminates it. */
  async terminate(): Promise<void> {
    if (this.#ending) return
    this.#ending = true
    const disposed = new Promise<void>((resolve) => {
      this.#disposed = resolve
      setTimeout(resolve, DISPOSE_MS).unref()
    })
    this.#worker.postMessage({ type: 'dispose' })
    await disposed
    await this.#worker.terminate()
    this.#failCalls('the plugin was stopped')
  }

  async #checkAlive(tool: string) {
    const id = ++this.#seq
    const answered = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), PING_MS)
      this.#pings.set(id, () => (clearTimeout(timer), resolve(true)))
      this.#worker.postMessage({ type: 'ping', id })
    })
    this.#pings.delete(id)
    if (answered || this.#ending) return
    this.#ending = true
    await this.#worker.terminate()
    this.#failCalls('its worker was terminated')
    this.events.died(
      `a call of ${tool} ended early and the worker did not answer within ${PING_MS} ms (a loop that never yields?): it was terminated`,
    )
  }

  /**
   * Counts what the worker sends. Its heap limit does not cover what it sends the host (nor its
   * Buffers): one message too large, or a flood, terminates it before the host holds much more.
   */
  #withinLimits(m: Message, settle: { reject(e: Error): void }): boolean {
    const bytes = sizeOf(m, MAX_MESSAGE_BYTES)
    const now = performance.now()
    if (now - this.#window.start >= 1_000) this.#window = { start: now, bytes: 0, messages: 0 }
    this.#window.bytes += bytes
    this.#window.messages++
    const over =
      bytes > MAX_MESSAGE_BYTES
        ? `it sent a message (${String(m.type).slice(0, 40)}) larger than ${MAX_MESSAGE_BYTES / 2 ** 20} MB`
        : this.#window.bytes > MAX_BYTES_PER_SECOND
          ? `it sent more than ${MAX_BYTES_PER_SECOND / 2 ** 20} MB within a second`
          : this.#window.messages > MAX_MESSAGES_PER_SECOND
            ? `it sent more than ${MAX_MESSAGES_PER_SECOND} messages within a second`
            : undefined
    if (over === undefined) return true
    if (!this.#ending) {
      void this.#worker.terminate()
      this.#end(`${over}: its worker was terminated`, settle)
    }
    return false
  }

  #receive(m: Message, settle: { resolve(): void; reject(e: Error): void }) {
    if (!this.#withinLimits(m, settle)) return
    const call = typeof m.id === 'number' ? this.#calls.get(m.id) : undefined
    switch (m.type) {
      case 'ready':
        return settle.resolve()
      case 'init-failed':
        return settle.reject(new Error(`its apply failed: ${m.message}`))
      case 'register':
        return this.events.register(m.tool as RemoteTool)
      case 'unregister':
        return this.events.unregister(String(m.name))
      case 'log':
        return this.events.log(m.level as 'info', String(m.message))
      case 'progress':
        return call?.progress(m.event as ProgressEvent)
      case 'result':
        this.#calls.delete(m.id as number)
        return call?.resolve(m.value)
      case 'error':
        this.#calls.delete(m.id as number)
        return call?.reject(new Error(String(m.message)))
      case 'pong':
        return this.#pings.get(m.id as number)?.()
      case 'disposed':
        return this.#disposed?.()
    }
  }

  #end(reason: string, settle: { reject(e: Error): void }) {
    settle.reject(new Error(reason))
    if (this.#ending) return
    this.#ending = true
    this.#failCalls(reason)
    this.events.died(reason)
  }

  #failCalls(reason: string) {
    for (const call of this.#calls.values()) call.reject(new Error(reason))
    this.#calls.clear()
  }
}

/** Roughly how many bytes `value` holds (strings count 2 a character); stops counting past `limit`. */
function sizeOf(value: unknown, limit: number): number {
  let total = 0
  const stack: unknown[] = [value]
  const seen = new Set<object>()
  while (stack.length && total <= limit) {
    const v = stack.pop()
    if (v && typeof v === 'object') {
      if (seen.has(v)) continue
      seen.add(v)
    }
    if (typeof v === 'string') total += 2 * v.length
    else if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) total += v.byteLength
    else if (v instanceof Map) for (const entry of v) stack.push(entry)
    else if (v instanceof Set) for (const item of v) stack.push(item)
    else if (v && typeof v === 'object')
      for (const [key, item] of Object.entries(v)) {
        total += 2 * key.length + 8
        stack.push(item)
      }
    else total += 8
  }
  return total
}
