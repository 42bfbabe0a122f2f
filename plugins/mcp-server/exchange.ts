/**
 * One tools/call from an MCP client through the runtime's pipeline, as caller
 * `mcp:<view>:<connection>#<n>`. The call carries its exchange's asker (CallOptions.asker, which
 * nested calls inherit), so the runtime puts its questions to the client that made it: an
 * approval (the policy's `ask`), and an upstream server's own elicitation about it (through the
 * `mcp` hub and the approval service, which ask the call's asker first). A 2025-era call is one request: its
 * cancellation aborts the call, and a question is pushed to the client as an elicitation. A
 * 2026-07-28 call may take several rounds: a question ends the round (`input_required`), the
 * pipeline call waits, and the client's retry carries the answer and waits for what comes next
 * (the result, or another question). A call served as a task has no rounds: its question shows in
 * the task (`input_required`), and tasks/update answers it.
 *
 * A call waiting for a retry holds its arguments and a pipeline call while no request of the
 * client is open, so they are bounded: at most `maxWaitingCalls` such calls (and
 * `maxWaitingCallsPerView` in one view) wait at once, a question past that is not asked (the call
 * is refused, saying why), and each waits `answerMs` at most, then the call ends and everything it
 * held goes. What an ended call came to is kept a while, so a late retry hears what happened.
 */
import { randomUUID } from 'node:crypto'
import {
  inputRequired,
  type ElicitResult,
  type InputRequest,
  type InputResponseView,
} from '@modelcontextprotocol/server'
import {
  messageOf,
  type ApprovalAnswer,
  type ApprovalRequest,
  type Asker,
  type ProgressEvent,
  type Question as YokeQuestion,
  type QuestionAnswer,
  type ScopeHandle,
  type ToolResult,
  type TraceContext,
} from 'yoke'
import { approvalMessage, approvalSchema, ASKER, cannotAsk, decisionOf } from './approval.ts'
import type { SessionGrants } from './grants.ts'

/** Who made the call, as a question needs to know: its name and what it can be asked. */
export interface Asked {
  name: string
  /** the elicitation modes it declared (a bare `elicitation: {}` is form) */
  modes: ReadonlySet<'form' | 'url'>
}

/** One request of the call: its cancellation, its progress token, its client. */
export interface Round {
  signal: AbortSignal
  client: Asked
  progress?: (event: ProgressEvent) => void
}

/** What the client is asked: a form (an approval has one field, `decision`), or a URL to open. */
export type Question =
  | { mode: 'form'; message: string; requestedSchema: Record<string, unknown> }
  | { mode: 'url'; message: string; url: string; elicitationId?: string }

export type Step =
  | { kind: 'result'; result: ToolResult }
  | { kind: 'ask'; inputRequests: Record<string, InputRequest> }

export interface ExchangeOptions {
  /** the MCP view the call was made in (the waiting calls are capped per view) */
  view: string
  scope: ScopeHandle
  /** `mcp:<view>:<connection>`: the connection that made the call (only it may continue it) */
  connection: string
  tool: string
  args: Record<string, unknown>
  /** the call runs in a scope of its own connection: "allow for this session" means something */
  session: boolean
  /** who asked first (a task has no rounds to tell) */
  client: Asked
  /** 2025 era: ask the client at once, on the request's own stream */
  push?: (question: Question, signal: AbortSignal) => Promise<ElicitResult>
  /**
   * 2025 era: the request's own signal. The call is that one request (its questions are pushed on
   * its stream), so the request's cancellation, or its connection's close, is the call's: it needs
   * no AbortController of its own, nor a listener on the request.
   */
  signal?: AbortSignal
  /** how long a question waits for the client's answer (a retry, or tasks/update) */
  answerMs: number
  /** served as a task: it waits in the task table (capped there), not among the waiting calls */
  task?: boolean
  /** the W3C trace context the client's request carried (CallOptions.trace) */
  trace?: TraceContext
  /** the session's "allow for this session" grants in the shared store, with replicas (grants.ts) */
  grants?: SessionGrants
}

/** Where an exchange checks in while it waits for an answer with no request of its client open. */
export interface WaitingRoom {
  /** undefined: it may wait; else why not (too many wait already) */
  enter(exchange: Exchange): string | undefined
  leave(exchange: Exchange): void
  /** the exchange was given its id (a retry's state names it): from now on it is found by it */
  named?(exchange: Exchange): void
}

