/**
 * Approvals and questions answered from the browser, racing whoever else would be asked. While a
 * browser is connected the console's bridge handles the calls that carry no asker of their own: it
 * shows the call to the browser and, at the same time, asks the bridge that would have been asked
 * without it (the terminal's prompt) through the approval service. The first answer wins; the
 * other side is told — the terminal's prompt is cancelled (its signal aborts), a browser that
 * answers late gets 409 with who answered. With no browser connected the bridge handles nothing:
 * approvals go exactly where they went before.
 */
import { randomUUID } from 'node:crypto'
import type {
  ApprovalAnswer,
  ApprovalApi,
  ApprovalBridge,
  ApprovalRequest,
  Question,
  QuestionAnswer,
} from 'yoke'
import type { ApprovalAnswerRequest, EventMap, PendingApproval } from './protocol.ts'

const BRIDGE = 'console'
/** settled ids kept to answer a late browser with 409 (who won) */
const SETTLED_KEPT = 200
const NO_BRIDGE = 'no approval bridge is registered to ask'

type Outcome = { answer: string; content?: QuestionAnswer['content']; by: string; why?: string }

interface Pending {
  view: PendingApproval
  settle(outcome: Outcome): void
  /** no one else answers it: only a browser can */
  solo: boolean
}

export class BrowserApprovals {
  readonly #pending = new Map<string, Pending>()
  readonly #settled = new Map<string, Outcome>()
  /** call ids being forwarded to the other side: the bridge does not handle them again */
  readonly #forwarding = new Set<string>()

  constructor(
    private readonly approval: ApprovalApi,
    private readonly browsers: () => number,
    private readonly emit: <K extends 'approval' | 'approval-ended'>(
      kind: K,
      data: EventMap[K],
    ) => void,
  ) {}

  pending(): PendingApproval[] {
    return [...this.#pending.values()].map((p) => p.view)
  }

  readonly bridge: ApprovalBridge = {
    name: BRIDGE,
    handles: (call) => this.browsers() > 0 && !this.#forwarding.has(call.id),
    ask: (request) => this.#ask(request),
    answer: (question) => this.#question(question),
  }

  /** The browser's answer to `id`: 200, 404 (no such), 409 (someone answered first), 400. */
  answer(id: string, body: unknown): { status: number; body: unknown } {
    const pending = this.#pending.get(id)
    if (!pending) {
      const won = this.#settled.get(id)
      if (won)
        return {
          status: 409,
          body: {
            error: {
              code: 'CONFLICT',
              message: `already answered (${won.answer}) by ${won.by}`,
            },
            answeredBy: won.by,
          },
        }
      return {
        status: 404,
        body: { error: { code: 'NOT_FOUND', message: `no pending approval or question "${id}"` } },
      }
    }
    const request = body as Partial<ApprovalAnswerRequest> | null
    const allowed =
      pending.view.kind === 'approval'
        ? ['allow-once', 'allow-session', 'deny']
        : ['accept', 'decline', 'cancel']
    if (!request || typeof request.answer !== 'string' || !allowed.includes(request.answer))
      return {
        status: 400,
        body: { error: { code: 'BAD_REQUEST', message: `answer is one of ${allowed.join(', ')}` } },
      }
    pending.settle({ answer: request.answer, content: request.content, by: BRIDGE })
    return { status: 200, body: { ok: true, id, answer: request.answer } }
  }

  async #ask(request: ApprovalRequest): Promise<ApprovalAnswer> {
    const { call, reason } = request
    const view: PendingApproval = {
      id: randomUUID(),
      kind: 'approval',
      at: new Date().toISOString(),
      tool: call.name,
      args: call.args,
      scope: call.scope,
      caller: call.caller,
      reason,
    }
    const outcome = await this.#race(view, request.signal, async (signal) => {
      const other = this.#forward(call.id, () => this.approval.request({ call, reason, signal }))
      const result = await other
      if (result.allowed) return { answer: result.how, by: this.#other() }
      if (result.why === NO_BRIDGE) return undefined // no one else to ask: the browser alone answers
      return { answer: 'deny', by: this.#other(), why: result.why }
    })
    return outcome.answer as ApprovalAnswer
  }

