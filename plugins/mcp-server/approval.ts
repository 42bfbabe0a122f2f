/**
 * Approvals for MCP clients: a bridge that answers only the calls of this server's sessions
 * (`handles`), so a terminal or an agent's bridge keeps answering its own calls. A call that asks
 * is put to its client as an elicitation when the client supports one, and denied with the hint
 * otherwise (McpSession.approve).
 */
import type { ApprovalBridge } from 'yoke'
import type { McpSession } from './session.ts'

export const BRIDGE = 'mcp-server (elicitation)'

export function approvalBridge(
  sessionOf: (caller: string) => McpSession | undefined,
): ApprovalBridge {
  return {
    name: BRIDGE,
    handles: (call) => sessionOf(call.caller) !== undefined,
    ask: async ({ call, reason, signal }) => {
      const session = sessionOf(call.caller)
      if (!session) throw new Error(`the MCP session of ${call.caller} has ended`)
      return session.approve(call, reason, signal)
    },
  }
}
