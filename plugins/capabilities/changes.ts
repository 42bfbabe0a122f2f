/**
 * What the audit log is told when the tools change: what the global scope can use now, compared
 * with the state the log ends in, and who made each difference (start, reload, source, install,
 * repository, or the rule that refuses it).
 */
import { GLOBAL, YokeError, type Context, type RegisteredTool } from 'yoke'
import type {} from '../exec-tools/api.ts'
import type {} from '../installs/api.ts'
import { versionOf, type AuditEntry, type Capability } from './api.ts'
import { stateKey } from './audit.ts'
import type { Refusal } from './governance.ts'
import type { Identities } from './identity.ts'
import type { MetricsStore } from './metrics.ts'

/** What outlives an instance: one per runtime (a composition), whatever reloads. */
export interface Shared {
  store: MetricsStore
  /** the audit log's last recorded state (scope + id → version), read from the file once */
  state?: Map<string, string | null>
  /** the fiber each owner key had at the last flush: a new one means its instance reloaded */
  fibers: Map<string, number>
  /** the tools a dynamic plugin had registered at the last flush (their going is the repository's doing) */
  dynamic: Set<string>
  started: boolean
  /** what each thing a rule unloaded was when it was held (`<kind>:<name>`): unload.ts */
  held: Map<string, Capability>
  /** scope + tool name → the dynamic plugin version that registered it, once listed (unknown.ts) */
  gone: Map<string, Capability>
}
/** The audit entries that bring the log's state up to what the global scope can use now. */
export function diff(
  ctx: Context,
  tools: RegisteredTool[],
  mine: Shared,
  ids: Identities,
  refusal: (tool: RegisteredTool, scope: string) => Refusal | undefined,
  providersOf: (tool: RegisteredTool) => Capability[],
): AuditEntry[] {
  const at = new Date().toISOString()
  const fibers = new Map<string, number>()
  for (const f of ctx.instances()) if (f.state === 'active') fibers.set(f.key, f.id)
  const now = new Map<
    string,
    { to: string | null; was?: string; who: string; why?: string; by?: string }
  >()
  const dynamic = new Set<string>()
  for (const tool of tools) {
    const cap = ids.tool(tool)
    if (ids.dynamic(tool)) dynamic.add(cap.id)
    const refused = refusal(tool, GLOBAL)
    const who = refused
      ? {
          CAPABILITY_WITHDRAWN: 'withdraw',
          CAPABILITY_NOT_ROLLED_OUT: 'rollout',
          CAPABILITY_PIN_MISMATCH: 'pin',
        }[refused.code]
      : whoChanged(ctx, mine, tool, fibers, ids, providersOf(tool)[0])
    const why = refused && new YokeError(refused.code, refused.params).message
    now.set(cap.id, {
      to: refused ? null : versionOf(cap),
      // a version refused before the log ever recorded it was there all the same
      ...(refused && { was: versionOf(cap) }),
      who,
      ...(why && { why }),
      by: tool.owner,
    })
  }
  // a dynamic plugin's versions are written as the repository reports its changes (index.ts)
  for (const cap of ids.others(tools).filter((c) => c.kind !== 'plugin')) {
    // a server between connections shows no version: what the log has for it stands until it is back
    if (cap.kind === 'server' && cap.state !== 'connected' && !cap.refused) {
      now.set(cap.id, { to: mine.state!.get(stateKey(cap.id)) ?? null, who: 'reload' })
      continue
    }
    const who = mine.started ? (cap.kind === 'install' ? 'install' : 'reload') : 'start'
    now.set(cap.id, {
      to: cap.refused ? null : versionOf(cap),
      // a tampered install refused at the first start was there all the same
      ...(cap.refused && { was: versionOf(cap), why: cap.refused }),
      who: unloadedBy(cap.refused) ?? who,
    })
  }
  const state = mine.state!
  const entries: AuditEntry[] = []
  for (const [id, next] of now) {
    const key = stateKey(id)
    const from = state.has(key) ? state.get(key)! : (next.was ?? null)
    if (from !== next.to) entries.push({ at, who: next.who, id, from, to: next.to, ...pick(next) })
  }
  for (const [key, from] of state) {
    const [scope, id] = key.split('\0') as [string, string]
    if (scope === GLOBAL && from !== null && !now.has(id) && !id.startsWith('repo:'))
      entries.push({ at, who: whoRemoved(mine, id), id, from, to: null })
  }
  mine.fibers = fibers
  mine.dynamic = dynamic
  return entries
}

/** A capability the rules hold (unload.ts) was unloaded by its rule: `held: CAPABILITY_…: …`. */
const unloadedBy = (refused: string | undefined) =>
  /^held: CAPABILITY_WITHDRAWN\b/.test(refused ?? '')
    ? 'withdraw'
    : /^held: CAPABILITY_PIN_MISMATCH\b/.test(refused ?? '')
      ? 'pin'
      : undefined

const whoRemoved = (mine: Shared, id: string) =>
  !mine.started ? 'start' : mine.dynamic.has(id) ? 'repository' : 'reload'

const pick = ({ why, by }: { why?: string; by?: string }) => ({
  ...(why && { why }),
  ...(by && { by }),
})

function whoChanged(
  ctx: Context,
  mine: Shared,
  tool: RegisteredTool,
  fibers: Map<string, number>,
  ids: Identities,
  provider: Capability | undefined,
): string {
  if (!mine.started) return 'start'
  if (ids.dynamic(tool)) return 'repository' // a dynamic plugin's tools come and go with its runs
  if (provider?.kind === 'package') {
    const pkg = ctx
      .get('execTools')
      ?.list()
      .find((p) => `exec:${p.id}` === provider.id)
    if (
      pkg?.source ||
      ctx
        .get('installs')
        ?.list()
        .some((i) => i.entry.name === pkg?.id)
    )
      return 'install'
  }
  const before = mine.fibers.get(tool.owner)
  return before !== undefined && before === fibers.get(tool.owner) ? 'source' : 'reload'
}
