/**
 * Approvals and questions answered from the browser, racing whoever else is asked. While a browser
 * is connected the console's bridge races (ApprovalBridge.race): the approval service asks it
 * alongside whoever would be asked without it — the call's own asker (`yoke tools call` into this
 * dev, an MCP client's elicitation) or the bridge for the call (a terminal's prompt). The first
 * answer wins; the other side is told: the loser's signal aborts (a terminal's prompt says who
 * answered, an elicitation is cancelled), and a browser that answers late gets 409 with who
 * answered. A refusal from the browser may say why; the caller's DENIED error carries it. With no
 * browser connected the bridge handles nothing: approvals go exactly where they went before.
 */
import { randomUUID } from 'node:crypto'
import type {
  ApprovalAnswer,
  ApprovalApi,
  ApprovalBridge,
  ApprovalReply,
  ApprovalRequest,
  Outrun,
  Question,
  QuestionAnswer,
} from 'yoke'
import type { ApprovalAnswerRequest, EventMap, PendingApproval } from './protocol.ts'

const BRIDGE = 'console'
/** settled ids kept to answer a late browser with 409 (who won) */
const SETTLED_KEPT = 200
/** the longest reason a refusal from the browser carries to the caller */
const REASON_CHARS = 1000

type Outcome = { answer: string; content?: QuestionAnswer['content']; by: string; why?: string }

interface Pending {
  view: PendingApproval
  settle(outcome: Outcome): void
  /** no one else is (still) asked: only a browser can answer */
  solo(): boolean
}

export class BrowserApprovals {
  readonly #pending = new Map<string, Pending>()
  readonly #settled = new Map<string, Outcome>()

  constructor(
    /** the service the bridge is registered with (by console.ts), which races it */
    _approval: ApprovalApi,
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
    race: true,
    handles: () => this.browsers() > 0,
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
    const request = body as
      (Omit<Partial<ApprovalAnswerRequest>, 'reason'> & { reason?: unknown }) | null
    const allowed =
      pending.view.kind === 'approval'
        ? ['allow-once', 'allow-session', 'deny']
        : ['accept', 'decline', 'cancel']
    if (!request || typeof request.answer !== 'string' || !allowed.includes(request.answer))
      return badRequest(`answer is one of ${allowed.join(', ')}`)
    if (request.reason !== undefined && typeof request.reason !== 'string')
      return badRequest('reason, when given, is a string')
    const why = request.answer === 'deny' ? request.reason?.trim().slice(0, REASON_CHARS) : ''
    pending.settle({
      answer: request.answer,
      content: request.content,
      by: BRIDGE,
      ...(why && { why }),
    })
    return { status: 200, body: { ok: true, id, answer: request.answer } }
  }

  async #ask(request: ApprovalRequest): Promise<ApprovalAnswer | ApprovalReply> {
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
    const outcome = await this.#wait(view, request)
    const answer = outcome.answer as ApprovalAnswer
    // a refusal here says why (the browser's words, or that no one stayed); a loser's answer is ignored
    return answer === 'deny' && outcome.why ? { answer, reason: outcome.why } : answer
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
    const outcome = await this.#wait(view, question)
    return {
      action: outcome.answer as QuestionAnswer['action'],
      ...(outcome.content && { content: outcome.content }),
    }
  }

  /**
   * No browser has been connected for a while: what only a browser could answer (no one else is
   * asked, or the others failed) is refused (an approval) or cancelled (a question), so no call
   * waits on a page nobody has open.
   */
  unattended(): void {
    for (const p of [...this.#pending.values()])
      if (p.solo())
        p.settle({
          answer: p.view.kind === 'approval' ? 'deny' : 'cancel',
          by: BRIDGE,
          why: 'no browser stayed connected to answer',
        })
  }

  /**
   * Shows `view` to the browser until it answers or `asked.signal` aborts: another answered first
   * (an Outrun: the browser is told who), or the call ended. One outcome, once.
   */
  #wait(
    view: PendingApproval,
    asked: { signal: AbortSignal; racing?: readonly string[] },
  ): Promise<Outcome> {
    const { signal, racing } = asked
    if (racing?.length) view.racing = racing.join(', ')
    return new Promise<Outcome>((resolve) => {
      const settle = (outcome: Outcome) => {
        if (!this.#pending.delete(view.id)) return
        signal.removeEventListener('abort', ended)
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
      const ended = () => {
        const won = signal.reason as Partial<Outrun> | undefined
        if (won?.by && won.answer) return settle({ answer: won.answer, by: won.by })
        settle({
          answer: view.kind === 'approval' ? 'deny' : 'cancel',
          by: 'the call',
          why: 'the call ended before an answer',
        })
      }
      this.#pending.set(view.id, { view, settle, solo: () => !racing?.length })
      signal.addEventListener('abort', ended, { once: true })
      this.emit('approval', view)
      if (signal.aborted) ended()
    })
  }
}

const badRequest = (message: string) => ({
  status: 400,
  body: { error: { code: 'BAD_REQUEST', message } },
})
