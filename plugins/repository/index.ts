/**
 * repository: the agent extends its own runtime, under control (DSH's tool-cordis). The model
 * defines immutable versions of dynamic plugins (a module, or a preset fragment of built-in
 * plugins), runs one after the user approves that version, inspects it, defines the next, updates
 * or rolls back, stops and undefines. A dynamic plugin belongs to the session (runtime scope) that
 * defined it, lives in memory and is gone at process end; `yoke repository export` writes one into
 * the project, a step the user takes. See README.md for the safety model.
 */
import { z } from 'zod'
import {
  definePlugin,
  type Executor,
  type InjectedContext,
  type RegisteredTool,
  type ToolCall,
} from 'yoke'
import type { DynamicVersion } from './api.ts'
import { RunApprovals } from './approval.ts'
import { inspectTools } from './inspect.ts'
import { describePlugin, mentions } from './references.ts'
import { Replicas, sharedStore } from './replicas.ts'
import { Repository } from './repository.ts'
import { repositoryTools, runApprovalStage } from './tools.ts'
import './errors.ts'

export type * from './api.ts'

const config = z
  .object({
    /** a version's initialisation (its module's import and apply; a fragment's instances starting) */
    initTimeoutMs: z.number().int().positive().max(600_000).default(5_000),
    /** each call of a dynamic plugin's tool, at most (a tool may ask for less) */
    callTimeoutMs: z.number().int().positive().max(3_600_000).default(30_000),
    /** the V8 heap (old space) of a module's worker process */
    maxOldGenerationSizeMb: z.number().int().min(16).max(4096).default(128),
    /** tools one running dynamic plugin may have registered at once; past it, it is ended */
    maxToolsPerPlugin: z.number().int().positive().max(10_000).default(256),
    /** with a shared store: how long a session's plugins stay in it after their last change */
    sharedTtlMs: z.number().int().positive().default(86_400_000),
  })
  .strict()

export default definePlugin({
  name: 'repository',
  inject: ['runtime', 'approval'],
  provides: ['repository'],
  config,
  apply(ctx, limits) {
    const repo = new Repository(ctx, limits)
    separateSessions(ctx, repo)
    const stage = offerTools(ctx, repo)
    shareWithReplicas(ctx, repo, stage.forget, limits.sharedTtlMs)
    ctx.provide('repository', repo.service())
    answerControls(ctx, repo)
    // `@name` in a user prompt: the plugin's context joins the prompt before the model's first step
    ctx.plugin(referencesPlugin(repo), {}, { key: 'references' })
  },
})

type RepositoryContext = InjectedContext<['runtime', 'approval']>

/** how soon a replica that could not join the others through the store tries again */
const REJOIN_MS = 5_000

/** A session's dynamic plugins are its own: other sessions neither list nor call their tools. */
function separateSessions(ctx: RepositoryContext, repo: Repository): void {
  const hidden = (tool: RegisteredTool, scope: string) => {
    const session = repo.sessionOfOwner(tool.owner)
    return session !== undefined && !Repository.sees(scope, session)
  }
  ctx.tap(
    ctx.runtime.hooks.visible,
    'repository sessions',
    (tools: RegisteredTool[], scope: string) =>
      repo.unfiltered ? tools : tools.filter((t) => !hidden(t, scope)),
  )
  // a dynamic plugin's tools are registered globally; another session must not reach them by name
  ctx.runtime.guard((call) => {
    const session = repo.sessionOfOwner(call.tool?.owner)
    if (session !== undefined && !Repository.sees(call.scope, session))
      return `${call.name} belongs to a dynamic plugin of another session`
  })
}

/** The model's tools, with a run's approval asked before its body, outside every gate (see runApprovalStage). */
function offerTools(ctx: RepositoryContext, repo: Repository) {
  const stage = runApprovalStage(repo, new RunApprovals(ctx), ctx.key)
  // what the caller's session did on other replicas is read before any of these tools acts
  // (a call of another tool goes on at once: the pipeline runs a tap that answers at once in step)
  ctx.tap(ctx.runtime.hooks.around, 'repository replicas', (executor: Executor, call: ToolCall) =>
    repo.replicas && call.tool?.owner === ctx.key
      ? repo.replicas.pullScope(call.scope).then(() => executor)
      : executor,
  )
  ctx.tap(ctx.runtime.hooks.around, 'repository run approval', stage.around)
  ctx.tap(ctx.runtime.hooks.result, 'repository run approval', (call: ToolCall) =>
    stage.ended(call),
  )
  for (const tool of [...repositoryTools(repo, stage), ...inspectTools(ctx, repo)])
    ctx.runtime.register(tool)
  return stage
}

/**
 * With a store other processes share, the sessions' plugins are shared with the other replicas
 * (replicas.ts). The store may come or change with a reload: each load and reload looks again.
 */
function shareWithReplicas(
  ctx: RepositoryContext,
  repo: Repository,
  forget: (v: DynamicVersion) => void,
  ttlMs: number,
): void {
  let joining = Promise.resolve()
  const join = () =>
    (joining = joining.then(async () => {
      const store = ctx.signal.aborted ? undefined : sharedStore(ctx)
      if (store === repo.replicas?.store) return
      const old = repo.replicas
      repo.replicas = undefined
      await old?.close()
      if (!store) return
      const replicas = new Replicas(store, repo, ctx.logger, forget, ttlMs)
      repo.replicas = replicas
      await replicas.join().catch((err: unknown) => {
        ctx.logger.warn(
          `dynamic plugins: could not join the other replicas through the shared store (${err instanceof Error ? err.message : String(err)}): each session's are read at its next repository call, and this replica tries again in ${REJOIN_MS / 1000} s`,
        )
        // a replica that never hears the others would miss their runs and keep theirs waiting
        ctx.setTimeout(() => {
          if (repo.replicas !== replicas) return
          repo.replicas = undefined
          void replicas.close().then(join)
        }, REJOIN_MS)
      })
    }))
  ctx.tap(ctx.hooks.reload, 'repository replicas', () => void join())
  ctx.tap(ctx.runtime.hooks.unknownTool, 'repository replicas', (name: string, scope: string) =>
    repo.replicas?.whyAway(name, scope),
  )
  ctx.effect('repository replicas', () => repo.replicas?.close())
  void join()
}

/** For `yoke repository list|export` against the running dev: the user sees every session. */
function answerControls(ctx: RepositoryContext, repo: Repository): void {
  const all = () => repo.list().map((r) => repo.info(r))
  ctx.control('repository/list', () => all())
  ctx.control('repository/source', (request) =>
    all().filter(
      (p) =>
        p.name === request.name && (request.session === undefined || p.session === request.session),
    ),
  )
}

/** A child that waits for `agent`: `@name` in a user prompt adds that plugin's description. */
function referencesPlugin(repo: Repository) {
  return {
    name: 'repository-references',
    inject: ['agent'] as const,
    apply(child: InjectedContext<['agent']>) {
      child.tap(
        child.agent.hooks.userPrompt,
        'repository @references',
        (prompt: string, info: { scope: string }) => {
          const found = mentions(prompt)
            .map((name) => repo.find(info.scope, name))
            .filter((r) => r !== undefined)
          if (!found.length) return prompt
          const blocks = found.map((r) => `[@${r.name}]\n${describePlugin(repo.info(r))}`)
          return `${prompt}\n\n${blocks.join('\n\n')}`
        },
      )
    },
  }
}
