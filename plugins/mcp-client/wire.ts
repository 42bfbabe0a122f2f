/**
 * The wire between the SDK's Client and a transport (yoke's ProcessTransport, the SDK's HTTP
 * ones). Two things the Client cannot do itself pass through here:
 *
 * - A lenient tools/list. The v2 Client refuses a whole page when one entry does not match MCP's
 *   Tool shape, in both eras (an explicit result schema does not help on 2026-07-28); here each
 *   entry is checked on its own and only the bad ones are taken out, with what was wrong put in
 *   the result's `_meta` (`LISTING_META`) for the tool sync to report.
 * - Tasks on 2026-07-28 (the `io.modelcontextprotocol/tasks` extension): a server may answer a
 *   tools/call with `resultType: 'task'`, which the Client refuses. The wire keeps that answer
 *   from it, has the task driven to its end (`tasks`: tasks.ts, on ext-tasks), passes the task's
 *   status on as the call's progress (which also keeps the Client's callMs from running out),
 *   and then answers the Client's request with the task's result. The Client cancelling the
 *   request (its notifications/cancelled, or the abort of an HTTP request's stream) cancels the
 *   task. The driver's own `tasks/*` requests go out raw (`request`), with ids the Client never
 *   sees: they are not methods of the 2026 era to it.
 *
 * - A bound on nesting, checked without recursion before anything parses a message: the SDK's
 *   schemas (zod) and yoke's own walks recurse, and a peer's 10 MB of brackets would overflow the
 *   stack outside any try. A tools/list entry deeper than `TOOL_DEPTH` is taken out like a
 *   malformed one; any other message deeper than `MESSAGE_DEPTH` is refused (an answer becomes
 *   an error for its request, a request from the server is answered with one, a notification is
 *   dropped), each reported.
 *
 * - The server's protocol transcript (`recorder`, transcript.ts): every message both ways is kept
 *   there by reference as it passes (stdio tells its size), masked and cut only when it is read.
 *
 * A stdio transport stays recognisable as one (`stderr`, `pid`): the SDK then probes the era in
 * place and reads a silent server as a 2025 one.
 */
import { ToolSchema } from '@modelcontextprotocol/core'
import type {
  JSONRPCMessage,
  MessageExtraInfo,
  Transport,
  TransportSendOptions,
} from '@modelcontextprotocol/client'
import { messageOf, nestsDeeper } from 'yoke'
import { ProcessTransport } from './stdio.ts'
import type { Recorder } from './transcript.ts'

/**
 * The deepest a tools/list entry may nest (JSON levels, the entry itself being 1): its input schema
 * may nest 10 (the runtime's limit), so this only spares the parsers the absurd.
 */
export const TOOL_DEPTH = 64
/** The deepest any other message from a server may nest: far past real data, far below a stack. */
export const MESSAGE_DEPTH = 256

/** A message from the server the wire refused to read (too deep): worth a warning, not a debug line. */
export class RefusedMessage extends Error {}

/** Where the wire tells the tool sync what it took out of a tools/list page. */
export const LISTING_META = 'dev.yoke/listing'

export interface ListingIssues {
  /** entries that do not match MCP's Tool shape: their label, their name when it is a string, and why */
  malformed: Array<{ label: string; name?: string; why: string }>
  /** what else was wrong with the page (a nextCursor that is not a string) */
  notes: string[]
  /** the page had no tools array at all */
  notList?: boolean
}

export type RawResponse =
  | { kind: 'result'; result: Record<string, unknown> }
  | { kind: 'error'; error: { code: number; message: string; data?: unknown } }

interface Pending {
  resolve(response: RawResponse): void
  reject(err: Error): void
}

/** Drives a task to its end: the final answer to the tools/call that created it. */
export type TaskDriver = (
  created: Record<string, unknown>,
  progress: (message: string) => void,
  signal: AbortSignal,
) => Promise<RawResponse>

/** A tools/call of the Client in flight, while tasks may come of it. */
interface Call {
  token?: string | number
  requestSignal?: AbortSignal
  /** set once the answer was a task: aborting it cancels the task */
  task?: AbortController
}

type Id = string | number

