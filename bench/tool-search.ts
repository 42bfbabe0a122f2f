/**
 * tool_search at 10,000 tools: real calls of the `tool_search` tool through the runtime's pipeline
 * (a composed kernel: the runtime, policy and tool-search, semantic off: this is the words' path a
 * search never waits past), with varied queries (bench/eval-tools' queries), against minisearch's
 * own search over the same documents in the same run (the floor: the index alone, no pipeline, no
 * tool set). The tools are bench/eval-tools' corpus grown to 10,000 (real MCP servers' tools and
 * their clones on other vendors). Then the cost of one tools.change at 10,000 tools: one tool
 * registered, then removed, each followed by a search (the change is seen by the next search), and
 * a search after someone listed the tools (an agent loop's turn).
 *
 *   node --import tsx --conditions=yoke-source bench/tool-search.ts
 */
import { pathToFileURL } from 'node:url'
import MiniSearch from 'minisearch'
import policyPlugin from '../plugins/policy/index.ts'
import { paramsOf } from '../plugins/tool-search/finder.ts'
import toolSearchPlugin from '../plugins/tool-search/index.ts'
import { processTerm, words } from '../plugins/tool-search/rank.ts'
import {
  checkSchema,
  Kernel,
  runtimePlugin,
  toPlugin,
  validateConfig,
  type Plugin,
} from '../src/index.ts'
import type { ToolDefinition, ToolRuntime } from '../src/index.ts'
import { readFixtures, realCorpus } from './eval-tools/corpus.ts'
import { grow } from './eval-tools/grow.ts'
import { readQueries } from './eval-tools/queries.ts'
import { figure, median, percentile, ratioSpread, row } from './stats.ts'

const SIZE = 10_000
const ROUNDS = 7
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/

/**
 * The eval's corpus grown past `size`, as tool definitions (a body that does nothing); the few
 * whose name or schema the runtime refuses (a schema nested past 10 levels) are left out.
 */
function definitions(size: number): ToolDefinition[] {
  return grow(realCorpus(), readFixtures(), size + 600)
    .filter((t) => TOOL_NAME.test(t.name) && !checkSchema({ type: 'object', ...t.inputSchema }))
    .map((t) => ({
      name: t.name,
      description: t.description,
      source: t.source,
      inputSchema: { type: 'object', ...t.inputSchema },
      concurrency: 'safe',
      ...(t.annotations && { annotations: t.annotations }),
      execute: () => 'ok',
    }))
}

/** A kernel with the runtime, policy and tool-search (semantic off); the raw runtime to call it. */
async function compose(search: unknown): Promise<{ kernel: Kernel; rt: ToolRuntime }> {
  const kernel = new Kernel()
  kernel.spawn(toPlugin(runtimePlugin) as Plugin, {}, { key: 'yoke:runtime' })
  for (const [key, definition, config] of [
    ['policy', policyPlugin, { askRisks: ['high', 'critical'] }],
    ['tool-search', search, { semantic: 'off' }],
  ] as const) {
    const plugin = toPlugin(definition as Parameters<typeof toPlugin>[0]) as Plugin
    const valid = validateConfig(plugin, config)
    if (!('value' in valid)) throw new Error(`${key}: its config does not validate`)
    kernel.spawn(plugin, valid.value, { key })
  }
  await kernel.settled()
  const rt = kernel.services.get('runtime')!.value as unknown as ToolRuntime
  return { kernel, rt }
}

/**
 * minisearch over the same documents, with the options tool-search's index gives it (its words,
 * stopwords and stems, boosts, prefixes, typos only for unknown words): the floor.
 */
function floorIndex(tools: readonly ToolDefinition[]) {
  const fields = ['name', 'title', 'description', 'params', 'source']
  const index = new MiniSearch({ fields, tokenize: words, processTerm })
  const docs = tools.map((t) => ({
    id: t.name,
    name: t.name,
    title: t.title ?? '',
    description: t.description ?? '',
    params: paramsOf(t.inputSchema)
      .map((p) => `${p.name} ${p.description ?? ''}`)
      .join(' '),
    source: (t.source ?? '').replace(/^(mcp|exec):/, ''),
  }))
  index.addAll(docs)
  const known = new Set(
    docs.flatMap((d) => fields.flatMap((f) => words(d[f as keyof typeof d]).map(processTerm))),
  )
  return (query: string) =>
    index.search(query, {
      boost: { name: 3, title: 2, description: 1, params: 0.7, source: 1.5 },
      prefix: (term) => term.length >= 3,
      fuzzy: (term) => (term.length >= 5 && !known.has(term) ? 0.2 : false),
      combineWith: 'OR',
    }).length
}

/** Each query's duration and CPU time (ms), in order. */
async function pass(queries: string[], search: (q: string) => unknown) {
  const wall: number[] = []
  const cpu: number[] = []
  for (const q of queries) {
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    await search(q)
    wall.push(performance.now() - t0)
    const c = process.cpuUsage(c0)
    cpu.push((c.user + c.system) / 1000)
  }
  return { wall, cpu }
}

