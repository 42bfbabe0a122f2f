/**
 * One running capabilities instance: the rules over versions (`Governance`), what each thing is
 * (`Identities`), the audit log (`AuditTrail`), and what the scopes listed and showed last. Its
 * taps on the runtime count metrics into the kept store, hide and refuse what a rule refuses, and
 * tell the audit trail of changes; `index.ts` builds it, registers its close and starts it.
 */
import {
  definePlugin,
  GLOBAL,
  YokeError,
  type InjectedContext,
  type PreDecision,
  type RegisteredTool,
  type ToolCall,
  type ToolResult,
} from 'yoke'
import type {
  AuditEntry,
  CapabilitiesApi,
  CapabilitiesAudit,
  CapabilitiesList,
  Capability,
  MetricsRow,
} from './api.ts'
import { readAudit } from './audit.ts'
import { AuditTrail } from './changes.ts'
import type { CapabilitiesConfig } from './config.ts'
import { repositoryEntry, versionToRun } from './dynamic.ts'
import { Governance, type Refusal } from './governance.ts'
import { Identities } from './identity.ts'
import { inspectSection } from './inspect.ts'
import type { Kept } from './kept.ts'
import type { RowKey } from './metrics.ts'
import { resolveInside } from './paths.ts'
import { mergedRows, sharedChecks } from './merged.ts'
import { FLUSH_MS, replicaId, Sharer } from './shared.ts'
import { statsTool } from './stats-tool.ts'
import { explainUnknown, rememberDynamic } from './unknown.ts'
import { unloadRefused } from './unload.ts'

type Ctx = InjectedContext<['runtime', 'project']>

export class Capabilities {
  /** the project's rules over versions (this instance's config) */
  readonly rules: Governance
  /** what each tool, package, server, skill, install and dynamic version is, as a capability */
  readonly ids: Identities
  /** the audit log of what the model can use */
  readonly audit: AuditTrail
  /** the `capabilities` service */
  readonly service: CapabilitiesApi
  /** per scope: the tools it listed last, before any filter (what `offered` and `found` resolve) */
  readonly #listed = new Map<string, Map<string, RegisteredTool>>()
  /** per scope: what it showed last, after every filter (`id#hash`: what `capability_stats` may report to it) */
  readonly #shown = new Map<string, Set<string>>()
  readonly #rowKeys = new WeakMap<RegisteredTool, RowKey>()
  /** source id → the package or server it names; built on use, dropped at every change */
  #providers: Map<string, Capability> | undefined

  constructor(
    private readonly ctx: Ctx,
    private readonly config: CapabilitiesConfig,
    /** what the previous version of this instance handed on: metrics, audit state, holds */
    private readonly kept: Kept,
  ) {
    this.rules = new Governance(config)
    this.ids = new Identities(ctx)
    const file =
      config.audit === false
        ? undefined
        : resolveInside(ctx.project.dir, config.audit, 'audit', '.yoke/audit.jsonl')
    this.audit = new AuditTrail(ctx, kept, this.ids, this, file, config.auditQuietMs, (entries) =>
      this.#shareAudit(entries),
    )
    const { store } = kept
    this.service = {
      list: () => this.list(),
      stats: () => this.rows(),
      local: () => store.rows(),
      seed: (rows) => store.seed(rows),
      drain: () => store.drain(),
      record: (entries) => this.audit.record(entries),
      ...(file && { auditFile: file }),
    }
  }

