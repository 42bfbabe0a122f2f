/**
 * npm run eval:tools — how well tool search finds the tool a need calls for, offline and
 * reproducibly: the development queries (queries.json, tuned on) and the test queries
 * (queries-test.json, needs worded by users in public threads and READMEs; never tuned on) against the real corpus grown to 1,000, 5,000 and
 * 10,000 tools (grow.ts), yoke's ranking (plugins/tool-search/rank.ts) lexical and hybrid (with
 * the semantic arm, semantic.ts), meaning alone, and three baselines run the same way, then what
 * deferral saves in tokens per turn at 300 tools.
 *
 *   npm run eval:tools                     the table
 *   npm run eval:tools -- --tune-hybrid    also sweep the hybrid's options (on the tuning half)
 *   npm run eval:tools -- --cache FILE     keep the tool vectors in FILE between runs
 *   npm run eval:tools -- --model DIR      the hybrid on a model of your own (ONNX), not the built-in one
 *   npm run eval:tools -- --phrases-cache FILE   keep the phrases arm's model-written phrases (with a key)
 *   npm run eval:tools -- --no-semantic    lexical methods only (no model)
 *   npm run eval:tools -- --misses 1000    also what yoke's ranking missed at that size
 *   npm run eval:tools -- --tune           also sweep RankOptions (threshold, fuzzy)
 *   npm run eval:tools -- --tune-related   also sweep the related words' weights (development set)
 *   npm run eval:tools -- --no-related     yoke's ranking without WordNet's related words
 *   npm run eval:tools -- --tune-threshold also sweep the no-match threshold per size (development)
 *   npm run eval:tools -- --calibrate      also learn the no-match decision per size (development)
 *   npm run eval:tools -- --rank-options '{"normalise":false}'   other RankOptions (a road measured)
 *   npm run eval:tools -- --rank FILE      another finder.ts (beside its rank.ts), to compare
 *   npm run eval:tools -- --sizes 1000 --methods yoke    a quicker run
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { RegisteredTool } from 'yoke'
import { ToolFinder } from '../../plugins/tool-search/finder.ts'
import type { RankOptions, SearchOutcome } from '../../plugins/tool-search/rank.ts'
import { HYBRID_DEFAULTS } from '../../plugins/tool-search/hybrid.ts'
import { ModelPhrases } from '../../plugins/tool-search/phrases.ts'
import type { SemanticArm } from '../../plugins/tool-search/semantic.ts'
import {
  armOn,
  embedQueries,
  HELD_OUT,
  semanticOnly,
  sharedModel,
  TUNE,
  type SharedModel,
} from './semantic.ts'
import { plainBm25, regex, substring, type Method } from './baselines.ts'
import { readFixtures, realCorpus, type Tool } from './corpus.ts'
import { grow, SEED } from './grow.ts'
import {
  aliasMap,
  kindOf,
  readQueries,
  readTestQueries,
  resolveGold,
  type Query,
} from './queries.ts'
import { score, type Scores } from './score.ts'
import { figure } from '../stats.ts'
import { tokensReport } from './tokens.ts'
import { calibrate } from './calibrate.ts'
import { modelArm, modelFromEnv } from './model-arm.ts'

const ALL_SIZES = [1000, 5000, 10000]

/** What yoke searches with: tool-search's finder (the index, synced with the tools each search). */
interface Finder {
  follow?(tools: readonly RegisteredTool[]): void
  search(
    query: string,
    tools: readonly RegisteredTool[],
    limit: number,
  ): SearchOutcome<RegisteredTool> | Promise<SearchOutcome<RegisteredTool>>
}
type FinderClass = new (options: RankOptions, semantic?: SemanticArm) => Finder

/** the options: the command line's, or evalTools's */
let args = process.argv.slice(2)
const flag = (name: string) => args.includes(name)
const option = (name: string) => {
  const at = args.indexOf(name)
  return at >= 0 ? args[at + 1] : undefined
}

