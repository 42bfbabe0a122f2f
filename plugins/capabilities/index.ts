/**
 * capabilities: every tool, skill, package, MCP server, install and dynamic plugin as an id, a
 * version and a content hash; metrics per id + version (offered, found by search, called, ok and
 * each error code, p50 / p95); the project's rules over versions (pins, withdrawal, rollout to
 * some scopes first), applied through the runtime's visible and preExecute hooks; and an
 * append-only audit log of every change of what the model can use. The metrics live beside the
 * runtime, not in this instance, so a reload of any instance (this one too) keeps them.
 */
import { resolve } from 'node:path'
import { z } from 'zod'
import {
  definePlugin,
  GLOBAL,
  YokeError,
  type Context,
  type RegisteredTool,
  type ToolResult,
} from 'yoke'
import type {} from '../agent-loop/api.ts'
import type {} from '../skills/api.ts'
import type { AuditEntry, CapabilitiesApi, Capability } from './api.ts'
import { versionOf } from './api.ts'
import { appendAudit, foldAudit, readAudit, stateKey } from './audit.ts'
import './errors.ts'
import { Governance, rulesConfig, type Refusal } from './governance.ts'
import { Identities } from './identity.ts'
import { MetricsStore } from './metrics.ts'
import { statsTool } from './stats-tool.ts'

export type * from './api.ts'

/** What outlives an instance: one per runtime (a composition), whatever reloads. */
interface Shared {
  store: MetricsStore
  /** the audit log's last recorded state (scope + id → version), read from the file once */
  state?: Map<string, string | null>
  /** the fiber each owner key had at the last flush: a new one means its instance reloaded */
  fibers: Map<string, number>
  started: boolean
}
const shared = new WeakMap<object, Shared>()

export default definePlugin({
  name: 'capabilities',
  inject: ['runtime', 'project'],
  provides: ['capabilities'],
  config: z
    .object({
      ...rulesConfig,
      /** the audit log (JSON lines), relative to the project; false: none */
      audit: z.union([z.string().min(1), z.literal(false)]).default('.yoke/audit.jsonl'),
      /** registers `capability_stats`, a read-only tool (the MCP endpoint serves it) */
      statsTool: z.boolean().default(false),
      /** how long the tools stay quiet before their changes are written to the audit log */
      auditQuietMs: z.number().int().nonnegative().default(100),
    })
    .strict(),
  apply(ctx, config) {
    const hooks = ctx.runtime.hooks
    const mine: Shared = shared.get(hooks) ?? {
      store: new MetricsStore(),
      fibers: new Map(),
      started: false,
    }
    shared.set(hooks, mine)
    const { store } = mine
    const rules = new Governance(config)
    const ids = new Identities(ctx)
    const auditFile = config.audit === false ? undefined : resolve(ctx.project.dir, config.audit)

    /** per scope: the tools it listed last, before any filter (what `offered` and `found` resolve) */
    const listed = new Map<string, Map<string, RegisteredTool>>()
    /** the global tools as registered, before any filter (listing them runs the visible taps, this one first) */
    const registered = () => {
      ctx.runtime.list()
      return [...(listed.get(GLOBAL)?.values() ?? [])]
    }
    let providers: Map<string, Capability> | undefined
    const provider = (tool: RegisteredTool) =>
      (providers ??= new Map(ids.others([]).map((c) => [c.id, c]))).get(tool.source)
    const rowKey = (tool: RegisteredTool) => {
      const { id, version, hash, source } = ids.tool(tool)
      return { id, ...(version !== undefined && { version }), hash, source: source! }
    }
    const refusal = (tool: RegisteredTool, scope: string): Refusal | undefined =>
      rules.empty ? undefined : rules.refusal(ids.tool(tool), provider(tool), scope)

    ctx.tap(
      hooks.visible,
      'capabilities',
      (tools, scope) => {
        listed.set(scope, new Map(tools.map((t) => [t.name, t])))
        return rules.empty ? tools : tools.filter((t) => !refusal(t, scope))
      },
      { stage: -1000 },
    )
    ctx.tap(hooks.preExecute, 'capabilities', async (decision, call) => {
      const why = call.tool && refusal(call.tool, call.scope)
      if (!why) return decision
      const error = new YokeError(why.code, why.params)
      return { kind: 'deny' as const, reason: `${error.message} (${error.hint})` }
    })
    ctx.tap(hooks.result, 'capabilities', async (call, result) => {
      flushPending() // a short run (yoke run, tools call) may end before the quiet time
      if (call.tool) store.called(rowKey(call.tool), result.status, result.durationMs)
      if (call.name === 'tool_search' && result.ok) countFound(call.scope, result)
    })
    const countFound = (scope: string, result: ToolResult) => {
      const found = (result.structured as { tools?: Array<{ name?: unknown }> } | undefined)?.tools
      const tools = listed.get(scope) ?? listed.get(GLOBAL)
      for (const { name } of found ?? []) {
        const tool = typeof name === 'string' ? tools?.get(name) : undefined
        if (tool) store.found(rowKey(tool))
      }
    }

    // offered = what the agent loop sends the model: a child that waits for `agent` (and restarts with it, alone)
    ctx.plugin(
      definePlugin({
        name: 'capabilities-offers',
        inject: ['agent'],
        apply(child) {
          child.tap(child.agent.hooks.beforeModel, 'capabilities', async (request, info) => {
            flushPending()
            const tools = listed.get(info.scope)
            for (const t of request.tools ?? []) {
              const tool = tools?.get(t.name)
              if (tool) store.offered(rowKey(tool))
            }
            return request
          })
        },
      }),
    )

    // the audit log: after the tools have been quiet a moment, what the model can use now is
    // compared with what the log last recorded, and the differences are appended
    let timer: (() => void) | undefined
    const later = () => {
      providers = undefined
      if (!auditFile) return
      timer?.()
      timer = ctx.setTimeout(() => flush(), config.auditQuietMs)
    }
    ctx.tap(hooks.change, 'capabilities', (change) => {
      if (change.scope === GLOBAL) later()
    })
    ctx.plugin(
      definePlugin({
        name: 'capabilities-skills',
        inject: ['skills'],
        apply(child) {
          child.tap(child.skills.hooks.change, 'capabilities', () => later())
          later()
        },
      }),
    )
    const flushPending = () => {
      if (!timer) return
      timer()
      flush()
    }
    const flush = () => {
      timer = undefined
      if (!auditFile || ctx.signal.aborted) return
      mine.state ??= foldAudit(readAudit(auditFile))
      const entries = diff(ctx, registered(), mine, ids, refusal, provider)
      appendAudit(auditFile, entries)
      for (const e of entries) mine.state.set(stateKey(e.id, e.scope), e.to)
      mine.started = true
    }
    later() // the first look: what changed since the log's last line (a config edited while nothing ran)

    const api: CapabilitiesApi = {
      list: () => {
        const tools = registered()
        return [
          ...tools.map((t) => withRefusal(ids.tool(t), refusal(t, GLOBAL))),
          ...ids.others(tools),
        ]
      },
      stats: () => store.rows(),
      seed: (rows) => store.seed(rows),
      drain: () => store.drain(),
      record: (entries) => {
        if (!auditFile) return
        const at = new Date().toISOString()
        appendAudit(
          auditFile,
          entries.map((e) => ({ at, ...e })),
        )
        for (const e of entries) mine.state?.set(stateKey(e.id, e.scope), e.to)
      },
      ...(auditFile && { auditFile }),
    }
    ctx.provide('capabilities', api)
    ctx.control('capabilities', async (request) => ({
      capabilities: api.list(),
      rows: since(api.stats(), request.since),
      auditFile,
      rules: config.withdrawn.length + config.rollout.length + config.pins.length,
    }))
    if (config.statsTool) ctx.runtime.register(statsTool(api))
  },
})