interface Pending {
  key: string
  question: Question
  settle(answer: InputResponseView): void
}

/** A question as an embedded request of `input_required` (or of a task waiting for input). */
function embedded(question: Question): InputRequest {
  if (question.mode === 'url')
    return inputRequired.elicitUrl({ message: question.message, url: question.url })
  return inputRequired.elicit({
    mode: 'form',
    message: question.message,
    requestedSchema: question.requestedSchema as never,
  })
}

export class Exchange {
  readonly result: Promise<ToolResult>
  /** where progress goes now: the current round's token, or a task's status */
  progress?: (event: ProgressEvent) => void
  /** a question came (a task shows it) */
  onQuestion?: () => void
  #client: Asked
  readonly #pending = new Map<string, Pending>()
  #asked = 0
  /** the call's own cancellation; none for a one-request call (options.signal) */
  readonly #abort?: AbortController
  readonly #signal: AbortSignal
  readonly #wake = new Set<() => void>()
  /** a question went unanswered for answerMs: the call ended for that */
  expired = false
  #id?: string

  /**
   * Who the runtime asks about this call and the calls it makes: this exchange's client. An
   * approval is a form with one field (`decision`); a question from what the call reaches is
   * put to the client as it is (a form, or a URL to open).
   */
  readonly asker: Asker = {
    name: ASKER,
    ask: (request) => this.ask(request),
    answer: (question) => this.answerFor(question),
  }

