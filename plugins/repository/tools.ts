/**
 * @module repository/tools
 * The model's tools over its session's dynamic plugins: repository_define (check and store a new
 * immutable version, never run it), repository_run (activate a version: run, update, rollback),
 * repository_stop, repository_undefine and repository_self (versions, source, diagnostics).
 */
import { YokeError, type Executor, type ToolCall, type ToolDefinition } from 'yoke'
import type { DynamicVersion } from './api.ts'
import type { RunApprovals } from './approval.ts'
import { SourceProblem } from './check.ts'
import type { DefineInput, Record_, Repository, RunDecision } from './repository.ts'
import { activatedText, keptText } from './decisions.ts'
import { describePlugin, stoppedBy } from './references.ts'
import { answersText } from './replicas.ts'

const NAME = {
  type: 'string',
  pattern: '^[a-z][a-z0-9-]{0,31}$',
  description: 'the dynamic plugin’s name (lower case, digits, -)',
}
/** The input of the tools that act on one dynamic plugin by name. */
const ONE_PLUGIN = {
  type: 'object',
  properties: { plugin: NAME },
  required: ['plugin'],
  additionalProperties: false,
} as const
const short = (hash: string) => hash.slice(0, 19)
const fail = (text: string, structured: unknown) => ({
  content: [{ type: 'text' as const, text }],
  structured,
  isError: true,
})

/** The plugin `name` this scope sees (with `version`: that version of it), else REPOSITORY_UNKNOWN. */
function recordOf(repo: Repository, scope: string, name: string, version?: number): Record_ {
  const found = repo.find(scope, name)
  if (!found || (version !== undefined && !found.versions[version - 1]))
    throw new YokeError('REPOSITORY_UNKNOWN', {
      name,
      version: found && version !== undefined ? `@${version}` : '',
    })
  return found
}

/** What a repository_run call would run (the plugin and version), or the answer that refuses it. */
function planRun(repo: Repository, call: Pick<ToolCall, 'scope' | 'args'>) {
  const { args } = call
  const r = recordOf(repo, call.scope, String(args.plugin), args.version as number | undefined)
  const n = (args.version as number | undefined) ?? r.versions.length
  const running = r.state === 'running'
  if (args.mode === 'run' && running)
    return fail(
      `${r.name} is running version ${r.current}: use mode "update" to switch it to version ${n}`,
      { ok: false, state: r.state },
    )
  if (args.mode === 'update' && !running)
    return fail(`${r.name} is not running (${r.state}): use mode "run"`, {
      ok: false,
      state: r.state,
    })
  return { r, n }
}

/**
 * The approval of a run, asked before its body: an `around` tap (after policy, approvals and
 * guards judged the repository_run call, before the concurrency gate) asks the person and keeps
 * the answer for the body; the call's result withdraws a question still open (the caller gave up,
 * the call timed out). So a run waiting for a person holds no gate and not the plugin's queue.
 */
export function runApprovalStage(repo: Repository, approvals: RunApprovals, owner: string) {
  /** call id → what withdraws its open question */
  const asking = new Map<string, AbortController>()
  /** call id → what its approval decided */
  const decisions = new Map<string, RunDecision>()
  return {
    decision(callId: string) {
      const decided = decisions.get(callId)
      decisions.delete(callId)
      return decided
    },
    /** (answers at once for every other call: the pipeline goes on in step) */
    around(executor: Executor, call: ToolCall): Executor | Promise<Executor> {
      if (call.name !== 'repository_run' || call.tool?.owner !== owner) return executor
      return asked(executor, call)
    },
    ended(call: ToolCall) {
      asking.get(call.id)?.abort(new Error('the repository_run call ended'))
      decisions.delete(call.id)
    },
    /** a version's grant id goes with it (undefine) */
    forget: (v: DynamicVersion) => approvals.forget(v),
  }

  async function asked(executor: Executor, call: ToolCall): Promise<Executor> {
    let plan
    try {
      plan = planRun(repo, call)
    } catch {
      return executor // the body says why
    }
    if (!('r' in plan)) return executor
    const { r, n } = plan
    const abort = new AbortController()
    asking.set(call.id, abort)
    try {
      const decided = await repo.approve(r, n, call.scope, (v) =>
        approvals.ask(v, r.tag, call, abort.signal),
      )
      decisions.set(call.id, decided)
    } finally {
      asking.delete(call.id)
    }
    return executor
  }
}

