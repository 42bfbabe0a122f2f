/**
 * npm run eval:tools — how well tool search finds the tool a need calls for, offline and
 * reproducibly: the queries in queries.json against the real corpus grown to 1,000, 5,000 and
 * 10,000 tools (grow.ts), yoke's ranking (plugins/tool-search/rank.ts) beside three baselines
 * run the same way, then what deferral saves in tokens per turn at 300 tools.
 *
 *   npm run eval:tools                     the table
 *   npm run eval:tools -- --misses 1000    also what yoke's ranking missed at that size
 *   npm run eval:tools -- --tune           also sweep RankOptions (threshold, fuzzy)
 *   npm run eval:tools -- --rank FILE      another finder.ts (beside its rank.ts), to compare
 *   npm run eval:tools -- --sizes 1000 --methods yoke    a quicker run
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { RegisteredTool } from 'yoke'
import { ToolFinder } from '../../plugins/tool-search/finder.ts'
import type { RankOptions, SearchOutcome } from '../../plugins/tool-search/rank.ts'
import { plainBm25, regex, substring, type Method } from './baselines.ts'
import { readFixtures, realCorpus, type Tool } from './corpus.ts'
import { grow, SEED } from './grow.ts'
import { aliasMap, kindOf, readQueries, resolveGold, type Query } from './queries.ts'
import { score, type Scores } from './score.ts'
import { tokensReport } from './tokens.ts'

const ALL_SIZES = [1000, 5000, 10000]

/** What yoke searches with: tool-search's finder (the index, synced with the tools each search). */
interface Finder {
  search(
    query: string,
    tools: readonly RegisteredTool[],
    limit: number,
  ): SearchOutcome<RegisteredTool>
}
type FinderClass = new (options: RankOptions) => Finder

const args = process.argv.slice(2)
const flag = (name: string) => args.includes(name)
const option = (name: string) => {
  const at = args.indexOf(name)
  return at >= 0 ? args[at + 1] : undefined
}

// a Tool has what the finder reads of a registered tool (name, description, source, inputSchema,
// annotations); nothing here registers or calls one
const asRegistered = (corpus: Tool[]) => corpus as unknown as RegisteredTool[]

function yokeMethod(Finder: FinderClass, corpus: Tool[], options: RankOptions): Method {
  const finder = new Finder(options)
  const tools = asRegistered(corpus)
  return {
    label: 'yoke',
    search(query, limit) {
      const outcome = finder.search(query, tools, limit)
      return { names: outcome.candidates.map((c) => c.item.name), noMatch: outcome.noMatch }
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
  const widths = [6, 13, 9, 9, 6, 7, 7, 8, 7, 8, 8]
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
        pct(s.exact),
        s.p50.toFixed(3),
        s.p95.toFixed(3),
      ]),
    )
}

// `--sizes 1000,5000` and `--methods yoke`: a quicker run while tuning
const SIZES = option('--sizes')?.split(',').map(Number) ?? ALL_SIZES
const METHODS = option('--methods')?.split(',')

/** `--rank FILE`: a finder.ts (beside its own rank.ts) to compare with the plugin's. */
async function loadFinder(): Promise<FinderClass> {
  const file = option('--rank')
  if (!file) return ToolFinder
  const mod = (await import(pathToFileURL(resolve(file)).href)) as { ToolFinder: FinderClass }
  return mod.ToolFinder
}

/** RankOptions swept: each pair gets its own finder (the options are fixed at construction). */
function tune(Finder: FinderClass, corpora: Map<number, Tool[]>, queries: Query[]) {
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
      const cells = sizes.flatMap((n) => {
        const s = score(
          yokeMethod(Finder, corpora.get(n)!, { fuzzy, threshold }),
          queries,
          golds.get(n)!,
          false,
        )
        return [pct(s.r5), s.nmF1.toFixed(2), pct(s.exact)]
      })
      console.log(
        [
          String(fuzzy).padEnd(9),
          String(threshold).padEnd(9),
          ...cells.map((c) => c.padStart(11)),
        ].join(' '),
      )
    }
}

