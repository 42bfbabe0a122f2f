/**
 * Approvals for MCP clients. The runtime asks the newest approval bridge, and a bridge cannot pass
 * a question on to an older one; so this bridge is registered only while a call of one of our
 * sessions waits to be asked (a pre-execute tap, last of all, sees its `ask` and puts the bridge
 * on top), and it goes once no such call is left. A terminal or an agent's bridge keeps answering
 * its own calls the rest of the time.
 */
import type { ApprovalApi, ApprovalBridge, Disposer, PreDecision, ToolCall } from 'yoke'
import type { McpSession } from './session.ts'

export const BRIDGE = 'mcp-server (elicitation)'

export class ApprovalRelay {
  readonly #pending = new Map<string, McpSession>()
  #off?: Disposer

  constructor(
    private readonly approval: ApprovalApi,
    private readonly sessionOf: (caller: string) => McpSession | undefined,
  ) {}

  /** The pre-execute tap: notes an `ask` for one of our calls; never changes the decision. */
  readonly onDecision = (decision: PreDecision, call: ToolCall): undefined => {
    if (decision.kind !== 'ask') return undefined
    const session = this.sessionOf(call.caller)
    if (!session) return undefined
    this.#pending.set(call.id, session)
    if (this.approval.bridges.at(-1) !== BRIDGE) {
      const previous = this.#off
      this.#off = this.approval.register(this.#bridge)
      void previous?.()
    }
    return undefined
  }

  /** The call ended (asked or not): its question is forgotten; the bridge goes when none is left. */
  settled(callId: string): void {
    if (!this.#pending.delete(callId) || this.#pending.size) return
    void this.#off?.()
    this.#off = undefined
  }

  readonly #bridge: ApprovalBridge = {
    name: BRIDGE,
    ask: async ({ call, reason, signal }) => {
      const session = this.#pending.get(call.id)
      if (!session) throw new Error(`${BRIDGE} answers only for calls from its MCP clients, and ${call.caller} is not one; ask again`)
      try {
        return await session.approve(call, reason, signal)
      } finally {
        this.settled(call.id)
      }
    },
  }
}