  /** Taps the runtime and the providers, provides the service and the controls. */
  start(): void {
    const { ctx, rules } = this
    const hooks = ctx.runtime.hooks
    ctx.tap(hooks.visible, 'capabilities', (tools, scope) => this.#listedNow(tools, scope), {
      stage: -1000,
    })
    ctx.tap(hooks.visible, 'capabilities-shown', (tools, scope) => this.#shownNow(tools, scope), {
      stage: 1000,
    })
    // the rules are this instance's config: with none, no call is refused and no tap is needed
    if (!rules.empty) {
      ctx.tap(hooks.preExecute, 'capabilities', async (decision, call) =>
        this.#decide(decision, call),
      )
      // a call to a tool a rule unloaded (its server, package or dynamic plugin): the rule says
      // why, before a tap that can only guess (an instance that waits may be its owner)
      ctx.tap(hooks.unknownTool, 'capabilities', explainUnknown(ctx, rules, this.kept, this.ids), {
        stage: -1000,
      })
    }
    ctx.tap(hooks.result, 'capabilities', async (call, result) => this.#count(call, result))
    ctx.tap(hooks.change, 'capabilities', (change) => {
      if (change.scope === GLOBAL) this.changed()
    })
    this.#countOffers()
    this.#watchChanges()
    this.changed() // the first look: what changed since the log's last line (a config edited while nothing ran)
    ctx.provide('capabilities', this.service)
    unloadRefused(ctx, rules, this.kept, {
      mcp: () => this.ids.servers(this.registered()),
      exec: () => this.ids.packages(),
      skill: () => this.ids.skills(),
    })
    ctx.control('capabilities/list', async (request) => {
      await this.kept.shared.active?.fresh()
      return this.answer(request.since)
    })
    ctx.control('capabilities/inspect', async () => {
      await this.kept.shared.active?.fresh()
      return inspectSection(this.answer())
    })
    ctx.control('capabilities/audit', () => this.auditEntries())
    this.#shareThroughStore()
    if (this.config.statsTool)
      ctx.runtime.register(
        statsTool(
          (scope) => this.statsFor(scope),
          () => this.kept.shared.active?.fresh(),
        ),
      )
  }

  /**
   * The metrics rows: with a store, every replica's merged (a reader here asks for them to be read
   * back at each flush for a while); else this process's.
   */
  rows(): MetricsRow[] {
    const { shared, store } = this.kept
    if (!shared.active) return store.rows()
    shared.wanted = Date.now()
    return mergedRows(shared, store)
  }

  /** The audit log: the store's, in its one order across replicas, when one shares it; else the file. */
  async auditEntries(): Promise<CapabilitiesAudit> {
    const sharer = this.kept.shared.active
    if (sharer && this.audit.file) {
      await sharer.tick(false) // what this replica recorded is in it
      return { source: 'store', entries: await sharer.readAudit(), problems: [] }
    }
    const problems: string[] = []
    const entries = this.audit.file ? readAudit(this.audit.file, (p) => problems.push(p)) : []
    return { source: 'file', entries, problems }
  }

  /**
   * A child that needs a `store` service (optional: none in any preset) and, while it runs, adds
   * the metrics to its merged counters every `FLUSH_MS` and on stop, and appends the audit entries
   * to its log (shared.ts). It is started once a store is there (at a load or reload that brings
   * one), so a composition without a store has no instance waiting for one.
   */
  #shareThroughStore(): void {
    let started = false
    const look = () => {
      if (started || !this.ctx.get('store')) return
      started = true
      this.#storeChild()
    }
    this.ctx.tap(this.ctx.hooks.reload, 'capabilities store', look)
    look()
  }

  #storeChild(): void {
    const { kept, ctx } = this
    this.ctx.plugin(
      definePlugin({
        name: 'capabilities-store',
        inject: ['store'],
        apply: (c) => {
          const sharer = new Sharer(kept.shared, kept.store, c.store, {
            prefix: `${ctx.key}:`,
            warn: (message) => c.logger.warn(message),
            info: (message) => c.logger.info(message),
          })
          sharer.start()
          c.setInterval(() => void sharer.tick(), FLUSH_MS)
          c.effect('capabilities: the last flush to the store', () => sharer.stop())
          c.control('capabilities-store/doctor', () => sharedChecks(kept.shared))
        },
      }),
    )
  }

  /** An audit entry for the store's log: now when one shares it, queued while one is coming up. */
  #shareAudit(entries: AuditEntry[]): void {
    const { shared } = this.kept
    if (shared.active) shared.active.record(entries)
    else if (this.ctx.get('store'))
      shared.queueAudit(entries, replicaId(), (message) => this.ctx.logger.warn(message))
  }

  /** Drops what it remembers of the scopes, and the audit log's pending flush. */
  close(): void {
    this.audit.close()
    this.#listed.clear()
    this.#shown.clear()
    this.#providers = undefined
  }

  /** Every capability known now, tools first; `refused` says why the model cannot use one. */
  list(): Capability[] {
    const tools = this.registered()
    const others = this.ids
      .others(tools)
      .map((c) =>
        c.refused || this.rules.empty
          ? c
          : withRefusal(c, this.rules.refusal(c, [], c.scope ?? GLOBAL)),
      )
    return [...tools.map((t) => withRefusal(this.ids.tool(t), this.refusal(t, GLOBAL))), ...others]
  }

  /** The `capabilities/list` answer: every capability, and the rows used since `when`. */
  answer(when?: unknown): CapabilitiesList {
    const { withdrawn, rollout, pins } = this.config
    return {
      capabilities: this.list(),
      rows: since(this.rows(), when),
      ...(this.audit.file && { auditFile: this.audit.file }),
      rules: withdrawn.length + rollout.length + pins.length,
    }
  }

  /** The rows of the tools `scope` can see (a masked or another session's tool is not among them). */
  statsFor(scope: string) {
    if (scope === GLOBAL) this.ctx.runtime.list() // a host's call may come before any listing
    const visible = this.#shown.get(scope)
    return this.rows().filter((r) => visible?.has(shownKey(r.id, r.hash)))
  }

  /** The global tools as registered, before any filter (listing runs the visible taps, this one first). */
  registered(): RegisteredTool[] {
    this.ctx.runtime.list()
    return [...(this.#listed.get(GLOBAL)?.values() ?? [])]
  }

  /** Why `tool` may not be used from `scope` (undefined: it may). */
  refusal(tool: RegisteredTool, scope: string): Refusal | undefined {
    return this.rules.empty
      ? undefined
      : this.rules.refusal(this.ids.tool(tool), this.providersOf(tool), scope)
  }

  /** A tool's package or server (by its source), and the dynamic plugin version that registered it. */
  providersOf(tool: RegisteredTool): Capability[] {
    this.#providers ??= new Map(
      this.ids.others([]).flatMap((c) => (c.kind === 'plugin' ? [] : [[c.id, c]])),
    )
    return [this.#providers.get(tool.source), this.ids.dynamic(tool)].filter((c) => c !== undefined)
  }

  /** What the model can use may have changed: the audit log looks once the tools are quiet. */
  changed(): void {
    this.#providers = undefined
    this.audit.later()
  }

  /** Counts `tools` as offered (sent to a model, or listed to an MCP client) in `scope`. */
  offered(tools: ReadonlyArray<{ name: string }>, scope: string): void {
    this.audit.flushPending()
    const listed = this.#listed.get(scope)
    for (const t of tools) {
      const tool = listed?.get(t.name)
      if (tool) this.kept.store.offered(this.#rowKey(tool))
    }
  }

  #listedNow(tools: RegisteredTool[], scope: string): RegisteredTool[] {
    this.#listed.set(scope, new Map(tools.map((t) => [t.name, t])))
    // remembered with or without rules: a rule added later may stop what registered them
    for (const t of tools) rememberDynamic(this.kept, this.ids, t, scope)
    return this.rules.empty ? tools : tools.filter((t) => !this.refusal(t, scope))
  }

  #shownNow(tools: RegisteredTool[], scope: string): RegisteredTool[] {
    this.#shown.set(scope, new Set(tools.map((t) => shownKey(t.name, this.ids.tool(t).hash))))
    return tools
  }

  /** preExecute: a call to a refused tool, or one that would bring in a refused target, is denied. */
  #decide(decision: PreDecision, call: ToolCall): PreDecision {
    const target = this.#targetOf(call.name, call.scope, call.args)
    const why =
      (target && this.rules.refusal(target, [], call.scope)) ||
      (call.tool && this.refusal(call.tool, call.scope))
    if (!why) return decision
    const error = new YokeError(why.code, why.params)
    return { kind: 'deny' as const, reason: `${error.message} (${error.hint})` }
  }

  /**
   * What a call would bring in beside its tool, for the rules to judge too: the dynamic plugin
   * version `repository_run` would start (its code would run), the skill `skill_read` would serve.
   */
  #targetOf(name: string, scope: string, args: unknown): Capability | undefined {
    if (name === 'repository_run') return versionToRun(this.ctx.get('repository'), scope, args)
    const skill = (args as { name?: unknown } | undefined)?.name
    if (name === 'skill_read' && typeof skill === 'string')
      return this.ids.others([]).find((c) => c.kind === 'skill' && c.id === `skill:${skill}`)
    return undefined
  }

  /** result: the call's row counts it; a `tool_search` result counts what it found. */
  #count(call: ToolCall, result: ToolResult): void {
    this.audit.flushPending() // a short run (yoke run, tools call) may end before the quiet time
    if (call.tool) this.kept.store.called(this.#rowKey(call.tool), result.status, result.durationMs)
    if (call.name !== 'tool_search' || !result.ok) return
    const found = (result.structured as { tools?: Array<{ name?: unknown }> } | undefined)?.tools
    const tools = this.#listed.get(call.scope) ?? this.#listed.get(GLOBAL)
    for (const { name } of found ?? []) {
      const tool = typeof name === 'string' ? tools?.get(name) : undefined
      if (tool) this.kept.store.found(this.#rowKey(tool))
    }
  }

  /** A tool's metrics row key, one object per registration (the store keys its row by it). */
  #rowKey(tool: RegisteredTool): RowKey {
    let key = this.#rowKeys.get(tool)
    if (!key) {
      const { id, version, hash, source } = this.ids.tool(tool)
      key = { id, ...(version !== undefined && { version }), hash, source: source! }
      this.#rowKeys.set(tool, key)
    }
    return key
  }

  /**
   * Children that wait for another plugin's service (and restart with it, alone): what the agent
   * loop sends the model and what the MCP gateway lists are offered (the gateway's lists are
   * cached per view, so it says so itself).
   */
  #countOffers(): void {
    this.ctx.plugin(
      definePlugin({
        name: 'capabilities-offers',
        inject: ['agent'],
        apply: (c) => {
          c.tap(c.agent.hooks.beforeModel, 'capabilities', async (request, info) => {
            this.offered(request.tools ?? [], info.scope)
            return request
          })
        },
      }),
    )
    this.ctx.plugin(
      definePlugin({
        name: 'capabilities-gateway',
        inject: ['mcpServer'],
        apply: (c) => {
          c.tap(c.mcpServer.hooks.listed, 'capabilities', (tools) => {
            this.audit.flushPending()
            for (const tool of tools) this.kept.store.offered(this.#rowKey(tool))
          })
        },
      }),
    )
  }

  /**
   * Children that tell the audit trail of the skills' changes, and of each change a session's
   * model makes to its dynamic plugins, as the repository reports it.
   */
  #watchChanges(): void {
    this.ctx.plugin(
      definePlugin({
        name: 'capabilities-skills',
        inject: ['skills'],
        apply: (c) => {
          c.tap(c.skills.hooks.change, 'capabilities', () => this.changed())
          this.changed()
        },
      }),
    )
    this.ctx.plugin(
      definePlugin({
        name: 'capabilities-repository',
        inject: ['repository'],
        apply: (c) => {
          c.tap(c.repository.hooks.change, 'capabilities', (change) => {
            this.audit.record([repositoryEntry(change, c.repository)])
            this.changed()
          })
        },
      }),
    )
  }
}

const shownKey = (id: string, hash: string) => `${id}#${hash}`

function withRefusal(cap: Capability, why: Refusal | undefined): Capability {
  if (!why) return cap
  const error = new YokeError(why.code, why.params)
  return { ...cap, refused: `${error.code}: ${error.message}` }
}

/** Rows used at or after `when` (an ISO time; anything else: all). */
function since<R extends { lastAt: string }>(rows: R[], when: unknown): R[] {
  return typeof when === 'string' && when ? rows.filter((r) => r.lastAt >= when) : rows
}
