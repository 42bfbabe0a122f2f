/**
 * @module repository/worker-host
 * The host side of a dynamic plugin module: one worker process per running version (a child
 * process, not a thread: a thread blocked in a syscall — a FIFO read, an execSync — can be neither
 * terminated nor left behind, and keeps yoke's process from exiting). The worker runs in a process
 * group of its own, with a heap limit (V8's old space), an empty environment and no inherited
 * loader flags; ending it kills the group, so the processes it started end with it. What it sends
 * is capped (size, rate, tools) and handled in slices that yield to the event loop. Every wait on
 * it is bounded: its initialisation (import plus apply) by initTimeoutMs, its cleanup by
 * DISPOSE_MS, its end after SIGKILL by KILL_MS; a call that ends early (its timeout, the caller's
 * abort) is cancelled in the worker, which must then answer a ping within PING_MS or be ended.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { messageOf, YokeError, type CallContext, type ProgressEvent, type ToolOutput } from 'yoke'

export interface WorkerLimits {
  initTimeoutMs: number
  maxOldGenerationSizeMb: number
  /** tools one running version may have registered at once */
  maxToolsPerPlugin: number
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
  /** the worker ended without being asked to (a crash, a memory limit, a stuck call, a limit) */
  died(reason: string): void
}

const PING_MS = 1_000
/** One message from the worker (a result, a log line, a tool's shape), at most. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024
/** In any one second, at most this much and this many messages: a flood ends the worker. */
export const MAX_BYTES_PER_SECOND = 64 * 1024 * 1024
export const MAX_MESSAGES_PER_SECOND = 5_000
/** its cleanup, after which it is killed */
const DISPOSE_MS = 2_000
/** its end after SIGKILL (a process in uninterruptible sleep can take longer: it is then reported) */
const KILL_MS = 2_000
/** messages are handled in slices of at most this long, then the event loop runs */
const SLICE_MS = 8
const WORKER = new URL('./worker.mjs', import.meta.url)

type Message = Record<string, unknown> & { type: string }

/** Every worker process alive, so that yoke's exit (process.exit included) kills their groups. */
const live = new Set<ChildProcess>()
const killGroup = (child: ChildProcess) => {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, 'SIGKILL')
  } catch {
    // the group is gone already
  }
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}
let exitHook = false

export class WorkerHost {
  readonly #child: ChildProcess
  readonly #exited: Promise<void>
  readonly #calls = new Map<
    number,
    { resolve(v: unknown): void; reject(e: Error): void; progress(e: ProgressEvent): void }
  >()
  readonly #pings = new Map<number, () => void>()
  readonly #inbox: Message[] = []
  readonly #tools = new Set<string>()
  #draining = false
  /** when this turn of the event loop began handling messages */
  #turn: number | undefined
  #seq = 0
  #window = { start: 0, bytes: 0, messages: 0 }
  #ending = false
  #stopped?: Promise<void>
  #ready: Promise<void>
  #settle!: { resolve(): void; reject(e: Error): void }
  #disposed?: () => void