function withRefusal(cap: Capability, why: Refusal | undefined): Capability {
  if (!why) return cap
  const error = new YokeError(why.code, why.params)
  return { ...cap, refused: `${error.code}: ${error.message}` }
}

/** Rows used at or after `since` (an ISO time; undefined: all). */
function since<R extends { lastAt: string }>(rows: R[], when: unknown): R[] {
  return typeof when === 'string' && when ? rows.filter((r) => r.lastAt >= when) : rows
}

/** The audit entries that bring the log's state up to what the global scope can use now. */
function diff(
  ctx: Context,
  tools: RegisteredTool[],
  mine: Shared,
  ids: Identities,
  refusal: (tool: RegisteredTool, scope: string) => Refusal | undefined,
  provider: (tool: RegisteredTool) => Capability | undefined,
): AuditEntry[] {
  const at = new Date().toISOString()
  const fibers = new Map<string, number>()
  for (const f of ctx.instances()) if (f.state === 'active') fibers.set(f.key, f.id)
  const now = new Map<
    string,
    { to: string | null; was?: string; who: string; why?: string; by?: string }
  >()
  for (const tool of tools) {
    const cap = ids.tool(tool)
    const refused = refusal(tool, GLOBAL)
    const who = refused
      ? {
          CAPABILITY_WITHDRAWN: 'withdraw',
          CAPABILITY_NOT_ROLLED_OUT: 'rollout',
          CAPABILITY_PIN_MISMATCH: 'pin',
        }[refused.code]
      : whoChanged(ctx, mine, tool, fibers, provider(tool))
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
  for (const cap of ids.others(tools))
    now.set(cap.id, {
      to: cap.refused ? null : versionOf(cap),
      who: mine.started ? (cap.kind === 'install' ? 'install' : 'reload') : 'start',
      ...(cap.refused && { why: cap.refused }),
    })
  const state = mine.state!
  const entries: AuditEntry[] = []
  for (const [id, next] of now) {
    const key = stateKey(id)
    const from = state.has(key) ? state.get(key)! : (next.was ?? null)
    if (from !== next.to) entries.push({ at, who: next.who, id, from, to: next.to, ...pick(next) })
  }
  for (const [key, from] of state) {
    const [scope, id] = key.split('\0') as [string, string]
    if (scope === GLOBAL && from !== null && !now.has(id))
      entries.push({ at, who: mine.started ? 'reload' : 'start', id, from, to: null })
  }
  mine.fibers = fibers
  return entries
}

const pick = ({ why, by }: { why?: string; by?: string }) => ({
  ...(why && { why }),
  ...(by && { by }),
})

function whoChanged(
  ctx: Context,
  mine: Shared,
  tool: RegisteredTool,
  fibers: Map<string, number>,
  provider: Capability | undefined,
): string {
  if (!mine.started) return 'start'
  if (/^(repository|dynamic)\b/.test(tool.source)) return 'repository'
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