export class Wire implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void
  /** ids of tools/list requests in flight */
  readonly #lists = new Set<Id>()
  /** the Client's tools/call requests in flight (only while `tasks` is set) */
  readonly #calls = new Map<Id, Call>()
  /** set on a 2026-07-28 connection to a server with the tasks extension */
  tasks?: TaskDriver
  readonly #raw = new Map<string, Pending>()
  #next = 0
  #closed = false
  /** the era probe went out and was never answered (a server that ignores unknown requests) */
  probeUnanswered = false
  #probe?: Id

  /** the stdio transport under the wire, which tells the transcript the size of what passes */
  readonly #stdio?: ProcessTransport

  /** `recorder`: the server's transcript, which keeps every message both ways (transcript.ts) */
  constructor(
    readonly inner: Transport,
    readonly recorder?: Recorder,
  ) {
    inner.onmessage = (message, extra) => this.#receive(message, extra)
    inner.onclose = () => {
      this.#closed = true
      for (const call of this.#calls.values()) call.task?.abort()
      this.#calls.clear()
      for (const [id, pending] of this.#raw) {
        this.#raw.delete(id)
        pending.reject(new Error('the connection closed'))
      }
      this.onclose?.()
    }
    inner.onerror = (err) => this.onerror?.(err)
    if (inner instanceof ProcessTransport) {
      this.#stdio = inner
      if (recorder) inner.onjunk = (line) => recorder.junk(line)
      Object.defineProperties(this, {
        stderr: { get: () => inner.stderr, enumerable: true },
        pid: { get: () => inner.pid, enumerable: true },
      })
    }
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId
  }

  get hasPerRequestStream(): boolean | undefined {
    return this.inner.hasPerRequestStream
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version)
  }

  setSupportedProtocolVersions(versions: string[]): void {
    this.inner.setSupportedProtocolVersions?.(versions)
  }

  start(): Promise<void> {
    return this.inner.start()
  }

  close(): Promise<void> {
    return this.inner.close()
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if ('method' in message && 'id' in message) {
      if (message.method === 'tools/list') this.#lists.add(message.id)
      else if (message.method === 'tools/call' && this.tasks) {
        const meta = message.params?._meta as { progressToken?: string | number } | undefined
        this.#calls.set(message.id, {
          token: meta?.progressToken,
          requestSignal: options?.requestSignal,
        })
      } else if (message.method === 'server/discover' && this.#probe === undefined) {
        this.#probe = message.id
        this.probeUnanswered = true
      }
    } else if ('method' in message && message.method === 'notifications/cancelled') {
      const id = (message.params as { requestId?: Id } | undefined)?.requestId
      if (id !== undefined) this.#calls.get(id)?.task?.abort()
    }
    return this.#send(message, options)
  }

  /** Sends on the transport, into the transcript too (a reference, sized by stdio when it can). */
  #send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const sending = this.inner.send(message, options)
    this.recorder?.sent(message, this.#stdio?.sentChars)
    return sending
  }

  /**
   * Sends a request the Client does not know about and resolves with its answer. `signal` gives
   * up on it (over Streamable HTTP it also closes the request's stream); `ms` bounds the wait.
   */
  request(
    request: { method: string; params?: Record<string, unknown> },
    options: { signal?: AbortSignal; ms: number; headers?: Record<string, string> },
  ): Promise<RawResponse> {
    if (this.#closed) return Promise.reject(new Error('the connection closed'))
    const id = `yoke-raw-${++this.#next}`
    const { signal, ms, headers } = options
    return new Promise<RawResponse>((resolve, reject) => {
      const end = () => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        this.#raw.delete(id)
      }
      const onAbort = () => {
        end()
        reject(signal!.reason instanceof Error ? signal!.reason : new Error(String(signal!.reason)))
      }
      const timer = setTimeout(() => {
        end()
        reject(new Error(`no answer to ${request.method} within ${ms} ms`))
      }, ms)
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#raw.set(id, {
        resolve: (r) => (end(), resolve(r)),
        reject: (e) => (end(), reject(e)),
      })
      const message = { jsonrpc: '2.0' as const, id, ...request } as JSONRPCMessage
      this.#send(message, { requestSignal: signal, headers }).catch((err) => {
        end()
        reject(err instanceof Error ? err : new Error(String(err)))
      })
    })
  }

  #receive(message: JSONRPCMessage, extra?: MessageExtraInfo) {
    this.recorder?.received(message, this.#stdio?.readChars)
    const isList = !('method' in message) && 'id' in message && this.#lists.has(message.id as Id)
    // a tools/list page is bounded entry by entry (lenientPage): a deep tool costs that tool only
    const bounded = isList && 'result' in message ? withoutTools(message) : message
    if (nestsDeeper(bounded, MESSAGE_DEPTH)) return this.#tooDeep(message, extra)
    if (!('method' in message) && 'id' in message) {
      const id = message.id as Id
      if (id === this.#probe) this.probeUnanswered = false
      const raw = typeof id === 'string' ? this.#raw.get(id) : undefined
      if (raw) {
        if ('error' in message) raw.resolve({ kind: 'error', error: message.error })
        else raw.resolve({ kind: 'result', result: message.result as Record<string, unknown> })
        return
      }
      if (this.#lists.delete(id) && 'result' in message)
        message = { ...message, result: lenientPage(message.result as Record<string, unknown>) }
      const call = this.#calls.get(id)
      if (call) {
        const result = 'result' in message ? (message.result as Record<string, unknown>) : undefined
        if (result?.resultType === 'task' && this.tasks) return this.#drive(id, call, result, extra)
        this.#calls.delete(id)
      }
      // the Client handles a notification a microtask later and a response at once: a response
      // read in one chunk with the progress before it would overtake it (and that progress be lost)
      const deliver = message
      return queueMicrotask(() => this.onmessage?.(deliver, extra))
    }
    this.onmessage?.(message, extra)
  }

  /** A message nested past MESSAGE_DEPTH: never parsed; what waits for it is told why. */
  #tooDeep(message: JSONRPCMessage, extra?: MessageExtraInfo) {
    const why = `nests deeper than ${MESSAGE_DEPTH} levels; yoke does not read it`
    if ('method' in message) {
      this.onerror?.(new RefusedMessage(`the server sent a ${message.method} that ${why}`))
      if ('id' in message)
        void this.#send({
          jsonrpc: '2.0',
          id: message.id,
          error: { code: -32600, message: `the request ${why}` },
        } as JSONRPCMessage).catch(() => {})
      return
    }
    const error = { code: -32603, message: `the server's answer ${why}` }
    if (!('id' in message)) return // an error answer without an id: nothing waits for it
    const id = message.id as Id
    this.#lists.delete(id)
    this.#calls.delete(id)
    const raw = typeof id === 'string' ? this.#raw.get(id) : undefined
    if (raw) return raw.resolve({ kind: 'error', error })
    this.onmessage?.({ jsonrpc: '2.0', id, error } as JSONRPCMessage, extra)
  }

  /** A tools/call answered with a task: its end becomes the answer, its status the progress. */
  #drive(id: Id, call: Call, created: Record<string, unknown>, extra?: MessageExtraInfo) {
    const task = (call.task = new AbortController())
    call.requestSignal?.addEventListener('abort', () => task.abort(), { once: true })
    let step = 0
    const progress = (message: string) => {
      if (call.token === undefined || task.signal.aborted) return
      const params = { progressToken: call.token, progress: ++step, message }
      this.onmessage?.({ jsonrpc: '2.0', method: 'notifications/progress', params }, extra)
    }
    const answer = (response: RawResponse) => {
      this.#calls.delete(id)
      if (task.signal.aborted) return // the Client gave up on it; the task was cancelled
      const message =
        response.kind === 'result'
          ? { jsonrpc: '2.0' as const, id, result: response.result }
          : { jsonrpc: '2.0' as const, id, error: response.error }
      this.onmessage?.(message as JSONRPCMessage, extra)
    }
    this.tasks!(created, progress, task.signal).then(answer, (err: Error) =>
      answer({ kind: 'error', error: { code: -32603, message: messageOf(err) } }),
    )
  }
}

