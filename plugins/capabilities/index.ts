/**
 * capabilities: every tool, skill, package, MCP server, install and dynamic plugin as an id, a
 * version and a content hash; metrics per id + version (offered by the agent loop or the MCP
 * gateway's tools/list, found by search, called, ok and each error code, p50 / p95); the project's
 * rules over versions (pins, withdrawal, rollout to some scopes first), applied through the
 * runtime's visible and preExecute hooks; and an append-only audit log of every change of what the
 * model can use. The metrics live beside the runtime, not in this instance, so a reload of any
 * instance (this one too) keeps them.
 */
import { z } from 'zod'
import { definePlugin, GLOBAL, YokeError, type RegisteredTool, type ToolResult } from 'yoke'
import type {} from '../agent-loop/api.ts'
import type {} from '../mcp-server/api.ts'
import type {} from '../repository/api.ts'
import type {} from '../skills/api.ts'
import type { AuditEntry, CapabilitiesApi, Capability } from './api.ts'
import { appendAudit, foldAudit, readAudit, stateKey } from './audit.ts'
import { diff, type Shared } from './changes.ts'
import './errors.ts'
import { repositoryEntry, versionToRun } from './dynamic.ts'
import { Governance, rulesConfig, type Refusal } from './governance.ts'
import { Identities } from './identity.ts'
import { MetricsStore } from './metrics.ts'
import { escapesProject, PROJECT_PATH_RULE, resolveInside } from './paths.ts'
import { statsTool } from './stats-tool.ts'
import { explainUnknown, rememberDynamic } from './unknown.ts'
import { unloadRefused } from './unload.ts'

export type * from './api.ts'

const shared = new WeakMap<object, Shared>()

