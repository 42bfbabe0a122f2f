/**
 * Why a call names no tool, when a rule of this instance is the reason: a withdrawal or a pin
 * unloaded the tool's MCP server or exec package (held, unload.ts), or stopped the dynamic plugin
 * version that registered it. The runtime's `unknownTool` hook asks; the answer is the rule's own
 * error (CAPABILITY_WITHDRAWN, CAPABILITY_PIN_MISMATCH, CAPABILITY_NOT_ROLLED_OUT) naming the
 * tool, the rule and how to undo it, instead of UNKNOWN_TOOL's "list the tools".
 */
import { YokeError, type Context, type RegisteredTool } from 'yoke'
import type { Capability } from './api.ts'
import type { Governance } from './governance.ts'
import type { Identities } from './identity.ts'
import type { Kept } from './kept.ts'

/** the most dynamic tools remembered (per scope and name): the oldest are forgotten first */
const REMEMBERED = 10_000

/** Remembers which dynamic plugin version registered `tool` in `scope`: once stopped, it is gone. */
export function rememberDynamic(
  kept: Pick<Kept, 'gone'>,
  ids: Identities,
  tool: RegisteredTool,
  scope: string,
) {
  const version = ids.dynamic(tool)
  if (!version) return
  const key = `${scope}\u0000${tool.name}`
  kept.gone.delete(key) // re-inserted last: the map's order is the order of use
  kept.gone.set(key, version)
  if (kept.gone.size > REMEMBERED) kept.gone.delete(kept.gone.keys().next().value!)
}

/** The unknownTool tap: the rule's error for a tool a rule took away, else undefined. */
export function explainUnknown(
  ctx: Context,
  rules: Governance,
  kept: Pick<Kept, 'gone' | 'held'>,
  ids: Identities,
) {
  /** what provided `name` and is held now, as it was when it was held */
  const provider = (name: string, scope: string): Capability | undefined => {
    const server = ctx
      .get('mcp')
      ?.list()
      .find((s) => s.state === 'held' && name.startsWith(`mcp__${s.name}__`))
    if (server)
      return (
        kept.held.get(`mcp:${server.name}`) ??
        ids.servers([]).find((u) => u.key === server.name)?.cap
      )
    const held = ctx
      .get('execTools')
      ?.list()
      .find((p) => p.state === 'held' && p.tools.includes(name))
    if (held) return ids.packages().find((u) => u.key === held.id)?.cap
    return kept.gone.get(`${scope}\u0000${name}`)
  }
  return (name: string, scope: string): YokeError | undefined => {
    if (rules.empty) return undefined
    const cap = provider(name, scope)
    const why = cap && rules.refusal(cap, [], scope)
    return why && new YokeError(why.code, { ...why.params, name })
  }
}
