/**
 * The stdio transport, written for what the SDK's StdioClientTransport leaves out: the server runs
 * in a process group of its own so closing kills its whole tree (a server started through `npx`
 * is a grandchild), the environment is scrubbed, a message may be as large as configured (the
 * SDK caps it at 10 MiB and re-concatenates its buffer on every chunk), and the last lines of
 * stderr are kept to explain a failure. A protocol error (a message over the cap, a line that is not
 * JSON-RPC once the server has spoken) ends the connection at once, with `fatal` saying why.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  serializeMessage,
  type JSONRPCMessage,
  type Transport,
} from '@modelcontextprotocol/client'
import { settledWithin } from 'yoke'
import { BLOCKED_ENV } from './config.ts'

export interface ProcessOptions {
  command: string
  args: string[]
  env: Record<string, string>
  cwd?: string
  maxMessageBytes: number
  /** how long a server gets to exit after its stdin closes (default 500), and after SIGTERM (4 ×) */
  graceMs?: number
}

/** What every server gets from our environment (the SDK's safe defaults); the entry adds the rest. */
const INHERITED = ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER', 'LANG', 'TZ', 'TMPDIR']

export function serverEnv(
  extra: Record<string, string>,
  from: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {}
  for (const name of INHERITED)
    if (from[name] !== undefined && !from[name]!.startsWith('()')) env[name] = from[name]!
  for (const [name, value] of Object.entries(extra))
    if (!BLOCKED_ENV.has(name.toUpperCase())) env[name] = value
  return env
}

/** An error's headline: `Error: …`, `TypeError [CODE]: …`, Python's `ValueError: …`, a Go panic. */
const ERROR_LINE = /^\s*(Uncaught\s+)?([\w.$]*(Error|Exception)(\s*\[[^\]]*\])?|panic|fatal error):/
/** What follows it: stack frames, the error's properties, a caret, Node's `Node.js v20.x` banner. */
const TRAILER = /^(Node\.js v\d|\s+at\s|\s*[{}^]+\s*$|\s+[\w$]+: .*$)/

/**
 * The stderr line that says why a server failed: the last error headline, else the last line that
 * is not a stack frame or a banner (the very last line of a Node crash is its version).
 */
export function tellingLine(lines: readonly string[]): string | undefined {
  const line = lines.findLast((l) => ERROR_LINE.test(l)) ?? lines.findLast((l) => !TRAILER.test(l))
  return (line ?? lines.at(-1))?.trim()
}