async function main() {
  const started = performance.now()
  const queries = readQueries()
  const fixtures = readFixtures()
  const real = realCorpus()
  const Finder = await loadFinder()
  const counts = queries.reduce<Record<string, number>>(
    (c, q) => ({ ...c, [kindOf(q)]: (c[kindOf(q)] ?? 0) + 1 }),
    {},
  )
  console.log(
    `tool-search eval: ${queries.length} queries (${Object.entries(counts)
      .map(([k, n]) => `${n} ${k}`)
      .join(', ')}); ` +
      `real corpus ${real.length} (${fixtures.reduce((n, f) => n + f.tools.length, 0)} MCP tools from ${fixtures.length} servers, ` +
      `exec packages and skills); seed ${SEED}; node ${process.version}`,
  )
  const realGolds = queries.map((q) => resolveGold(q, real, aliasMap(real)))
  queries.forEach((q, i) => {
    if (q.exact && !realGolds[i]!.size) throw new Error(`exact "${q.exact}" names nothing`)
  })

  const corpora = new Map(SIZES.map((n) => [n, grow(real, fixtures, n)]))
  const rows: Array<{ size: string; label: string; s: Scores }> = []
  const yokeScores = new Map<number, Scores>()
  for (const [size, corpus] of corpora) {
    const golds = queries.map((q) => resolveGold(q, corpus, aliasMap(corpus)))
    const methods = [
      () => yokeMethod(Finder, corpus, {}),
      () => substring(corpus),
      () => regex(corpus),
      () => plainBm25(corpus),
    ]
    for (const make of methods) {
      const method = make()
      if (METHODS && !METHODS.some((m) => method.label.toLowerCase().startsWith(m))) continue
      const s = score(method, queries, golds)
      if (method.label === 'yoke') yokeScores.set(size, s)
      rows.push({ size: size.toLocaleString('en'), label: method.label, s })
    }
  }
  console.log()
  printTable(rows)
  const kinds = [...yokeScores].map(
    ([size, s]) =>
      `${size.toLocaleString('en')}: ${Object.entries(s.byKind)
        .map(([k, r]) => `${k} ${pct(r)}`)
        .join(', ')}`,
  )
  console.log(`\nyoke recall@5 by kind of query — ${kinds.join('; ')}`)

  const cut = tokensReport(real)
  const at = (n: number) => yokeScores.get(n)
  const all = [...yokeScores.values()]
  const r5 = (n: number) => (at(n) ? pct(at(n)!.r5) : 'not run')
  const goals: Array<[string, boolean]> = [
    [`recall@5 ≥ 90% at 1,000 (${r5(1000)})`, (at(1000)?.r5 ?? 0) >= 0.9],
    [`recall@5 ≥ 80% at 5,000 (${r5(5000)})`, (at(5000)?.r5 ?? 0) >= 0.8],
    [
      `no-match F1 ≥ 0.8 (${all.map((s) => s.nmF1.toFixed(2)).join(' / ')})`,
      all.every((s) => s.nmF1 >= 0.8),
    ],
    [
      `exact names 100% (${all.map((s) => pct(s.exact)).join(' / ')})`,
      all.every((s) => s.exact === 1),
    ],
    [
      `p50 ≤ 5 ms at 10,000 (${at(10000) ? `${at(10000)!.p50.toFixed(2)} ms` : 'not run'})`,
      (at(10000)?.p50 ?? Infinity) <= 5,
    ],
    [`tokens cut ≥ 85% at 300 tools (${pct(cut)})`, cut >= 0.85],
  ]
  console.log('\ngoals:')
  for (const [text, ok] of goals) console.log(`  ${ok ? 'met ' : 'MISS'} ${text}`)
  // what a model then picks is not measured: that needs a key and the network, and this runs offline
  const key = ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY'].find((k) => process.env[k])
  console.log(
    `\nreal-model arm: skipped (${key ? `${key} is set, but this runner stays offline` : 'no ANTHROPIC_API_KEY or OPENAI_API_KEY'}); ` +
      'the numbers above are what a model would be offered, not what it would pick',
  )

  const missesAt = option('--misses')
  if (missesAt) {
    const s = yokeScores.get(Number(missesAt))
    if (!s) throw new Error(`--misses: one of ${SIZES.join(', ')}`)
    console.log(`\nyoke's misses at ${missesAt} tools (${s.misses.length}):`)
    for (const m of s.misses) console.log(`  ${m}`)
  }
  if (flag('--tune')) tune(Finder, new Map([...corpora].filter(([n]) => n <= 5000)), queries)
  console.log(`\n${((performance.now() - started) / 1000).toFixed(1)} s`)
}

await main()
process.exit(0)
