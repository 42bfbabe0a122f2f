/**
 * Tokens per turn with 300 real MCP tools: every schema as the model gets it, against deferral
 * (tool_search as the plugin registers it, plus three loaded tools), counted with o200k_base.
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'
import toolSearchPlugin from '../../plugins/tool-search/index.ts'
import type { Tool } from './corpus.ts'
import { random, SEED } from './grow.ts'

const pct = (x: number) => `${(100 * x).toFixed(1)}%`

/**
 * tool_search as the plugin registers it (its apply, run against a stand-in context that only
 * records the registration).
 */
function toolSearchDefinition(): { name: string; description: string; inputSchema: unknown } {
  let registered: { name: string; description: string; inputSchema: unknown } | undefined
  // a one-shot composition that never searches: the semantic arm is made but never started
  const ctx = {
    runMode: 'once',
    get: () => undefined,
    effect() {},
    setTimeout() {},
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    provide() {},
    control() {},
    runtime: {
      register: (definition: typeof registered) => (registered = definition),
      list: () => [],
    },
  }
  const plugin = toolSearchPlugin as unknown as {
    apply(ctx: unknown, config: unknown): void
    config: { parse(value: unknown): unknown }
  }
  plugin.apply(ctx, plugin.config.parse({}))
  if (!registered) throw new Error('the tool-search plugin registered no tool_search')
  return registered
}

/** What the model gets of a tool per turn. */
const wire = (t: Tool) => ({
  name: t.name,
  description: t.description,
  input_schema: t.inputSchema,
})

export function tokensReport(real: Tool[]) {
  const rand = random(SEED)
  const mcp = real.filter((t) => t.source.startsWith('mcp:'))
  const sample = mcp
    .map((t) => ({ t, k: rand() }))
    .sort((a, b) => a.k - b.k)
    .slice(0, 300)
    .map(({ t }) => t)
  const all = countTokens(JSON.stringify(sample.map(wire)))
  const perTool = sample.map((t) => countTokens(JSON.stringify(wire(t))))
  const mean = perTool.reduce((a, b) => a + b, 0) / perTool.length
  const toolSearch = toolSearchDefinition()
  const search = countTokens(
    JSON.stringify({
      name: toolSearch.name,
      description: toolSearch.description,
      input_schema: toolSearch.inputSchema,
    }),
  )
  const deferred = Math.round(search + 3 * mean)
  const servers = new Set(sample.map((t) => t.server)).size
  console.log(
    `\ntokens per turn, 300 real MCP tools from ${servers} servers (o200k_base, JSON of name, description, input_schema):`,
  )
  console.log(`  every schema: ${all.toLocaleString('en')}`)
  console.log(
    `  deferred: tool_search ${search} + 3 loaded tools × ${Math.round(mean)} = ${deferred.toLocaleString('en')}` +
      `  → ${pct(1 - deferred / all)} fewer`,
  )
  return 1 - deferred / all
}