/** A tools/list page with the entries that do not match MCP's Tool shape taken out, and why. */
export function lenientPage(page: Record<string, unknown>): Record<string, unknown> {
  const issues: ListingIssues = { malformed: [], notes: [] }
  const fixed: Record<string, unknown> = { ...page }
  if (!Array.isArray(page.tools)) {
    issues.notList = true
    fixed.tools = []
  } else {
    const good: unknown[] = []
    page.tools.forEach((entry: unknown, index) => {
      const label = labelOf(entry, index)
      const raw = (entry as { name?: unknown } | null)?.name
      const name = typeof raw === 'string' && raw ? { name: raw } : {}
      if (nestsDeeper(entry, TOOL_DEPTH)) {
        const why = `its definition is nested deeper than ${TOOL_DEPTH} levels (a tool's input schema may nest 10); it was not read`
        issues.malformed.push({ label, ...name, why })
        return
      }
      const checked = ToolSchema.safeParse(entry)
      if (checked.success) good.push(entry)
      else issues.malformed.push({ label, ...name, why: whyMalformed(checked.error) })
    })
    fixed.tools = good
  }
  if (page.nextCursor !== undefined && typeof page.nextCursor !== 'string') {
    issues.notes.push(
      'tools/list gave a nextCursor that is not a string; the pages after it are left out',
    )
    delete fixed.nextCursor
  }
  const meta = typeof page._meta === 'object' && page._meta !== null ? page._meta : {}
  fixed._meta = { ...meta, [LISTING_META]: issues }
  return fixed
}

/** A tools/list answer with its entries left out (they are bounded one by one). */
function withoutTools(message: JSONRPCMessage): unknown {
  const result = (message as { result?: unknown }).result
  if (typeof result !== 'object' || result === null) return message
  return { ...message, result: { ...result, tools: undefined } }
}

/** How one malformed entry is named in a warning: its name when it has one, else its place. */
function labelOf(entry: unknown, index: number): string {
  const name = (entry as { name?: unknown } | null)?.name
  if (typeof name === 'string' && name) return JSON.stringify(name.slice(0, 100))
  // a name that is an object or array is named by its kind: stringifying it could overflow the stack
  const shown =
    name === undefined
      ? 'no name'
      : typeof name === 'object' && name !== null
        ? `name ${Array.isArray(name) ? 'an array' : 'an object'}`
        : `name ${JSON.stringify(name)?.slice(0, 60)}`
  return `#${index + 1} of tools/list (${shown})`
}

/** What the Tool schema says about an entry, briefly: `inputSchema: expected object, received undefined`. */
function whyMalformed(error: { issues: Array<{ path: PropertyKey[]; message: string }> }): string {
  const issues = error.issues.slice(0, 3).map((i) => {
    const at = i.path.map(String).join('.')
    return `${at ? `${at}: ` : ''}${i.message.replace(/^Invalid input: /, '')}`
  })
  const more = error.issues.length > 3 ? ` (and ${error.issues.length - 3} more)` : ''
  return `it does not match MCP's Tool shape (${issues.join('; ')}${more})`
}