// a Tool has what the finder reads of a registered tool (name, description, source, inputSchema,
// annotations); nothing here registers or calls one
const asRegistered = (corpus: Tool[]) => corpus as unknown as RegisteredTool[]

function yokeMethod(
  Finder: FinderClass,
  corpus: Tool[],
  options: RankOptions,
  arm?: SemanticArm,
): Method {
  // `--no-related`: without WordNet's related words (the ablation); `--rank-options JSON`: other
  // RankOptions for every yoke method (a road measured before it becomes a default)
  const extra = JSON.parse(option('--rank-options') ?? '{}') as RankOptions
  const base = { ...extra, ...options }
  const finder = new Finder(flag('--no-related') ? { lexicon: null, ...base } : base, arm)
  const tools = asRegistered(corpus)
  return {
    label: arm ? 'yoke hybrid' : 'yoke lexical',
    async search(query, limit) {
      const outcome = await finder.search(query, tools, limit)
      return {
        names: outcome.candidates.map((c) => c.item.name),
        noMatch: outcome.noMatch,
        embedded: outcome.arms === 'hybrid',
      }
    },
  }
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`
const cell = (text: string, width: number) => text.padStart(width)

function printTable(rows: Array<{ size: string; label: string; s: Scores }>) {
  const head = [
    'tools',
    'method',
    'recall@1',
    'recall@5',
    'MRR',
    'none P',
    'none R',
    'none F1',
    'exact',
    'p50 ms',
    'p95 ms',
  ]
  const widths = [6, 13, 9, 9, 6, 7, 7, 8, 7, 8, 8].map((w, i) => (i === 1 ? 27 : w))
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : cell(c, widths[i]!))).join(' ')
  console.log(line(head))
  for (const { size, label, s } of rows)
    console.log(
      line([
        size,
        label,
        pct(s.r1),
        pct(s.r5),
        s.mrr.toFixed(3),
        pct(s.nmP),
        pct(s.nmR),
        s.nmF1.toFixed(2),
        Number.isNaN(s.exact) ? '–' : pct(s.exact),
        s.p50 ? s.p50.toFixed(3) : '–',
        s.p95 ? s.p95.toFixed(3) : '–',
      ]),
    )
}

// `--sizes 1000,5000` and `--methods yoke`: a quicker run while tuning
const sizes = () => option('--sizes')?.split(',').map(Number) ?? ALL_SIZES
const methods = () => option('--methods')?.split(',')

/** `--rank FILE`: a finder.ts (beside its own rank.ts) to compare with the plugin's. */
async function loadFinder(): Promise<FinderClass> {
  const file = option('--rank')
  if (!file) return ToolFinder
  const mod = (await import(pathToFileURL(resolve(file)).href)) as { ToolFinder: FinderClass }
  return mod.ToolFinder
}

/** RankOptions swept: each pair gets its own finder (the options are fixed at construction). */
async function tune(Finder: FinderClass, corpora: Map<number, Tool[]>, queries: Query[]) {
  const golds = new Map(
    [...corpora].map(([n, c]) => [n, queries.map((q) => resolveGold(q, c, aliasMap(c)))]),
  )
  const sizes = [...corpora.keys()]
  console.log('\ntuning RankOptions (recall@5, no-match F1, exact):')
  console.log(
    ['fuzzy', 'threshold', ...sizes.flatMap((n) => [`r@5 ${n}`, `F1 ${n}`, `exact ${n}`])]
      .map((h, i) => (i < 2 ? h.padEnd(9) : h.padStart(11)))
      .join(' '),
  )
  for (const fuzzy of [0, 0.1, 0.2, 0.3])
    for (const threshold of [0.2, 0.3, 0.35, 0.4, 0.5, 0.6]) {
      const cells: string[] = []
      for (const n of sizes) {
        const method = yokeMethod(Finder, corpora.get(n)!, { fuzzy, threshold })
        const s = await score(method, queries, golds.get(n)!, false)
        cells.push(pct(s.r5), s.nmF1.toFixed(2), pct(s.exact))
      }
      console.log(
        [
          String(fuzzy).padEnd(9),
          String(threshold).padEnd(9),
          ...cells.map((c) => c.padStart(11)),
        ].join(' '),
      )
    }
}

/**
 * The related words' weights swept (WordNet's synonyms and derivations, rank.ts), on the
 * development queries only: the query side's weight × the name side's boost.
 */
async function tuneRelated(Finder: FinderClass, corpora: Map<number, Tool[]>, queries: Query[]) {
  const golds = new Map(
    [...corpora].map(([n, c]) => [n, queries.map((q) => resolveGold(q, c, aliasMap(c)))]),
  )
  console.log('\ntuning the related words on the development queries (r@1, r@5, MRR, F1):')
  const grid = [
    { relatedQuery: 0, relatedName: 0 },
    { relatedQuery: 0, relatedName: 0.5 },
    ...[1, 3, 10, 30, Infinity].flatMap((relatedRare) =>
      [0.3, 0.6].flatMap((relatedQuery) =>
        [0, 0.5].map((relatedName) => ({ relatedQuery, relatedName, relatedRare })),
      ),
    ),
  ]
  for (const options of grid) {
    const cells: string[] = []
    for (const [n, corpus] of corpora) {
      const method = yokeMethod(Finder, corpus, options)
      const s = await score(method, queries, golds.get(n)!, false)
      cells.push(`${n}: ${pct(s.r1)} ${pct(s.r5)} ${s.mrr.toFixed(3)} ${s.nmF1.toFixed(2)}`)
    }
    console.log(`  ${JSON.stringify(options)}  ${cells.join('   ')}`)
  }
}

/**
 * The no-match threshold swept per index size on the development queries: F1 and recall@5 at each
 * share, and the share chosen (the best F1 that costs served queries at most 2 points of recall@5
 * against the lowest share's).
 */
async function tuneThreshold(Finder: FinderClass, corpora: Map<number, Tool[]>, queries: Query[]) {
  console.log('\ntuning the no-match threshold per size (development): share: F1, recall@5')
  const shares = [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7]
  for (const [n, corpus] of corpora) {
    const golds = queries.map((q) => resolveGold(q, corpus, aliasMap(corpus)))
    const rows: Array<[number, Scores]> = []
    for (const threshold of shares)
      rows.push([
        threshold,
        await score(yokeMethod(Finder, corpus, { threshold }), queries, golds, false),
      ])
    const floor = rows[0]![1].r5
    const ok = rows.filter(([, s]) => s.r5 >= floor - 0.02)
    const [best] = ok.reduce((a, b) => (b[1].nmF1 > a[1].nmF1 ? b : a))
    console.log(
      `  ${n.toLocaleString('en')}: ${rows.map(([t, s]) => `${t}: ${s.nmF1.toFixed(2)}, ${pct(s.r5)}`).join('; ')} → ${best}`,
    )
  }
}

/** A semantic arm with every tool of the corpus embedded. */
async function embedded(model: SharedModel, Finder: FinderClass, corpus: Tool[]) {
  const arm = await armOn(model)
  new Finder({}, arm).follow?.(asRegistered(corpus))
  await arm.settled()
  if (arm.embedded !== corpus.length)
    throw new Error(`embedded ${arm.embedded} of ${corpus.length} (${arm.state})`)
  return arm
}

/**
 * The hybrid's options swept on the tuning half only: first the fusion (no match off, so that
 * recall measures ranking alone), then the no-match thresholds with the default fusion.
 */
async function tuneHybrid(
  Finder: FinderClass,
  corpus: Tool[],
  arm: SemanticArm,
  queries: Query[],
  golds: Set<string>[],
) {
  const picked = queries.flatMap((q, i) => (TUNE(i) ? [i] : []))
  const qs = picked.map((i) => queries[i]!)
  const gs = picked.map((i) => golds[i]!)
  const run = (options: RankOptions) =>
    score(yokeMethod(Finder, corpus, options, arm), qs, gs, false)
  console.log(
    `\ntuning the hybrid at ${corpus.length} tools, on the tuning half (${qs.length} queries):`,
  )
  const never = { sureSimilarity: -1 }
  for (const fusion of ['weighted', 'rrf'] as const)
    for (const semanticWeight of fusion === 'rrf' ? [0] : [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]) {
      const s = await run({ fusion, semanticWeight, ...never })
      console.log(
        `  ${fusion} ${semanticWeight}: r@1 ${pct(s.r1)} r@5 ${pct(s.r5)} MRR ${s.mrr.toFixed(3)}`,
      )
    }
  for (const sureSimilarity of [0.4, 0.45, 0.5, 0.55, 0.6, 0.7])
    for (const minSimilarity of [0.15, 0.2, 0.25, 0.3, 0.35]) {
      if (minSimilarity > sureSimilarity) continue
      const s = await run({ sureSimilarity, minSimilarity })
      console.log(
        `  sure ${sureSimilarity} min ${minSimilarity}: r@5 ${pct(s.r5)} none P ${pct(s.nmP)} R ${pct(s.nmR)} F1 ${s.nmF1.toFixed(2)}`,
      )
    }
}

/** The misses of yoke's ranking by kind of miss, per size, on both sets. */
function printMissKinds(dev: Map<number, Scores>, test: Map<number, Scores>) {
  console.log('\nyoke misses by kind (development / test):')
  const kinds = new Set(
    [...dev.values(), ...test.values()].flatMap((s) => Object.keys(s.missKinds)),
  )
  for (const [size, d] of dev) {
    const t = test.get(size)
    const cells = [...kinds].map(
      (k) =>
        `${k} ${d.missKinds[k as keyof Scores['missKinds']] ?? 0} / ${t?.missKinds[k as keyof Scores['missKinds']] ?? 0}`,
    )
    console.log(`  ${size.toLocaleString('en')}: ${cells.join('; ')}`)
  }
}

/**
 * The model arm (model-arm.ts): with a key, a real model searches with tool_search and picks a
 * tool or none for each test need, at the first size; without one it says it skipped and why.
 */
async function runModelArm(corpora: Map<number, Tool[]>, test: Query[]) {
  const found = modelFromEnv()
  if ('skipped' in found) {
    console.log(`\nmodel arm: ${found.skipped}`)
    return
  }
  const [size, corpus] = [...corpora][0]!
  const golds = test.map((q) => resolveGold(q, corpus, aliasMap(corpus)))
  const s = await modelArm(found.client, new ToolFinder({}), asRegistered(corpus), test, golds)
  console.log(
    `\nmodel arm (${found.client.provider} ${found.client.model}, test set, ${size.toLocaleString('en')} tools): ` +
      `picked right ${pct(s.accuracy)} of the served needs; "none" P ${pct(s.nmP)} R ${pct(s.nmR)} F1 ${s.nmF1.toFixed(2)}; ` +
      `${s.searches.toFixed(2)} searches per need`,
  )
  figure({
    name: `tool search model arm no-match F1 at ${size.toLocaleString('en')}`,
    value: s.nmF1,
    goal: 0.8,
    better: 'higher',
  })
}

/**
 * The phrases arm (plugins/tool-search/phrases.ts, the doc2query idea with a model): with a key,
 * the model writes each tool's requests at the first size (`--phrases-cache FILE` keeps them
 * between runs), and yoke's lexical ranking is scored with them beside itself without them, on
 * both sets; without a key it says it skipped and why.
 */
async function runPhrasesArm(corpora: Map<number, Tool[]>, queries: Query[], test: Query[]) {
  const found = modelFromEnv()
  if ('skipped' in found) {
    console.log(`\nphrases arm: ${found.skipped}`)
    return
  }
  const [size, corpus] = [...corpora][0]!
  const tools = asRegistered(corpus)
  const phrases: ModelPhrases = new ModelPhrases({
    model: () => found.client,
    file: option('--phrases-cache'),
    onWritten: (names) => finder.rewrite(names),
    onProblem: (message) => console.error(`  ${message}`),
  })
  const finder = new ToolFinder({}, undefined, phrases)
  const started = performance.now()
  finder.follow(tools)
  await phrases.settled()
  const { written, failed } = phrases.status
  console.log(
    `\nphrases arm (${found.client.provider} ${found.client.model}, ${size.toLocaleString('en')} tools): phrases for ${written} distinct tools (${failed} failed) in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  )
  const withPhrases: Method = {
    label: 'yoke lexical + phrases',
    async search(query, limit) {
      const outcome = await finder.search(query, tools, limit)
      return {
        names: outcome.candidates.map((c) => c.item.name),
        noMatch: outcome.noMatch,
        embedded: false,
      }
    },
  }
  const rows = []
  for (const [label, set] of [
    ['dev', queries],
    ['test', test],
  ] as const) {
    const golds = set.map((q) => resolveGold(q, corpus, aliasMap(corpus)))
    for (const method of [yokeMethod(ToolFinder, corpus, {}), withPhrases])
      rows.push({
        size: size.toLocaleString('en'),
        label: `${method.label} · ${label}`,
        s: await score(method, set, golds, false),
      })
  }
  printTable(rows)
}