export class ProcessTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  /** the last lines the server wrote to stderr */
  readonly stderr: string[] = []
  exit?: { code: number | null; signal: string | null }
  /** why yoke ended the connection itself (a message over the cap, a line that is not JSON-RPC) */
  fatal?: string
  /** a line the server wrote that is not JSON-RPC (the wire's transcript shows it) */
  onjunk?: (line: string) => void
  /** the length of the last message sent, as written (unset when it was not written) */
  sentChars?: number
  /** the length of the line of the message being delivered */
  readChars?: number
  /** the server has sent one JSON-RPC message: from then on a line that is not one is a protocol error */
  #spoken = false
  #child?: ChildProcess
  #exited?: Promise<void>
  #pending: Buffer[] = []
  #pendingBytes = 0
  #closed = false
  #corked = false
  #drain?: Promise<void>
  #closing?: Promise<void>

  constructor(readonly options: ProcessOptions) {}

  get pid(): number | undefined {
    return this.#child?.pid
  }

  async start(): Promise<void> {
    const { command, args, env, cwd } = this.options
    const child = spawn(command, args, {
      env,
      cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
      shell: false,
      windowsHide: true,
    })
    this.#child = child
    // the server's end is its exit: a grandchild that inherited stdout must not keep it "open"
    this.#exited = new Promise((resolve) => {
      child.once('close', resolve)
      child.once('exit', () =>
        setTimeout(() => {
          child.stdout!.destroy()
          child.stderr!.destroy()
          resolve()
        }, 100).unref(),
      )
    })
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', reject)
    })
    child.on('error', (err) => this.onerror?.(err))
    child.once('exit', (code, signal) => (this.exit = { code, signal }))
    void this.#exited.then(() => this.#ended())
    child.stdin!.on('error', (err) => this.onerror?.(err)) // EPIPE when the server died
    child.stdout!.on('data', (chunk: Buffer) => this.#read(chunk))
    let partial = ''
    child.stderr!.setEncoding('utf8').on('data', (text: string) => {
      const lines = (partial + text).split('\n')
      partial = lines.pop()!.slice(-500)
      for (const line of lines) if (line.trim()) this.stderr.push(line.slice(0, 500))
      // enough for a Node crash: the error line, ten stack frames, its properties and the banner
      this.stderr.splice(0, this.stderr.length - 40)
    })
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin
    this.sentChars = undefined
    if (!stdin?.writable) return Promise.reject(new Error('the server process is not running'))
    // messages sent in one tick leave in one write: fewer syscalls and wake-ups under load
    if (!this.#corked) {
      this.#corked = true
      stdin.cork()
      process.nextTick(() => {
        this.#corked = false
        stdin.uncork()
      })
    }
    const line = serializeMessage(message)
    this.sentChars = line.length
    if (stdin.write(line)) return Promise.resolve()
    // one wait for the pipe to drain, shared by every send that filled it; a dead server ends it too
    return (this.#drain ??= new Promise<void>((resolve) => {
      const done = () => {
        stdin.off('drain', done).off('close', done)
        this.#drain = undefined
        resolve()
      }
      stdin.on('drain', done).on('close', done)
    }))
  }

  /**
   * Ends stdin, then SIGTERM and SIGKILL to the whole process group, each after a grace period.
   * It runs even when the server already exited on its own: what it started in its group goes too.
   */
  close(): Promise<void> {
    if (!this.#child) {
      this.#ended()
      return Promise.resolve()
    }
    return (this.#closing ??= this.#stop(this.#child))
  }

  async #stop(child: ChildProcess): Promise<void> {
    // a well-behaved server exits when its input ends; many keep timers alive and need SIGTERM
    const grace = this.options.graceMs ?? 500
    child.stdin!.end()
    if (
      child.exitCode === null &&
      child.signalCode === null &&
      !(await settledWithin(this.#exited!, grace))
    ) {
      killGroup(child.pid!, 'SIGTERM')
      if (!(await settledWithin(this.#exited!, grace * 4))) killGroup(child.pid!, 'SIGKILL')
    }
    await settledWithin(this.#exited!, grace * 4)
    // what the server left behind in its group (a wrapper's child): SIGTERM, then SIGKILL if it stays
    if (killGroup(child.pid!, 'SIGTERM') && !(await groupGone(child.pid!, grace * 4))) {
      killGroup(child.pid!, 'SIGKILL')
      await groupGone(child.pid!, 1000)
    }
    this.#ended()
  }

  /** Splits stdout into lines; only a complete line is parsed, and no line may outgrow the cap. */
  #read(chunk: Buffer) {
    let start = 0
    let end = chunk.indexOf(10)
    while (end !== -1) {
      const piece = chunk.subarray(start, end)
      const line = this.#pending.length
        ? Buffer.concat([...this.#pending, piece]).toString('utf8')
        : piece.toString('utf8')
      this.#pending = []
      this.#pendingBytes = 0
      this.#deliver(line)
      start = end + 1
      end = chunk.indexOf(10, start)
    }
    if (start < chunk.length) {
      this.#pending.push(chunk.subarray(start))
      this.#pendingBytes += chunk.length - start
      if (this.#pendingBytes > this.options.maxMessageBytes) {
        this.#pending = []
        const cap = this.options.maxMessageBytes
        this.#fail(
          `the server sent a message over ${cap} bytes (${mib(cap)}, maxMessageBytes); raise maxMessageBytes in its entry (up to 512 MiB) to accept larger ones`,
        )
      }
    }
  }

  /**
   * A protocol error: the requests in flight fail at once (the SDK rejects them on close) with
   * `why`, and the process is ended; the supervisor starts it again.
   */
  #fail(why: string) {
    if (this.fatal || this.#closed) return
    this.fatal = why
    // nothing more is read from a stream out of step (what the server still writes is discarded)
    this.#child?.stdout?.removeAllListeners('data').resume()
    this.#ended()
    this.onerror?.(new Error(`${why}; closing the connection`))
    void this.close()
  }

  /**
   * One line of stdout. Before the server's first JSON-RPC message a line that is not one is a
   * banner (some servers print one) and is only reported; after it, it is a protocol error (a
   * response may be lost in it): the connection fails at once and the server is restarted.
   */
  #deliver(line: string) {
    if (this.fatal || !line.trim()) return
    let message: unknown
    try {
      message = JSON.parse(line.endsWith('\r') ? line.slice(0, -1) : line)
    } catch {
      message = undefined
    }
    if (!isMessage(message)) {
      this.onjunk?.(line)
      const what = `the server wrote a line that is not JSON-RPC: ${JSON.stringify(line.slice(0, 120))}`
      if (this.#spoken) this.#fail(what)
      else this.onerror?.(new Error(`${what} (before its first message: skipped)`))
      return
    }
    this.#spoken = true
    this.readChars = line.length
    this.onmessage?.(message as JSONRPCMessage)
  }

  #ended() {
    if (this.#closed) return
    this.#closed = true
    this.onclose?.()
  }
}

/**
 * Whether a parsed line is a JSON-RPC message: exactly what the SDK's `deserializeMessage` accepts
 * (its union of the four strict message schemas), tried on the one schema it can match. The union
 * tries them in turn, two failing parses before a response matches; and the Client classifies
 * the message again itself. The keys decide: the schemas are strict, so a message with `method`
 * is a request (with `id`) or a notification (without), one without is a result (with `result`)
 * or an error. The message goes on as it was read: the SDK parses what it keeps (a result by its
 * method's schema) when it handles it.
 */
function isMessage(m: unknown): boolean {
  if (typeof m !== 'object' || m === null) return false
  if ('method' in m) return 'id' in m ? isJSONRPCRequest(m) : isJSONRPCNotification(m)
  return 'result' in m ? isJSONRPCResultResponse(m) : isJSONRPCErrorResponse(m)
}

const mib = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 100) / 100} MiB`

/** Polls until no process of the group is left (true), or `ms` pass (false). */
async function groupGone(pid: number, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 50) {
    if (!killGroup(pid, 0)) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return !killGroup(pid, 0)
}

/** Signals the process group led by `pid`; false when no process of it is left. */
function killGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal)
    return true
  } catch {
    return false
  }
}