type RunStage = ReturnType<typeof runApprovalStage>
const session = (c: { call: ToolCall }) => c.call.scope

export function repositoryTools(repo: Repository, stage: RunStage): ToolDefinition[] {
  return [
    defineTool(repo),
    runTool(repo, stage),
    stopTool(repo),
    undefineTool(repo, stage),
    selfTool(repo),
  ]
}

function defineTool(repo: Repository): ToolDefinition {
  return {
    name: 'repository_define',
    description:
      'Define a new immutable version of a dynamic plugin of this session (a new plugin, or the next version of one you defined). It is checked (syntax, imports, plugin shape, config schema) and stored, never run: run it with repository_run. kind "module": JavaScript or TypeScript, `export default { name, inject: ["runtime"], config?: <JSON Schema>, apply(ctx, config) { ctx.runtime.register({ name, description, inputSchema, execute(args) { … } }) } }`, importing only node: modules. kind "fragment": YAML `plugins: { key: { use: <built-in plugin>, config: … } }` adding instances of existing plugins (an MCP server is use: mcp-client).',
    risk: 'low',
    inputSchema: {
      type: 'object',
      properties: {
        name: NAME,
        purpose: {
          type: 'string',
          minLength: 1,
          maxLength: 500,
          description: 'one sentence: what it is for',
        },
        kind: { type: 'string', enum: ['module', 'fragment'], default: 'module' },
        language: {
          type: 'string',
          enum: ['javascript', 'typescript'],
          default: 'javascript',
          description: 'a module’s language',
        },
        source: { type: 'string', minLength: 1, maxLength: 200_000 },
        config: {
          type: 'object',
          description: 'a module’s instance config, checked against its config schema',
        },
      },
      required: ['name', 'purpose', 'source'],
      additionalProperties: false,
    },
    async execute(args, c) {
      let version: DynamicVersion
      try {
        version = await repo.define(session(c), args as unknown as DefineInput, c.call.caller)
      } catch (err) {
        if (!(err instanceof SourceProblem)) throw err
        const e = new YokeError('REPOSITORY_SOURCE_INVALID', {
          where: err.where,
          reason: err.message,
        })
        return fail(`${e.code}: ${e.message}\nhint: ${e.hint}`, {
          ok: false,
          code: e.code,
          where: err.where,
          reason: err.message,
        })
      }
      return {
        content: [
          {
            type: 'text',
            text: `Defined ${version.id} (${short(version.hash)}): it is not running. Run it with repository_run {"plugin":"${version.name}","version":${version.version}}${version.version > 1 ? ' (mode "update" switches a running version to it)' : ''}.`,
          },
        ],
        structured: { ok: true, id: version.id, version: version.version, hash: version.hash },
      }
    },
  }
}

