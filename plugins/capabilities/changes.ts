/**
 * What the audit log is told when the tools change: what the global scope can use now, compared
 * with the state the log ends in, and who made each difference (start, reload, source, install,
 * repository, or the rule that refuses it). `AuditTrail` writes it once the tools have been quiet a
 * moment; `diff` and the small functions under it decide what it writes.
 */
import { GLOBAL, messageOf, YokeError, type Context, type RegisteredTool } from 'yoke'
import { versionOf, type AuditEntry, type Capability } from './api.ts'
import { appendAudit, foldAudit, readAudit, stateKey } from './audit.ts'
import type { Refusal } from './governance.ts'
import type { Identities } from './identity.ts'
import type { Kept } from './kept.ts'

/** What the instance tells the audit trail of the tools: as registered, refused, provided. */
export interface ToolView {
  /** the global tools as registered, before any filter */
  registered(): RegisteredTool[]
  refusal(tool: RegisteredTool, scope: string): Refusal | undefined
  /** a tool's package or server, and the dynamic plugin version that registered it */
  providersOf(tool: RegisteredTool): Capability[]
}

/**
 * The audit log of one instance: after the tools have been quiet for `quietMs`, what the model
 * can use now is compared with what the log last recorded, and the differences are appended. A
 * log that cannot be written is said once per problem; the change itself is made all the same.
 */
export class AuditTrail {
  /** cancels the pending flush (set while the tools are not quiet yet) */
  #timer: (() => void) | undefined
  /** when the last change came (performance.now()) */
  #lastChange = 0
  /** what the log leaves out or cannot take, already said */
  readonly #said = new Set<string>()

  constructor(
    private readonly ctx: Context,
    private readonly kept: Kept,
    private readonly ids: Identities,
    private readonly view: ToolView,
    /** the log's file (undefined: audit is off) */
    readonly file: string | undefined,
    private readonly quietMs: number,
    /** each entry also goes here (the store's log, shared.ts), whether or not the file took it */
    private readonly share: (entries: AuditEntry[]) => void = () => {},
  ) {}

  /**
   * Something changed: flush once the tools have been quiet a moment. One timer per quiet wait,
   * not one per change (a server's thousands of tools register in a burst): when it fires early
   * it waits on for the rest of the quiet time since the last change.
   */
  later(): void {
    // a child's tap (skills, repository) may fire while the instances go, after this one went
    if (!this.file || this.ctx.signal.aborted) return
    this.#lastChange = performance.now()
    this.#timer ??= this.ctx.setTimeout(() => this.#quiet(), this.quietMs)
  }