async function main() {
  const started = performance.now()
  const queries = readQueries()
  const test = readTestQueries()
  const fixtures = readFixtures()
  const real = realCorpus()
  const Finder = await loadFinder()
  const counts = queries.reduce<Record<string, number>>(
    (c, q) => ({ ...c, [kindOf(q)]: (c[kindOf(q)] ?? 0) + 1 }),
    {},
  )
  const testNone = test.filter((q) => !q.gold.length).length
  console.log(
    `tool-search eval: development ${queries.length} queries (${Object.entries(counts)
      .map(([k, n]) => `${n} ${k}`)
      .join(', ')}), test ${test.length} (${test.length - testNone} served, ${testNone} none); ` +
      `real corpus ${real.length} (${fixtures.reduce((n, f) => n + f.tools.length, 0)} MCP tools from ${fixtures.length} servers, ` +
      `exec packages and skills); seed ${SEED}; node ${process.version}`,
  )
  const realGolds = queries.map((q) => resolveGold(q, real, aliasMap(real)))
  for (const q of test) resolveGold(q, real, aliasMap(real))
  queries.forEach((q, i) => {
    if (q.exact && !realGolds[i]!.size) throw new Error(`exact "${q.exact}" names nothing`)
  })

  const corpora = new Map(sizes().map((n) => [n, grow(real, fixtures, n)]))
  /** each method on both sets, development then test */
  const sideBySide: Array<{ size: string; label: string; s: Scores }> = []
  const testScores = new Map<number, Scores>()
  const split: Array<{ size: string; label: string; s: Scores }> = []
  const yokeScores = new Map<number, Scores>()
  const lexicalScores = new Map<number, Scores>()
  const wanted = (label: string) =>
    !methods() || methods()!.some((m) => label.toLowerCase().startsWith(m))
  // `--model DIR`: a model of your own (an ONNX folder) instead of the built-in encoder, with
  // `--model-options JSON` (pooling, queryPrefix, documentPrefix, maxTokens, threads)
  const own = option('--model')
  const model = flag('--no-semantic')
    ? undefined
    : await sharedModel(
        option('--cache'),
        own ? { ...JSON.parse(option('--model-options') ?? '{}'), path: own } : undefined,
      )
  if (model) console.log(`model: ${model.embedder.id}, loaded in ${model.loadMs.toFixed(0)} ms`)
  let queryMs: number[] | undefined
  for (const [size, corpus] of corpora) {
    const golds = queries.map((q) => resolveGold(q, corpus, aliasMap(corpus)))
    const testGolds = test.map((q) => resolveGold(q, corpus, aliasMap(corpus)))
    const arm = model && (await embedded(model, Finder, corpus))
    // each query is embedded once, at the first size (the model keeps its vector): that time counts at every size
    if (arm && !queryMs) {
      queryMs = await embedQueries(arm, queries)
      await embedQueries(arm, test)
    }
    const methods: Array<() => Method> = [
      () => yokeMethod(Finder, corpus, {}),
      ...(arm
        ? [
            () => yokeMethod(Finder, corpus, {}, arm),
            () => semanticOnly(arm, HYBRID_DEFAULTS.minSimilarity),
          ]
        : []),
      () => substring(corpus),
      () => regex(corpus),
      () => plainBm25(corpus),
    ]
    for (const make of methods) {
      const method = make()
      if (!wanted(method.label)) continue
      const semantic = method.label === 'yoke hybrid' || method.label === 'semantic only'
      const s = await score(method, queries, golds, true, semantic ? queryMs : undefined)
      if (method.label === 'yoke lexical') lexicalScores.set(size, s)
      if (method.label === (arm ? 'yoke hybrid' : 'yoke lexical')) yokeScores.set(size, s)
      // the test set: the same method, its answers only (no timing)
      const t = await score(method, test, testGolds, false)
      if (method.label === (arm ? 'yoke hybrid' : 'yoke lexical')) testScores.set(size, t)
      const at = size.toLocaleString('en')
      sideBySide.push(
        { size: at, label: `${method.label} · dev`, s },
        { size: at, label: `${method.label} · test`, s: t },
      )
      if (method.label === 'yoke hybrid')
        // (each half scored again from the same method: the model and the index are warm)
        for (const [half, keep] of [
          ['tuning half', TUNE],
          ['held-out half', HELD_OUT],
        ] as const) {
          const picked = queries.flatMap((q, i) => (keep(i) ? [i] : []))
          const sub = await score(
            method,
            picked.map((i) => queries[i]!),
            picked.map((i) => golds[i]!),
            false,
          )
          split.push({ size: size.toLocaleString('en'), label: `hybrid, ${half}`, s: sub })
        }
    }
    if (flag('--tune-hybrid') && arm && size <= 5000)
      await tuneHybrid(Finder, corpus, arm, queries, golds)
  }
  if (model)
    console.log(
      `\nembedded ${model.embedded.texts} distinct texts (tool texts of all sizes, then the queries) in ${(model.embedded.ms / 1000).toFixed(1)} s`,
    )
  console.log(
    '\ndevelopment (queries.json, tuned on) and test (queries-test.json, never tuned on), side by side:',
  )
  printTable(sideBySide)
  if (split.length) {
    console.log(
      `\nthe hybrid on each half of the queries: its options (${JSON.stringify(HYBRID_DEFAULTS)}) were chosen on the tuning half (even positions), the held-out half (odd) was not looked at`,
    )
    printTable(split)
  }
  const kinds = [...yokeScores].map(
    ([size, s]) =>
      `${size.toLocaleString('en')}: ${Object.entries(s.byKind)
        .map(([k, r]) => `${k} ${pct(r)}`)
        .join(', ')}`,
  )
  console.log(`\nyoke recall@5 by kind of query (development) — ${kinds.join('; ')}`)
  printMissKinds(yokeScores, testScores)

  const cut = tokensReport(real)
  const at = (n: number) => yokeScores.get(n)
  const all = [...yokeScores.values()]
  const tests = [...testScores.values()]
  const r5 = (n: number) => (testScores.get(n) ? pct(testScores.get(n)!.r5) : 'not run')
  for (const [n, goal] of [
    [1000, 0.9],
    [5000, 0.85],
  ] as const)
    if (testScores.get(n))
      figure({
        name: `tool search test recall@5 at ${n.toLocaleString('en')}`,
        value: testScores.get(n)!.r5,
        goal,
        better: 'higher',
      })
  for (const [n, t] of testScores)
    figure({
      name: `tool search test no-match F1 at ${n.toLocaleString('en')}`,
      value: t.nmF1,
      goal: 0.8,
      better: 'higher',
    })
  const exactMin = Math.min(...all.map((s) => s.exact))
  if (all.length)
    figure({
      name: 'tool search exact names first (development)',
      value: exactMin,
      goal: 1,
      better: 'higher',
    })
  const lexical10k = lexicalScores.get(10000)
  if (lexical10k)
    figure({
      name: 'tool search lexical p50 at 10,000 (eval)',
      value: lexical10k.p50,
      goal: 5,
      better: 'lower',
      unit: ' ms',
    })
  const goals: Array<[string, boolean]> = [
    [`test recall@5 ≥ 90% at 1,000 (${r5(1000)})`, (testScores.get(1000)?.r5 ?? 0) >= 0.9],
    [`test recall@5 ≥ 85% at 5,000 (${r5(5000)})`, (testScores.get(5000)?.r5 ?? 0) >= 0.85],
    [
      `test no-match F1 ≥ 0.8 (${tests.map((s) => s.nmF1.toFixed(2)).join(' / ')})`,
      tests.length > 0 && tests.every((s) => s.nmF1 >= 0.8),
    ],
    [
      `exact names 100% (development: the test set names none) (${all.map((s) => pct(s.exact)).join(' / ')})`,
      all.every((s) => s.exact === 1),
    ],
    [
      `p50 ≤ 5 ms at 10,000 (${at(10000) ? `${at(10000)!.p50.toFixed(2)} ms` : 'not run'}${lexicalScores.get(10000) && at(10000) !== lexicalScores.get(10000) ? ` with the query's embedding, ${at(10000)!.searchP50.toFixed(2)} ms without; lexical ${lexicalScores.get(10000)!.p50.toFixed(2)} ms` : ''})`,
      (at(10000)?.p50 ?? Infinity) <= 5,
    ],
    [`tokens cut ≥ 85% at 300 tools (${pct(cut)})`, cut >= 0.85],
  ]
  console.log('\ngoals:')
  for (const [text, ok] of goals) console.log(`  ${ok ? 'met ' : 'MISS'} ${text}`)
  await runModelArm(corpora, test)
  await runPhrasesArm(corpora, queries, test)

  const missesAt = option('--misses')
  if (missesAt) {
    const s = yokeScores.get(Number(missesAt))
    if (!s) throw new Error(`--misses: one of ${sizes().join(', ')}`)
    console.log(`\nyoke's misses at ${missesAt} tools, development (${s.misses.length}):`)
    for (const m of s.misses) console.log(`  ${m}`)
    // the test set's misses: to read and report, never to tune on
    if (flag('--test-misses')) {
      const t = testScores.get(Number(missesAt))!
      console.log(`\nyoke's misses at ${missesAt} tools, test (${t.misses.length}):`)
      for (const m of t.misses) console.log(`  ${m}`)
    }
  }
  if (flag('--tune')) await tune(Finder, new Map([...corpora].filter(([n]) => n <= 5000)), queries)
  if (flag('--tune-threshold')) await tuneThreshold(Finder, corpora, queries)
  if (flag('--calibrate')) await calibrate(corpora, queries, test)
  if (flag('--tune-related'))
    await tuneRelated(Finder, new Map([...corpora].filter(([n]) => n <= 5000)), queries)
  console.log(`\n${((performance.now() - started) / 1000).toFixed(1)} s`)
}

/**
 * The eval as a bench (`npm run bench -- check eval-tools`, once bench/run.ts names it): by
 * default the lexical ranking only (no model: about a minute), its figures recorded with
 * bench/stats.ts's `figure` against the issue's goals.
 */
export async function evalTools(argv = ['--no-semantic', '--methods', 'yoke']): Promise<void> {
  args = argv
  await main()
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  await main()
  process.exit(0)
}
