/**
 * @module runtime/approval
 * The approval service. Bridges (a TTY prompt, an MCP elicitation, a UI) register themselves; a
 * call that needs approval asks the most recent bridge that says it handles the call (a bridge for
 * one kind of caller, such as an MCP server's sessions), else the most recent bridge for all calls. "Allow for this session" grants are kept
 * per scope and per registration of the tool, so a reloaded tool is asked about again.
 */
import type { ToolCall } from './types.ts'

export type ApprovalAnswer = 'allow-once' | 'allow-session' | 'deny'

export interface ApprovalRequest {
  call: ToolCall
  reason: string
  signal: AbortSignal
}

export interface ApprovalBridge {
  name: string
  /** which calls it answers; a bridge without it answers any call no specific bridge handles */
  handles?(call: ToolCall): boolean
  ask(request: ApprovalRequest): Promise<ApprovalAnswer>
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
      this.#bridges.findLast((b) => b.handles?.(request.call)) ??
      this.#bridges.findLast((b) => !b.handles)
    if (!bridge) return { allowed: false, why: 'no approval bridge is registered to ask' }
    let answer: ApprovalAnswer
    try {
      answer = await bridge.ask(request)
    } catch (err) {
      return {
        allowed: false,
        why: `the approval bridge "${bridge.name}" failed: ${(err as Error)?.message ?? err}`,
      }
    }
    if (answer === 'allow-session') this.#grants.add(grant)
    if (answer === 'allow-once' || answer === 'allow-session') return { allowed: true, how: answer }
    return { allowed: false, why: `refused through "${bridge.name}"` }
  }

  /** Drops the grants of a tool registration that went away. */
  forget(toolId: number): void {
    for (const grant of this.#grants) if (grant.endsWith(`\0${toolId}`)) this.#grants.delete(grant)
  }
}