  constructor(
    /** the version's id (`repo:<name>@<n>`), for messages */
    readonly id: string,
    module: { code: string; key: string; config: unknown; inject: readonly string[] },
    readonly limits: WorkerLimits,
    readonly events: HostEvents,
  ) {
    this.#ready = new Promise<void>((resolve, reject) => (this.#settle = { resolve, reject }))
    this.#ready.catch(() => {})
    this.#child = fork(WORKER, [], {
      execArgv: [`--max-old-space-size=${limits.maxOldGenerationSizeMb}`],
      env: {},
      serialization: 'json',
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      detached: true, // a process group of its own: ending it ends what it started
    })
    live.add(this.#child)
    if (!exitHook) {
      exitHook = true
      process.on('exit', () => live.forEach(killGroup))
    }
    this.#exited = new Promise((resolve) =>
      this.#child.once('exit', (code, signal) => {
        live.delete(this.#child)
        killGroup(this.#child) // what it started and left in its group
        this.#end(`its worker exited (${signal ?? `code ${code}`})`)
        resolve()
      }),
    )
    this.#child.on('error', (err) => this.#end(`its worker process failed: ${err.message}`))
    this.#child.on('message', (m: Message) => this.#receive(m))
    for (const [stream, level] of [
      [this.#child.stdout, 'info'],
      [this.#child.stderr, 'warn'],
    ] as const) {
      stream?.setEncoding('utf8')
      stream?.on('data', (text: string) => this.#receive({ type: 'log', level, message: text }))
    }
    this.#send({ type: 'init', ...module, maxTools: limits.maxToolsPerPlugin })
  }

  /** Resolves when apply has finished; rejects (and ends the worker) past initTimeoutMs. */
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
      this.#send({ type: 'call', id, tool, args })
      ctx.onEnd(() => {
        if (!this.#calls.delete(id) || this.#ending) return
        this.#send({ type: 'cancel', id })
        void this.#checkAlive(tool)
      })
    })
  }

  /**
   * Asks the worker to clean up (its apply's cleanup) for at most DISPOSE_MS, then kills its
   * process group. Bounded whatever the worker does; calls in flight fail.
   */
  terminate(): Promise<void> {
    this.#ending = true
    this.#stopped ??= (async () => {
      if (this.#child.connected && this.#alive()) {
        const disposed = new Promise<void>((resolve) => (this.#disposed = resolve))
        this.#send({ type: 'dispose' })
        await within(Promise.race([disposed, this.#exited]), DISPOSE_MS)
      }
      await this.#kill()
      this.#failCalls('the plugin was stopped')
    })()
    return this.#stopped
  }

  #alive() {
    return this.#child.exitCode === null && this.#child.signalCode === null
  }

  /** SIGKILL to its group, and a bounded wait for its end: one that does not end is reported. */
  async #kill() {
    killGroup(this.#child)
    if (!(await within(this.#exited, KILL_MS)))
      this.events.log(
        'error',
        `its worker process ${this.#child.pid} did not end within ${KILL_MS} ms of SIGKILL (uninterruptible sleep?); it is left behind`,
      )
  }

  #send(message: Message) {
    if (!this.#child.connected) return
    try {
      this.#child.send(
        message,
        (err) => err && this.#end(`it could not be reached: ${err.message}`),
      )
    } catch (err) {
      this.#end(`it could not be reached: ${messageOf(err)}`)
    }
  }

  async #checkAlive(tool: string) {
    const id = ++this.#seq
    const answered = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), PING_MS)
      this.#pings.set(id, () => (clearTimeout(timer), resolve(true)))
      this.#send({ type: 'ping', id })
    })
    this.#pings.delete(id)
    if (answered || this.#ending) return
    this.#end(
      `a call of ${tool} ended early and the worker did not answer within ${PING_MS} ms (a loop that never yields?): it was terminated`,
    )
  }

  /**
   * Counts what the worker sends. Its heap limit does not cover what it sends the host: one
   * message too large, or a flood, ends it before the host holds much more.
   */
  #withinLimits(m: Message): boolean {
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
    this.#end(`${over}: its worker was terminated`)
    return false
  }

  /**
   * Counted at once, handled in order: at once while this turn of the event loop has spent less
   * than SLICE_MS on them, else queued and handled a slice per turn (a burst of registrations).
   */
  #receive(m: Message) {
    // while it ends, only its cleanup's word and its end are heard (not new tools, not results)
    if ((this.#ending && m.type !== 'disposed' && m.type !== 'log') || !this.#withinLimits(m))
      return
    if (m.type === 'fatal') return this.#end(`it threw outside a call: ${m.message}`)
    if (m.type === 'register' && !this.#countTool(m)) return
    if (m.type === 'unregister') this.#tools.delete(String(m.name))
    const now = performance.now()
    if (this.#turn === undefined) {
      this.#turn = now
      setImmediate(() => (this.#turn = undefined))
    }
    if (!this.#draining && now - this.#turn < SLICE_MS) return this.#handle(m)
    this.#inbox.push(m)
    if (!this.#draining) {
      this.#draining = true
      setImmediate(() => this.#drain())
    }
  }

  #drain() {
    const until = performance.now() + SLICE_MS
    while (this.#inbox.length && performance.now() < until) this.#handle(this.#inbox.shift()!)
    if (this.#inbox.length) setImmediate(() => this.#drain())
    else this.#draining = false
  }

  /** One more live tool, unless that passes maxToolsPerPlugin: then the worker ends. */
  #countTool(m: Message): boolean {
    const name = String((m.tool as RemoteTool | undefined)?.name)
    if (this.#tools.has(name) || this.#tools.size < this.limits.maxToolsPerPlugin) {
      this.#tools.add(name)
      return true
    }
    this.#end(
      new YokeError('REPOSITORY_TOO_MANY_TOOLS', {
        id: this.id,
        max: this.limits.maxToolsPerPlugin,
      }),
    )
    return false
  }

  #handle(m: Message) {
    const call = typeof m.id === 'number' ? this.#calls.get(m.id) : undefined
    switch (m.type) {
      case 'ready':
        return this.#settle.resolve()
      case 'init-failed':
        return this.#settle.reject(
          m.code === 'REPOSITORY_TOO_MANY_TOOLS'
            ? new YokeError('REPOSITORY_TOO_MANY_TOOLS', {
                id: this.id,
                max: this.limits.maxToolsPerPlugin,
              })
            : new Error(`its apply failed: ${m.message}`),
        )
      case 'register':
        return this.#ending ? undefined : this.events.register(m.tool as RemoteTool)
      case 'unregister':
        return this.events.unregister(String(m.name))
      case 'log':
        return this.events.log(m.level as 'info', String(m.message).trimEnd())
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

  /** It ended, or must: the start and every call waiting on it fail with `reason`; it is killed. */
  #end(reason: string | Error) {
    const error = typeof reason === 'string' ? new Error(reason) : reason
    this.#settle.reject(error)
    if (this.#ending) return
    this.#ending = true
    this.#inbox.length = 0
    this.#failCalls(error.message)
    void this.#kill()
    this.events.died(error.message)
  }

  #failCalls(reason: string) {
    for (const call of this.#calls.values()) call.reject(new Error(reason))
    this.#calls.clear()
  }
}

/** True when `p` settled within `ms`. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, ms, false)))
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      late,
    ])
  } finally {
    clearTimeout(timer)
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