function runTool(repo: Repository, stage: RunStage): ToolDefinition {
  return {
    name: 'repository_run',
    description:
      'Activate a version of a dynamic plugin of this session: mode "run" starts it, "update" switches the running version to it (an older version is a rollback). The user is asked to approve each version the first time it runs in this session; a refusal is "rejected" and nothing is applied. A version that fails to start leaves the current one as it was.',
    risk: 'medium',
    // the plugin's runs, stops and undefines queue per plugin here; the gate need not hold others back
    concurrency: 'safe',
    timeoutMs: 15 * 60_000,
    inputSchema: {
      type: 'object',
      properties: {
        plugin: NAME,
        version: { type: 'integer', minimum: 1, description: 'default: the latest' },
        mode: {
          type: 'string',
          enum: ['run', 'update'],
          description: 'default: update when one is running, else run',
        },
      },
      required: ['plugin'],
      additionalProperties: false,
    },
    async execute(_args, c) {
      const plan = planRun(repo, c.call)
      if (!('r' in plan)) return plan
      const { r, n } = plan
      // approved (or refused) before this body: see runApprovalStage
      const answer = await repo.run(r, n, c.call.scope, c.call.caller, stage.decision(c.call.id))
      const v = answer.version
      if (answer.outcome === 'running') {
        const tools = answer.tools.length
          ? `its tools: ${answer.tools.join(', ')} (offered from your next step)`
          : 'it registered no tools'
        const what = activatedText(answer.from, v.version)
        const elsewhere = answersText(answer.heard, 'running')
        return {
          content: [{ type: 'text', text: `${v.id} is ${what}; ${tools}.${elsewhere}` }],
          structured: {
            ok: true,
            state: 'running',
            id: v.id,
            tools: answer.tools,
            ...(answer.heard ? { replicas: answer.heard } : {}),
          },
        }
      }
      const code =
        answer.code === 'REPOSITORY_TOO_MANY_TOOLS'
          ? answer.code
          : answer.outcome === 'rejected'
            ? 'REPOSITORY_REJECTED'
            : 'REPOSITORY_RUN_FAILED'
      const e =
        code === 'REPOSITORY_TOO_MANY_TOOLS'
          ? new YokeError(code, { id: v.id, max: repo.limits.maxToolsPerPlugin })
          : new YokeError(code, { id: v.id, reason: answer.reason })
      const kept = keptText(r)
      return fail(`${answer.outcome}: ${e.message}; ${kept} [${e.code}]\nhint: ${e.hint}`, {
        ok: false,
        code: e.code,
        state: answer.outcome,
        id: v.id,
        reason: answer.reason,
        current: r.current ?? null,
      })
    },
  }
}

function stopTool(repo: Repository): ToolDefinition {
  return {
    name: 'repository_stop',
    description:
      'Stop the running version of a dynamic plugin of this session; its versions and current version are kept (repository_run starts it again).',
    risk: 'medium',
    concurrency: 'safe',
    inputSchema: ONE_PLUGIN,
    async execute(args, c) {
      const r = recordOf(repo, session(c), String(args.plugin))
      const { stopped, heard } = await repo.stop(r, c.call.caller)
      const elsewhere = answersText(heard, 'stopped')
      if (stopped) return `Stopped ${r.name} (version ${r.current} stays current).${elsewhere}`
      return heard
        ? `${r.name} was not running here (${r.state}); it was stopped elsewhere.${elsewhere}`
        : `${r.name} was not running (${r.state}).`
    },
  }
}

function undefineTool(repo: Repository, stage: RunStage): ToolDefinition {
  return {
    name: 'repository_undefine',
    description:
      'Remove a dynamic plugin of this session for good: stop it and forget every version.',
    risk: 'medium',
    concurrency: 'safe',
    inputSchema: ONE_PLUGIN,
    async execute(args, c) {
      const r = recordOf(repo, session(c), String(args.plugin))
      const heard = await repo.undefine(r, c.call.caller, stage.forget)
      return `Removed ${r.name} and its ${r.versions.length} version(s).${answersText(heard, 'gone')}`
    },
  }
}

function selfTool(repo: Repository): ToolDefinition {
  return {
    name: 'repository_self',
    description:
      "This session's dynamic plugins: with no arguments a summary of each; with plugin, its versions, state (a stopped one: who stopped it and why), tools and diagnostics; with plugin and version, that version's whole source.",
    risk: 'low',
    concurrency: 'safe',
    inputSchema: {
      type: 'object',
      properties: { plugin: NAME, version: { type: 'integer', minimum: 1 } },
      additionalProperties: false,
    },
    execute(args, c) {
      if (args.plugin === undefined) {
        const plugins = repo.list(session(c)).map((r) => repo.info(r))
        if (!plugins.length)
          return 'This session has no dynamic plugins; repository_define makes one.'
        return {
          content: [
            {
              type: 'text',
              text: plugins
                .map(
                  (p) =>
                    `${p.name}: ${p.state}${p.current ? ` (version ${p.current} of ${p.versions.length})` : ` (${p.versions.length} version(s))`}${stoppedBy(p)} — ${p.purpose}`,
                )
                .join('\n'),
            },
          ],
          structured: plugins.map(({ versions, ...p }) => ({ ...p, versions: versions.length })),
        }
      }
      const r = recordOf(repo, session(c), String(args.plugin), args.version as number | undefined)
      return describePlugin(repo.info(r), args.version as number | undefined)
    },
  }
}