  #quiet(): void {
    const wait = this.#lastChange + this.quietMs - performance.now()
    if (wait > 1) this.#timer = this.ctx.setTimeout(() => this.#quiet(), wait)
    else this.flush()
  }

  /** Flushes now what waits for the quiet time (a short run may end before it). */
  flushPending(): void {
    if (!this.#timer) return
    this.#timer()
    this.flush()
  }

  /** Appends what differs between the log's last state and what the global scope can use now. */
  flush(): void {
    this.#timer = undefined
    if (!this.file || this.ctx.signal.aborted) return
    const kept = this.kept
    kept.state ??= foldAudit(readAudit(this.file, (problem) => this.#warnOnce(problem)))
    const entries = diff(this.ctx, this.view.registered(), kept, this.ids, this.view)
    this.#append(entries)
    for (const e of entries) kept.state.set(stateKey(e.id, e.scope), e.to)
    kept.started = true
  }

  /** Appends what only the caller knows (a repository change); `at` is added. */
  record(entries: Array<Omit<AuditEntry, 'at'>>): void {
    if (!this.file) return
    const at = new Date().toISOString()
    this.#append(entries.map((e) => ({ at, ...e })))
    for (const e of entries) this.kept.state?.set(stateKey(e.id, e.scope), e.to)
  }

  close(): void {
    this.#timer?.()
    this.#timer = undefined
  }

  #append(entries: AuditEntry[]): void {
    if (entries.length) this.share(entries)
    try {
      appendAudit(this.file!, entries)
    } catch (err) {
      this.#warnOnce(`the audit log misses changes: ${messageOf(err)}`)
    }
  }

  #warnOnce(problem: string): void {
    if (this.#said.has(problem)) return
    this.#said.add(problem)
    this.ctx.logger.warn(problem)
  }
}

/** One capability as it is now: its version (null: gone or refused), who made it so, and why. */
export interface Now {
  to: string | null
  /** the version it had when a rule refused it before the log ever recorded it */
  was?: string
  who: string
  why?: string
  by?: string
}

/** The audit entries that bring the log's state up to what the global scope can use now. */
export function diff(
  ctx: Context,
  tools: RegisteredTool[],
  kept: Kept,
  ids: Identities,
  view: Pick<ToolView, 'refusal' | 'providersOf'>,
): AuditEntry[] {
  const fibers = new Map<string, number>()
  for (const f of ctx.instances()) if (f.state === 'active') fibers.set(f.key, f.id)
  const now = new Map<string, Now>()
  const dynamic = new Set<string>()
  for (const tool of tools) {
    const cap = ids.tool(tool)
    if (ids.dynamic(tool)) dynamic.add(cap.id)
    const refused = view.refusal(tool, GLOBAL)
    const who = refused
      ? whoRefused(refused.code)
      : whoChanged(ctx, kept, tool, fibers, ids, view.providersOf(tool)[0])
    now.set(cap.id, toolNow(cap, refused, who, tool.owner))
  }
  // a dynamic plugin's versions are written as the repository reports its changes (index.ts)
  for (const cap of ids.others(tools).filter((c) => c.kind !== 'plugin'))
    now.set(cap.id, otherNow(cap, kept))
  const entries = entriesFrom(now, kept, new Date().toISOString())
  kept.fibers = fibers
  kept.dynamic = dynamic
  return entries
}

/** The rule that refuses a tool, as the audit log's `who`. */
export const whoRefused = (code: Refusal['code']): string =>
  ({
    CAPABILITY_WITHDRAWN: 'withdraw',
    CAPABILITY_NOT_ROLLED_OUT: 'rollout',
    CAPABILITY_PIN_MISMATCH: 'pin',
  })[code]

function toolNow(cap: Capability, refused: Refusal | undefined, who: string, by: string): Now {
  const why = refused && new YokeError(refused.code, refused.params).message
  return {
    to: refused ? null : versionOf(cap),
    // a version refused before the log ever recorded it was there all the same
    ...(refused && { was: versionOf(cap) }),
    who,
    ...(why && { why }),
    by,
  }
}

/** A provider, skill or install now (what the log has for a server between connections stands). */
export function otherNow(cap: Capability, kept: Pick<Kept, 'state' | 'started'>): Now {
  if (cap.kind === 'server' && cap.state !== 'connected' && !cap.refused)
    return { to: kept.state?.get(stateKey(cap.id)) ?? null, who: 'reload' }
  const who = kept.started ? (cap.kind === 'install' ? 'install' : 'reload') : 'start'
  return {
    to: cap.refused ? null : versionOf(cap),
    // a tampered install refused at the first start was there all the same
    ...(cap.refused && { was: versionOf(cap), why: cap.refused }),
    who: unloadedBy(cap.refused) ?? who,
  }
}

/** The entries from the log's state (`kept.state`) to `now`: what changed, and what went. */
export function entriesFrom(
  now: Map<string, Now>,
  kept: Pick<Kept, 'state' | 'started' | 'dynamic'>,
  at: string,
): AuditEntry[] {
  const state = kept.state ?? new Map<string, string | null>()
  const entries: AuditEntry[] = []
  for (const [id, next] of now) {
    const key = stateKey(id)
    const from = state.has(key) ? state.get(key)! : (next.was ?? null)
    if (from !== next.to) entries.push({ at, who: next.who, id, from, to: next.to, ...pick(next) })
  }
  for (const [key, from] of state) {
    const [scope, id] = key.split('\0') as [string, string]
    if (scope === GLOBAL && from !== null && !now.has(id) && !id.startsWith('repo:'))
      entries.push({ at, who: whoRemoved(kept, id), id, from, to: null })
  }
  return entries
}

/** A capability the rules hold (unload.ts) was unloaded by its rule: `held: CAPABILITY_…: …`. */
export const unloadedBy = (refused: string | undefined) =>
  /^held: CAPABILITY_WITHDRAWN\b/.test(refused ?? '')
    ? 'withdraw'
    : /^held: CAPABILITY_PIN_MISMATCH\b/.test(refused ?? '')
      ? 'pin'
      : undefined

const whoRemoved = (kept: Pick<Kept, 'started' | 'dynamic'>, id: string) =>
  !kept.started ? 'start' : kept.dynamic.has(id) ? 'repository' : 'reload'

const pick = ({ why, by }: { why?: string; by?: string }) => ({
  ...(why && { why }),
  ...(by && { by }),
})

function whoChanged(
  ctx: Context,
  kept: Kept,
  tool: RegisteredTool,
  fibers: Map<string, number>,
  ids: Identities,
  provider: Capability | undefined,
): string {
  if (!kept.started) return 'start'
  if (ids.dynamic(tool)) return 'repository' // a dynamic plugin's tools come and go with its runs
  if (provider?.kind === 'package' && installed(ctx, provider.id)) return 'install'
  const before = kept.fibers.get(tool.owner)
  return before !== undefined && before === fibers.get(tool.owner) ? 'source' : 'reload'
}

/** Whether the exec package `id` (`exec:<package>`) came from an install (`yoke add`). */
function installed(ctx: Context, id: string): boolean {
  const pkg = ctx
    .get('execTools')
    ?.list()
    .find((p) => `exec:${p.id}` === id)
  return Boolean(
    pkg?.source ||
    ctx
      .get('installs')
      ?.list()
      .some((i) => i.entry.name === pkg?.id),
  )
}