  async #question(question: Question): Promise<QuestionAnswer> {
    const view: PendingApproval = {
      id: randomUUID(),
      kind: 'question',
      at: new Date().toISOString(),
      from: question.from,
      mode: question.mode,
      message: question.message,
      ...(question.schema && { schema: question.schema }),
      ...(question.url && { url: question.url }),
      ...(question.call && { tool: question.call.name, scope: question.call.scope }),
    }
    const outcome = await this.#race(view, question.signal, async (signal) => {
      const ask = () => this.approval.question({ ...question, signal })
      const result = question.call ? await this.#forward(question.call.id, ask) : undefined
      if (!result || (result.action === 'cancel' && !result.by)) return undefined
      return { answer: result.action, content: result.content, by: result.by ?? this.#other() }
    })
    return {
      action: outcome.answer as QuestionAnswer['action'],
      ...(outcome.content && { content: outcome.content }),
    }
  }

  /**
   * No browser has been connected for a while: what only a browser could answer is refused (an
   * approval) or cancelled (a question), so no call waits on a page nobody has open.
   */
  unattended(): void {
    for (const p of [...this.#pending.values()])
      if (p.solo)
        p.settle({
          answer: p.view.kind === 'approval' ? 'deny' : 'cancel',
          by: BRIDGE,
          why: 'no browser stayed connected to answer',
        })
  }

  /** Calls `ask` with this call's id marked, so the approval service passes over this bridge. */
  #forward<T>(callId: string, ask: () => Promise<T>): Promise<T> {
    this.#forwarding.add(callId)
    try {
      return ask() // the service picks its bridge before its first await
    } finally {
      this.#forwarding.delete(callId)
    }
  }

  /** The bridge the approval service asks after this one: what the browser races. */
  #other(): string {
    return this.approval.bridges.filter((b) => b !== BRIDGE).at(-1) ?? 'another bridge'
  }

  /**
   * Shows `view` to the browser and races its answer against `other` (undefined: no one else
   * answers) and the call's end; the loser's signal aborts. One outcome, once.
   */
  #race(
    view: PendingApproval,
    callSignal: AbortSignal,
    other: (signal: AbortSignal) => Promise<Outcome | undefined>,
  ): Promise<Outcome> {
    const loser = new AbortController()
    if (this.approval.bridges.some((b) => b !== BRIDGE)) view.racing = this.#other()
    return new Promise<Outcome>((resolve) => {
      const settle = (outcome: Outcome) => {
        if (!this.#pending.delete(view.id)) return
        callSignal.removeEventListener('abort', ended)
        loser.abort()
        this.#settled.set(view.id, outcome)
        if (this.#settled.size > SETTLED_KEPT)
          this.#settled.delete(this.#settled.keys().next().value!)
        this.emit('approval-ended', {
          id: view.id,
          answer: outcome.answer,
          by: outcome.by,
          ...(outcome.why && { why: outcome.why }),
        })
        resolve(outcome)
      }
      const ended = () =>
        settle({
          answer: view.kind === 'approval' ? 'deny' : 'cancel',
          by: 'the call',
          why: 'the call ended before an answer',
        })
      const pending: Pending = { view, settle, solo: false }
      this.#pending.set(view.id, pending)
      callSignal.addEventListener('abort', ended, { once: true })
      this.emit('approval', view)
      other(loser.signal).then(
        (outcome) => {
          if (outcome && !loser.signal.aborted) settle(outcome)
          else pending.solo = true
        },
        () => (pending.solo = true), // the other side failed: the browser still answers
      )
      if (callSignal.aborted) ended()
    })
  }
}
