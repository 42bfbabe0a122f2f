/**
 * @module runtime/approval
 * The approval service. A call's own asker (CallOptions.asker: the gateway's session, the CLI's
 * terminal) is asked first. Bridges (a TTY prompt, an MCP elicitation, a UI) register themselves; a
 * call without an asker asks the most recent bridge that says it handles the call (a bridge for
 * one kind of caller, such as an MCP server's sessions), else the most recent bridge for all calls.
 * A bridge that races (the web console) is asked alongside whoever that is, and the first answer
 * wins. "Allow for this session" grants are kept per scope and per registration of the tool, so a
 * reloaded tool is asked about again. Bridges that can also answer questions (`answer`: a form to
 * fill in, a URL to visit, asked by a tool's far side such as an MCP server) are found the same way.
 */
import { messageOf } from '../errors.ts'
import type {
  ApprovalAnswer,
  ApprovalReply,
  ApprovalRequest,
  Outrun,
  Question,
  QuestionAnswer,
  ToolCall,
} from './types.ts'

export type { ApprovalAnswer, ApprovalRequest, Asker, Question, QuestionAnswer } from './types.ts'

export interface ApprovalBridge {
  name: string
  /** which calls it answers; a bridge without it answers any call no specific bridge handles */
  handles?(call: ToolCall): boolean
  /**
   * Asked alongside, not instead of, whoever would be asked without it (the call's own asker, else
   * the bridge for the call) when it handles the call (or has no `handles`); alone when no one else
   * is. Each is asked with a signal of its own and `racing`, the others' names. The first answer
   * wins: the others' signals abort with an Outrun naming it, and a late answer is ignored. One
   * that throws does not decide while another still can; the request's signal ends them all.
   */
  race?: boolean
  ask(request: ApprovalRequest): Promise<ApprovalAnswer | ApprovalReply>
  /** answers a question (absent: this bridge takes approvals only) */
  answer?(question: Question): Promise<QuestionAnswer>
}

export type ApprovalOutcome =
  { allowed: true; how: ApprovalAnswer } | { allowed: false; why: string }

export class Approvals {
  #bridges: ApprovalBridge[] = []
  /** `scope\0toolId` of session grants */
  #grants = new Set<string>()

  /** Adds a bridge; the newest one is asked first. Returns its removal. */
  register(bridge: ApprovalBridge): () => void {
    this.#bridges.push(bridge)
    return () => void (this.#bridges = this.#bridges.filter((b) => b !== bridge))
  }

  get bridges(): string[] {
    return this.#bridges.map((b) => b.name)
  }

  async request(request: ApprovalRequest): Promise<ApprovalOutcome> {
    const grant = `${request.call.scope}\0${request.call.tool?.id}`
    if (this.#grants.has(grant)) return { allowed: true, how: 'allow-session' }
    const asked = asking(this.#bridges, request.call, request.call.asker)
    if (!asked.length) return { allowed: false, why: 'no approval bridge is registered to ask' }
    const won = await race(asked, request, (b, r) => b.ask(r))
    if ('why' in won) return { allowed: false, why: won.why }
    const { answer, reason } = typeof won.answer === 'string' ? { answer: won.answer } : won.answer
    if (answer === 'allow-session') this.#grants.add(grant)
    if (answer === 'allow-once' || answer === 'allow-session') return { allowed: true, how: answer }
    return { allowed: false, why: `refused through "${won.by}"${reason ? `: ${reason}` : ''}` }
  }

  /**
   * Puts a question to the bridge that would approve its call (or the newest for all calls) among
   * those that answer questions, and to the racing ones. Never throws: no such bridge, or one that
   * fails, is `cancel` with why.
   */
  async question(question: Question): Promise<QuestionAnswer & { by?: string; why?: string }> {
    const answering = this.#bridges.filter((b) => b.answer)
    const asker = question.call?.asker
    const asked = asking(answering, question.call, asker?.answer && asker)
    if (!asked.length) return { action: 'cancel', why: 'no approval bridge here answers questions' }
    const won = await race(asked, question, (b, q) => b.answer!(q))
    return 'why' in won ? { action: 'cancel', why: won.why } : { ...won.answer, by: won.by }
  }

  /** Drops the grants of a tool registration that went away. */
  forget(toolId: number): void {
    for (const grant of this.#grants) if (grant.endsWith(`\0${toolId}`)) this.#grants.delete(grant)
  }
}

/** Whom to ask: the asker, else the newest bridge for the call, else for all calls; and the racers. */
function asking<B extends ApprovalBridge>(bridges: B[], call?: ToolCall, asker?: B | false): B[] {
  const first =
    asker ||
    (call && bridges.findLast((b) => !b.race && b.handles?.(call))) ||
    bridges.findLast((b) => !b.race && !b.handles)
  const racers = bridges.filter((b) => b.race && (!b.handles || (call && b.handles(call))))
  return first ? [first, ...racers] : racers
}

/**
 * Asks each of `asked` (ApprovalBridge.race), one alone with the request as it is. Resolves once:
 * the first answer and who gave it, or why there is none.
 */
function race<W extends { name: string }, R extends Question | ApprovalRequest, A extends Said>(
  asked: W[],
  request: R,
  ask: (who: W, request: R) => Promise<A>,
): Promise<{ by: string; answer: A } | { why: string }> {
  const { signal } = request
  const alone = asked.length === 1
  const stops = asked.map(() => new AbortController())
  const rivals = asked.map((_, i) => asked.filter((_, j) => j !== i).map((w) => w.name))
  const failures: string[] = []
  return new Promise((resolve) => {
    const end = (won: { by: string; answer: A } | { why: string }, winner = -1) => {
      signal.removeEventListener('abort', ended)
      const why = 'by' in won ? outrun(won.by, said(won.answer)) : signal.reason
      // once: a later answer (or failure) finds no signal left to abort, and resolves no more
      stops.splice(0).forEach((c, i) => i !== winner && c.abort(why))
      resolve(won)
    }
    const ended = () => end({ why: 'the call ended before an answer' })
    if (!alone && signal.aborted) return ended()
    if (!alone) signal.addEventListener('abort', ended, { once: true })
    asked.forEach((who, i) => {
      const own = alone ? request : { ...request, signal: stops[i]!.signal, racing: rivals[i] }
      ;(async () => ask(who, own))().then(
        (answer) => end({ by: who.name, answer }, i),
        (err: unknown) => {
          failures.push(`the approval bridge "${who.name}" failed: ${messageOf(err)}`)
          rivals.forEach((n) => n.includes(who.name) && n.splice(n.indexOf(who.name), 1))
          if (failures.length === asked.length) end({ why: failures.join('; ') })
        },
      )
    })
  })
}

type Said = ApprovalAnswer | ApprovalReply | QuestionAnswer

/** What an answer said, in a word: an approval's answer, a question's action. */
const said = (a: Said) => (typeof a === 'string' ? a : 'action' in a ? a.action : a.answer)

/** The reason the losers' signals abort with: who answered first, and what. */
const outrun = (by: string, answer: string): Outrun =>
  Object.assign(new Error(`${by} answered first (${answer})`), { by, answer })