export default definePlugin({
  name: 'capabilities',
  inject: ['runtime', 'project'],
  provides: ['capabilities'],
  config: z
    .object({
      ...rulesConfig,
      /** the audit log (JSON lines), relative to the project; false: none */
      audit: z
        .union([
          z
            .string()
            .min(1)
            .refine((path) => !escapesProject(path), PROJECT_PATH_RULE),
          z.literal(false),
        ])
        .default('.yoke/audit.jsonl'),
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
      dynamic: new Set(),
      started: false,
      held: new Map(),
      gone: new Map(),
    }
    shared.set(hooks, mine)
    const { store } = mine
    const rules = new Governance(config)
    const ids = new Identities(ctx)
    const auditFile =
      config.audit === false
        ? undefined
        : resolveInside(ctx.project.dir, config.audit, 'audit', '.yoke/audit.jsonl')

    /** per scope: the tools it listed last, before any filter (what `offered` and `found` resolve) */
    const listed = new Map<string, Map<string, RegisteredTool>>()
    /** the global tools as registered, before any filter (listing them runs the visible taps, this one first) */
    const registered = () => {
      ctx.runtime.list()
      return [...(listed.get(GLOBAL)?.values() ?? [])]
    }
    let providers: Map<string, Capability> | undefined
    /** a tool's package or server (by its source), and the dynamic plugin version that registered it */
    const providersOf = (tool: RegisteredTool): Capability[] => {
      providers ??= new Map(ids.others([]).flatMap((c) => (c.kind === 'plugin' ? [] : [[c.id, c]])))
      return [providers.get(tool.source), ids.dynamic(tool)].filter((c) => c !== undefined)
    }
    const rowKey = (tool: RegisteredTool) => {
      const { id, version, hash, source } = ids.tool(tool)
      return { id, ...(version !== undefined && { version }), hash, source: source! }
    }
    const refusal = (tool: RegisteredTool, scope: string): Refusal | undefined =>
      rules.empty ? undefined : rules.refusal(ids.tool(tool), providersOf(tool), scope)

    ctx.tap(
      hooks.visible,
      'capabilities',
      (tools, scope) => {
        listed.set(scope, new Map(tools.map((t) => [t.name, t])))
        // remembered with or without rules: a rule added later may stop what registered them
        for (const t of tools) rememberDynamic(mine, ids, t, scope)
        return rules.empty ? tools : tools.filter((t) => !refusal(t, scope))
      },
      { stage: -1000 },
    )
    /** per scope: what it showed last, after every filter (what `capability_stats` may report to it) */
    const shown = new Map<string, Set<string>>()
    const shownKey = (id: string, hash: string) => `${id}#${hash}`
    ctx.tap(
      hooks.visible,
      'capabilities-shown',
      (tools, scope) => {
        shown.set(scope, new Set(tools.map((t) => shownKey(t.name, ids.tool(t).hash))))
        return tools
      },
      { stage: 1000 },
    )
    /** the rows of the tools `scope` can see (a masked or another session's tool is not among them) */
    const statsFor = (scope: string) => {
      if (scope === GLOBAL) ctx.runtime.list() // a host's call may come before any listing
      const visible = shown.get(scope)
      return store.rows().filter((r) => visible?.has(shownKey(r.id, r.hash)))
    }
    /**
     * What a call would bring in beside its tool, for the rules to judge too: the dynamic plugin
     * version `repository_run` would start (its code would run), the skill `skill_read` would serve.
     */
    const targetOf = (name: string, scope: string, args: unknown): Capability | undefined => {
      if (name === 'repository_run') return versionToRun(ctx.get('repository'), scope, args)
      const skill = (args as { name?: unknown } | undefined)?.name
      if (name === 'skill_read' && typeof skill === 'string')
        return ids.others([]).find((c) => c.kind === 'skill' && c.id === `skill:${skill}`)
      return undefined
    }
    // the rules are this instance's config: with none, no call is refused and no tap is needed
    if (!rules.empty)
      ctx.tap(hooks.preExecute, 'capabilities', async (decision, call) => {
        const target = targetOf(call.name, call.scope, call.args)
        const why =
          (target && rules.refusal(target, [], call.scope)) ||
          (call.tool && refusal(call.tool, call.scope))
        if (!why) return decision
        const error = new YokeError(why.code, why.params)
        return { kind: 'deny' as const, reason: `${error.message} (${error.hint})` }
      })
    // a call to a tool a rule unloaded (its server, package or dynamic plugin): the rule says why,
    // before a tap that can only guess (an instance that waits may be its owner)
    if (!rules.empty)
      ctx.tap(hooks.unknownTool, 'capabilities', explainUnknown(ctx, rules, mine, ids), {
        stage: -1000,
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
    // and what the MCP gateway lists to its clients: its lists are cached per view, so it says so itself
    ctx.plugin(
      definePlugin({
        name: 'capabilities-gateway',
        inject: ['mcpServer'],
        apply(child) {
          child.tap(child.mcpServer.hooks.listed, 'capabilities', (tools) => {
            flushPending()
            for (const tool of tools) store.offered(rowKey(tool))
          })
        },
      }),
    )

    // the audit log: after the tools have been quiet a moment, what the model can use now is
    // compared with what the log last recorded, and the differences are appended
    let timer: (() => void) | undefined
    const later = () => {
      providers = undefined
      // a child's tap (skills, repository) may fire while the instances go, after this one went
      if (!auditFile || ctx.signal.aborted) return
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
    /** what the audit log leaves out or cannot take, said once per instance */
    const said = new Set<string>()
    const warnOnce = (problem: string) => {
      if (said.has(problem)) return
      said.add(problem)
      ctx.logger.warn(problem)
    }
    const append = (file: string, entries: AuditEntry[]) => {
      try {
        appendAudit(file, entries)
      } catch (err) {
        warnOnce(`the audit log misses changes: ${(err as Error).message}`)
      }
    }
    const flushPending = () => {
      if (!timer) return
      timer()
      flush()
    }
    const flush = () => {
      timer = undefined
      if (!auditFile || ctx.signal.aborted) return
      mine.state ??= foldAudit(readAudit(auditFile, warnOnce))
      const entries = diff(ctx, registered(), mine, ids, refusal, providersOf)
      append(auditFile, entries)
      for (const e of entries) mine.state.set(stateKey(e.id, e.scope), e.to)
      mine.started = true
    }
    later() // the first look: what changed since the log's last line (a config edited while nothing ran)

    const api: CapabilitiesApi = {
      list: () => {
        const tools = registered()
        const others = ids
          .others(tools)
          .map((c) =>
            c.refused || rules.empty ? c : withRefusal(c, rules.refusal(c, [], c.scope ?? GLOBAL)),
          )
        return [...tools.map((t) => withRefusal(ids.tool(t), refusal(t, GLOBAL))), ...others]
      },
      stats: () => store.rows(),
      seed: (rows) => store.seed(rows),
      drain: () => store.drain(),
      record: (entries) => {
        if (!auditFile) return
        const at = new Date().toISOString()
        append(
          auditFile,
          entries.map((e) => ({ at, ...e })),
        )
        for (const e of entries) mine.state?.set(stateKey(e.id, e.scope), e.to)
      },
      ...(auditFile && { auditFile }),
    }
    ctx.provide('capabilities', api)
    // each change a session's model makes to its dynamic plugins, as the repository reports it
    ctx.plugin(
      definePlugin({
        name: 'capabilities-repository',
        inject: ['repository'],
        apply(child) {
          child.tap(child.repository.hooks.change, 'capabilities', (change) => {
            api.record([repositoryEntry(change, child.repository)])
            later()
          })
        },
      }),
    )
    unloadRefused(ctx, rules, mine, {
      mcp: () => ids.servers(registered()),
      exec: () => ids.packages(),
      skill: () => ids.skills(),
    })
    ctx.control('capabilities', async (request) => ({
      capabilities: api.list(),
      rows: since(api.stats(), request.since),
      auditFile,
      rules: config.withdrawn.length + config.rollout.length + config.pins.length,
    }))
    if (config.statsTool) ctx.runtime.register(statsTool(statsFor))
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