  constructor(
    private readonly options: ExchangeOptions,
    /** the call's caller: its connection and a number (`mcp:<view>:<connection>#<n>`) */
    readonly caller: string,
    private readonly room?: WaitingRoom,
  ) {
    this.#client = options.client
    const signal = (this.#signal = options.signal ?? (this.#abort = new AbortController()).signal)
    // an async function: a call that throws at once is a rejected result, like any other failure
    this.result = (async () =>
      options.scope.call(options.tool, options.args, {
        signal,
        caller,
        asker: this.asker,
        onProgress: (event) => this.progress?.(event),
        trace: options.trace,
      }))()
  }

  /**
   * The call's id, made the first time it is asked for: only a call whose id went out (in a
   * 2026-07-28 retry's sealed state) can be named by a client, so only such a call is found by it,
   * and remembered after it ends.
   */
  get id(): string {
    if (this.#id === undefined) {
      this.#id = randomUUID()
      this.room?.named?.(this)
    }
    return this.#id
  }

  /** whether its id went out */
  get named(): boolean {
    return this.#id !== undefined
  }

  get connection(): string {
    return this.options.connection
  }

  get tool(): string {
    return this.options.tool
  }

  get view(): string {
    return this.options.view
  }

  get answerMs(): number {
    return this.options.answerMs
  }

  /** the questions waiting for an answer, as embedded requests by key; undefined when none */
  get inputRequests(): Record<string, InputRequest> | undefined {
    if (!this.#pending.size) return undefined
    return Object.fromEntries([...this.#pending.values()].map((p) => [p.key, embedded(p.question)]))
  }

  /**
   * Ends the call (ABORTED), whatever it waits for. A one-request call (options.signal) ends with
   * its request: when its client cancels it, or its connection closes.
   */
  abort(reason?: unknown): void {
    this.#abort?.abort(reason)
  }

  /**
   * Waits for what comes next for this round: the result, or questions for the client. The
   * round's cancellation aborts the call only while the round waits: a round that ends with a
   * question leaves the call waiting for the retry.
   */
  async next(round: Round): Promise<Step> {
    this.#client = round.client
    this.progress = round.progress
    const asking = () => {
      const inputRequests = this.inputRequests
      return inputRequests && ({ kind: 'ask', inputRequests } as const)
    }
    const now = asking()
    if (now) return now
    // a one-request call's signal is its round's already
    const { signal } = round
    const cancel = signal === this.#signal ? undefined : () => this.abort(signal.reason)
    if (cancel) {
      if (signal.aborted) cancel()
      signal.addEventListener('abort', cancel, { once: true })
    }
    let wake: (() => void) | undefined
    try {
      return await new Promise<Step>((resolve) => {
        wake = () => {
          const step = asking()
          if (step) resolve(step)
        }
        this.#wake.add(wake)
        this.result.then((result) => resolve({ kind: 'result', result }))
      })
    } finally {
      if (cancel) signal.removeEventListener('abort', cancel)
      this.#wake.delete(wake!)
      if (this.progress === round.progress) this.progress = undefined
    }
  }

  /** A retry's (or a task update's) answers; a question without one is asked again. */
  answer(view: (key: string) => InputResponseView): void {
    for (const pending of [...this.#pending.values()]) {
      const answer = view(pending.key)
      if (answer.kind !== 'missing') pending.settle(answer)
    }
  }

  /** An approval of this call or one it made: a form for the client (approval.ts). */
  async ask({ call, reason, signal }: ApprovalRequest): Promise<ApprovalAnswer> {
    const { grants } = this.options
    // granted for this session on another replica: the person said so already
    if (grants && (await grants.has(call))) return 'allow-session'
    if (!this.#client.modes.has('form')) throw cannotAsk(this.#client.name, call)
    const answer = await this.elicit(
      {
        mode: 'form',
        message: approvalMessage(call, reason),
        requestedSchema: approvalSchema(this.options.session),
      },
      signal,
    )
    const decision = decisionOf(answer, this.options.session)
    if (decision === 'allow-session') await grants?.add(call)
    return decision
  }

  /** A question from what the call reached (an upstream server's elicitation), put to the client. */
  async answerFor(question: YokeQuestion): Promise<QuestionAnswer> {
    const answer = await this.elicit(
      question.mode === 'url'
        ? {
            mode: 'url',
            message: question.message,
            url: question.url ?? '',
            ...(question.id && { elicitationId: question.id }),
          }
        : {
            mode: 'form',
            message: question.message,
            requestedSchema: question.schema ?? { type: 'object', properties: {} },
          },
      question.signal,
    )
    return answer as QuestionAnswer
  }

  /**
   * Puts a question to the client and resolves to its answer. A client that did not declare the
   * mode cannot be asked (an Error says so), nor can one more call wait when the waiting room is
   * full; a question not answered within answerMs ends the call (an Error says so).
   */
  async elicit(question: Question, signal: AbortSignal): Promise<ElicitResult> {
    const client = this.#client
    if (!client.modes.has(question.mode))
      throw new Error(
        `${client.name} cannot be asked: it did not declare ${question.mode === 'url' ? 'URL-mode ' : ''}elicitation`,
      )
    if (this.options.push) {
      try {
        return await this.options.push(question, signal)
      } catch (err) {
        if (signal.aborted) throw err
        throw new Error(`${client.name} did not answer: ${messageOf(err)}`, { cause: err })
      }
    }
    if (signal.aborted) throw signal.reason
    // the first open question makes this call one that waits with no request open: capped
    if (!this.#pending.size && !this.options.task) {
      const refused = this.room?.enter(this)
      if (refused) throw new Error(refused)
    }
    return new Promise<ElicitResult>((resolve, reject) => {
      const key = `q${++this.#asked}`
      const done = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', aborted)
        this.#pending.delete(key)
        if (!this.#pending.size) this.room?.leave(this)
      }
      const aborted = () => (done(), reject(signal.reason))
      const timer = setTimeout(() => {
        this.expired = true
        done()
        reject(
          new Error(
            `${client.name} did not answer within ${duration(this.options.answerMs)} (answerWaitMs)`,
          ),
        )
      }, this.options.answerMs)
      timer.unref?.()
      signal.addEventListener('abort', aborted, { once: true })
      this.#pending.set(key, {
        key,
        question,
        settle: (view) => {
          done()
          resolve(
            view.kind === 'elicit'
              ? { action: view.action, ...(view.content && { content: view.content as never }) }
              : { action: 'cancel' },
          )
        },
      })
      for (const wake of this.#wake) wake()
      this.onQuestion?.()
    })
  }
}

/** The limits on calls that wait for an answer with no request of their client open. */
export interface WaitLimits {
  total: number
  perView: number
}

/** how many ended calls are remembered for a late retry (and for how long: the state's life) */
const ENDED_KEPT = 1000

/** The calls in flight; those whose id went out (a retry's requestState names one), by id. */
export class Exchanges implements WaitingRoom {
  readonly #live = new Set<Exchange>()
  readonly #byId = new Map<string, Exchange>()
  /** the calls waiting for an answer with no request open, by view */
  readonly #waiting = new Map<string, Set<Exchange>>()
  #waitingCount = 0
  /** what ended calls came to, by id, oldest first (for a late retry) */
  readonly #ended = new Map<string, { at: number; what: string }>()
  #n = 0

  constructor(
    private readonly limits: WaitLimits = { total: Infinity, perView: Infinity },
    /** how long an ended call is remembered: as long as a retry's state is valid */
    private readonly rememberMs = 10 * 60_000,
  ) {}

  start(options: ExchangeOptions): Exchange {
    const exchange = new Exchange(options, `${options.connection}#${++this.#n}`, this)
    this.#live.add(exchange)
    const end = (result?: ToolResult) => {
      this.#live.delete(exchange)
      this.leave(exchange)
      // what it came to matters only to a client that can name it
      if (!exchange.named) return
      this.#byId.delete(exchange.id)
      this.#remember(exchange, result)
    }
    exchange.result.then(end, () => end())
    return exchange
  }

  named(exchange: Exchange): void {
    if (this.#live.has(exchange)) this.#byId.set(exchange.id, exchange)
  }

  byId(id: string): Exchange | undefined {
    return this.#byId.get(id)
  }

  /** What the call `id` came to, if it ended lately ("it was denied: …"). */
  endedAs(id: string): string | undefined {
    return this.#ended.get(id)?.what
  }

  get size(): number {
    return this.#live.size
  }

  /** the calls waiting for an answer with no request of their client open */
  get waiting(): number {
    return this.#waitingCount
  }

  enter(exchange: Exchange): string | undefined {
    let here = this.#waiting.get(exchange.view)
    if (here?.has(exchange)) return undefined
    const { total, perView } = this.limits
    if (this.#waitingCount >= total)
      return `too many MCP calls wait for an answer (${this.#waitingCount}, maxWaitingCalls ${total}): answer one, or wait until one expires (answerWaitMs), then call again`
    if ((here?.size ?? 0) >= perView)
      return `too many MCP calls in the view "${exchange.view}" wait for an answer (${here!.size}, maxWaitingCallsPerView ${perView}): answer one, or wait until one expires (answerWaitMs), then call again`
    if (!here) this.#waiting.set(exchange.view, (here = new Set()))
    here.add(exchange)
    this.#waitingCount++
    return undefined
  }

  leave(exchange: Exchange): void {
    const here = this.#waiting.get(exchange.view)
    if (!here?.delete(exchange)) return
    this.#waitingCount--
    if (!here.size) this.#waiting.delete(exchange.view)
  }

  /** Ends every call (the instance stops). */
  abortAll(reason: string): void {
    for (const exchange of this.#live) exchange.abort(new Error(reason))
  }

  #remember(exchange: Exchange, result: ToolResult | undefined) {
    const now = Date.now()
    for (const [id, { at }] of this.#ended) {
      if (this.#ended.size < ENDED_KEPT && now - at <= this.rememberMs) break
      this.#ended.delete(id)
    }
    this.#ended.set(exchange.id, { at: now, what: endedAs(exchange, result) })
  }
}

/** What an ended call came to, for the one who retries it. */
function endedAs(exchange: Exchange, result: ToolResult | undefined): string {
  if (exchange.expired)
    return `its question waited more than ${duration(exchange.answerMs)} for an answer (answerWaitMs), so it ended`
  if (!result) return 'it failed'
  // the first line of what it said, without the status it starts with (the hint is not news here)
  const first = result.content
    .map((c) => (c.type === 'text' ? c.text : ''))
    .join('\n')
    .trim()
    .split('\n', 1)[0]!
    .replace(new RegExp(`^${result.status}: `), '')
  const said = first ? `: ${first.length > 300 ? `${first.slice(0, 300)}…` : first}` : ''
  if (result.ok) return 'it completed already (its result answered an earlier request)'
  if (result.status === 'DENIED') return `it was denied${said}`
  if (result.status === 'ABORTED') return `it was cancelled${said}`
  return `it ended ${result.status}${said}`
}

/** 120000 → "2 minutes", 90000 → "90 seconds", 300 → "300 ms". */
export function duration(ms: number): string {
  if (ms < 10_000 && ms % 1000 !== 0) return `${ms} ms`
  if (ms % 60_000 === 0) return ms === 60_000 ? '1 minute' : `${ms / 60_000} minutes`
  const s = Math.round(ms / 1000)
  return s === 1 ? '1 second' : `${s} seconds`
}
