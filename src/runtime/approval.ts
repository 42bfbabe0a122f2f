/**
 * @module runtime/approval
 * The approval service. A call's own asker (CallOptions.asker: the gateway's session, the CLI's
 * terminal) is asked first. Bridges (a TTY prompt, an MCP elicitation, a UI) register themselves; a
 * call without an asker asks the most recent bridge that says it handles the call (a bridge for
 * one kind of caller, such as an MCP server's sessions), else the most recent bridge for all calls. "Allow for this session" grants are kept
 * per scope and per registration of the tool, so a reloaded tool is asked about again. Bridges
 * that can also answer questions (`answer`: a form to fill in, a URL to visit, asked by a tool's
 * far side such as an MCP server) are found the same way.
 */
import { messageOf } from '../errors.ts'
import type {
  ApprovalAnswer,
  ApprovalRequest,
  Question,
  QuestionAnswer,
  ToolCall,
} from './types.ts'

export type { ApprovalAnswer, ApprovalRequest, Asker, Question, QuestionAnswer } from './types.ts'

export interface ApprovalBridge {
  name: string
  /** which calls it answers; a bridge without it answers any call no specific bridge handles */
  handles?(call: ToolCall): boolean
  ask(request: ApprovalRequest): Promise<ApprovalAnswer>
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
    return () => {
      const i = this.#bridges.indexOf(bridge)
      if (i >= 0) this.#bridges.splice(i, 1)
    }
  }

  get bridges(): string[] {
    return this.#bridges.map((b) => b.name)
  }

  async request(request: ApprovalRequest): Promise<ApprovalOutcome> {
    const grant = `${request.call.scope}\0${request.call.tool?.id}`
    if (this.#grants.has(grant)) return { allowed: true, how: 'allow-session' }
    const bridge =
      request.call.asker ??
      this.#bridges.findLast((b) => b.handles?.(request.call)) ??
      this.#bridges.findLast((b) => !b.handles)
    if (!bridge) return { allowed: false, why: 'no approval bridge is registered to ask' }
    let answer: ApprovalAnswer
    try {
      answer = await bridge.ask(request)
    } catch (err) {
      return {
        allowed: false,
        why: `the approval bridge "${bridge.name}" failed: ${messageOf(err)}`,
      }
    }
    if (answer === 'allow-session') this.#grants.add(grant)
    if (answer === 'allow-once' || answer === 'allow-session') return { allowed: true, how: answer }
    return { allowed: false, why: `refused through "${bridge.name}"` }
  }

  /**
   * Puts a question to the bridge that would approve its call (or the newest for all calls) among
   * those that answer questions. Never throws: no such bridge, or one that fails, is `cancel` with why.
   */
  async question(question: Question): Promise<QuestionAnswer & { by?: string; why?: string }> {
    const answering = this.#bridges.filter((b) => b.answer)
    const bridge =
      (question.call?.asker?.answer && question.call.asker) ||
      (question.call && answering.findLast((b) => b.handles?.(question.call!))) ||
      answering.findLast((b) => !b.handles)
    if (!bridge) return { action: 'cancel', why: 'no approval bridge here answers questions' }
    try {
      return { ...(await bridge.answer!(question)), by: bridge.name }
    } catch (err) {
      return {
        action: 'cancel',
        by: bridge.name,
        why: `the approval bridge "${bridge.name}" failed: ${messageOf(err)}`,
      }
    }
  }

  /** Drops the grants of a tool registration that went away. */
  forget(toolId: number): void {
    for (const grant of this.#grants) if (grant.endsWith(`\0${toolId}`)) this.#grants.delete(grant)
  }
}