/**
 * The composition with `size` tools registered, and how long registering them took (ms);
 * `search`: the tool-search plugin (another version of it, to compare).
 */
export async function composedWith(size: number, search: unknown = toolSearchPlugin) {
  const { kernel, rt } = await compose(search)
  const tools: ToolDefinition[] = []
  const t0 = performance.now()
  for (const def of definitions(size)) {
    if (tools.length === size) break
    try {
      rt.register(def, 'bench')
      tools.push(def)
    } catch {
      // a schema ajv refuses (an empty enum): the next tool stands in
    }
  }
  return { kernel, rt, tools, registering: performance.now() - t0 }
}

export async function toolSearchBench(): Promise<void> {
  const queries = readQueries().map((q) => q.q)
  const { kernel, rt, tools, registering } = await composedWith(SIZE)
  const floor = floorIndex(tools)
  const call = async (query: string) => {
    const result = await rt.call('tool_search', { query }, { caller: 'bench' })
    if (!result.ok) throw new Error(`tool_search failed: ${JSON.stringify(result.error)}`)
  }
  // a warm-up pass of each, then rounds interleaved: floor, then the real call, each over every query
  await pass(queries, floor)
  await pass(queries, call)
  const rounds: Array<Record<'floor' | 'call', Awaited<ReturnType<typeof pass>>>> = []
  for (let r = 0; r < ROUNDS; r++)
    rounds.push({ floor: await pass(queries, floor), call: await pass(queries, call) })
  const p = (key: 'floor' | 'call', n: number, of: 'wall' | 'cpu' = 'wall') =>
    rounds.map((r) => percentile(r[key][of], n))
  const p50 = median(p('call', 50))
  const floor50 = median(p('floor', 50))
  console.log(
    `\ntool_search at ${tools.length.toLocaleString()} tools (registered in ${(registering / 1000).toFixed(1)} s), ${queries.length} queries × ${ROUNDS} rounds, medians of the rounds`,
  )
  console.log(row(['', 'p50 ms', 'p95 ms', 'CPU p50 ms', 'CPU p95 ms', 'p50 ÷ floor']))
  for (const key of ['floor', 'call'] as const)
    console.log(
      row([
        key === 'floor' ? 'minisearch alone' : 'tool_search call',
        median(p(key, 50)),
        median(p(key, 95)),
        median(p(key, 50, 'cpu')),
        median(p(key, 95, 'cpu')),
        key === 'floor'
          ? '1.00'
          : `${(p50 / floor50).toFixed(2)} (${ratioSpread(p('call', 50), p('floor', 50))})`,
      ]),
    )
  figure({
    name: 'tool_search p50 at 10,000 tools ms',
    value: p50,
    goal: 5,
    better: 'lower',
    unit: ' ms',
    spread: `${Math.min(...p('call', 50)).toFixed(2)}–${Math.max(...p('call', 50)).toFixed(2)}`,
    baseline: `minisearch alone p50 ${floor50.toFixed(2)} ms`,
  })
  await changeCost(rt, call)
  await kernel.dispose()
}

/** One tool registered, searched, removed, searched: the change's cost and the next search's. */
async function changeCost(rt: ToolRuntime, call: (query: string) => Promise<void>) {
  const add: number[] = []
  const remove: number[] = []
  const next: number[] = []
  const listed: number[] = []
  for (let i = 0; i < 50; i++) {
    const def: ToolDefinition = {
      name: `bench_added_${i}`,
      description: `A tool added at run time, number ${i}, that converts a quantity of widgets`,
      inputSchema: { type: 'object', properties: { widgets: { type: 'integer' } } },
      execute: () => 'ok',
    }
    let t0 = performance.now()
    const unregister = rt.register(def, 'bench-change')
    add.push(performance.now() - t0)
    t0 = performance.now()
    await call('convert widgets')
    next.push(performance.now() - t0)
    t0 = performance.now()
    await unregister()
    remove.push(performance.now() - t0)
    await call('convert widgets')
    // an agent loop lists the scope at each turn: the search after it takes what it listed
    rt.list()
    t0 = performance.now()
    await call('convert widgets')
    listed.push(performance.now() - t0)
  }
  console.log(`\none tools.change at ${SIZE.toLocaleString()} tools (50 times each), ms`)
  console.log(row(['', 'p50', 'p95']))
  console.log(row(['register one', percentile(add, 50), percentile(add, 95)]))
  console.log(row(['next search', percentile(next, 50), percentile(next, 95)]))
  console.log(row(['remove one', percentile(remove, 50), percentile(remove, 95)]))
  console.log(row(['search after list', percentile(listed, 50), percentile(listed, 95)]))
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await toolSearchBench()
  process.exit(0)
}
