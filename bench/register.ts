/**
 * Registration at scale: one plugin registers 10,000 tools (as an MCP server with thousands of
 * tools, or a dynamic plugin, would: varied small JSON schemas) into a composition of the default
 * preset (tool-search, capabilities, metrics and the rest loaded). It times the whole, the first
 * search and call after it, and the longest the event loop stalled while the tools registered.
 */
import { toPlugin, type Plugin } from '../src/kernel/plugin.ts'
import type { ToolDefinition } from '../src/runtime/types.ts'
import { defaultPreset, figure, row } from './stats.ts'

const COUNT = 10_000
const WORDS = ['file', 'issue', 'user', 'repo', 'page', 'event', 'order', 'note', 'task', 'mail']
const VERBS = ['get', 'list', 'create', 'update', 'delete', 'search', 'sync', 'watch']

/** The i-th tool: a small schema whose shape varies with i, as real servers' do. */
export function manyTool(i: number): ToolDefinition {
  const noun = WORDS[i % WORDS.length]!
  const verb = VERBS[(i >> 3) % VERBS.length]!
  const properties: Record<string, unknown> = { id: { type: 'string', description: `the ${noun}` } }
  if (i % 2) properties.limit = { type: 'integer', minimum: 1, maximum: 100 + (i % 7) }
  if (i % 3 === 0) properties.tags = { type: 'array', items: { type: 'string' } }
  if (i % 5 === 0) properties.state = { type: 'string', enum: ['open', 'closed', `s${i % 11}`] }
  if (i % 7 === 0) properties.filter = { type: 'object', properties: { since: { type: 'string' } } }
  return {
    name: `${verb}_${noun}_${i}`,
    description: `${verb} a ${noun} (tool ${i} of a large server)`,
    source: 'mcp:many',
    concurrency: 'safe',
    inputSchema: { type: 'object', properties, required: ['id'] },
    execute: (args) => `${verb} ${noun} ${String(args.id)}`,
  }
}

/**
 * The longest gap between ticks of a 1 ms interval: a stall as the loop's users feel it (wall), and
 * the same gaps counted by the CPU this process spent in them (cpu): on a loaded machine a gap is
 * also the time the OS gave other processes, which the CPU count leaves out.
 */
function stallProbe() {
  let last = performance.now()
  let lastCpu = cpuMs()
  let wall = 0
  let cpu = 0
  const tick = () => {
    const now = performance.now()
    const used = cpuMs()
    wall = Math.max(wall, now - last - 1)
    cpu = Math.max(cpu, Math.min(now - last, used - lastCpu) - 1)
    last = now
    lastCpu = used
  }
  const timer = setInterval(tick, 1)
  return () => {
    tick() // the gap that ends now counts too
    clearInterval(timer)
    return { wall, cpu }
  }
}

function cpuMs() {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

type Registrar = {
  register(def: ToolDefinition): unknown
  registerAll(defs: Iterable<ToolDefinition>): Promise<unknown>
}

/** One composition of the default preset; `count` tools registered by one plugin, one way. */
async function registerOnce(count: number, batched: boolean) {
  const { project, composition } = defaultPreset()
  try {
    if (!(await composition.start()).ok)
      console.error('register bench: the preset loaded with errors')
    const rt = composition.runtime!
    const before = rt.list().length
    await new Promise((r) => setTimeout(r, 50))
    const defs = Array.from({ length: count }, (_, i) => manyTool(i))
    const stop = stallProbe()
    const t0 = performance.now()
    composition.kernel.spawn(
      toPlugin({
        name: 'many',
        inject: ['runtime'],
        async apply(ctx: { runtime: Registrar }) {
          if (batched) await ctx.runtime.registerAll(defs)
          else for (const def of defs) ctx.runtime.register(def)
        },
      }) as Plugin,
      {},
      { key: 'many' },
    )
    await composition.kernel.settled()
    const seconds = (performance.now() - t0) / 1000
    const stall = stop() // while they registered; what follows is timed on its own
    const listed = rt.list().length - before
    const t1 = performance.now()
    const call = await rt.call(manyTool(count - 1).name, { id: 'x' })
    const firstCallMs = performance.now() - t1
    if (listed !== count || !call.ok)
      throw new Error(`register bench: ${listed} of ${count} tools listed, call ${call.status}`)
    return { seconds, stall, firstCallMs }
  } finally {
    await composition.close()
    project.cleanup()
  }
}

export async function registerBench(count = COUNT) {
  const one = await registerOnce(count, false)
  const all = await registerOnce(count, true)
  console.log(
    `\nregistering ${count.toLocaleString()} tools from one plugin (default preset loaded)`,
  )
  console.log(row(['', 'total s', 'stall ms (cpu)', 'stall ms (wall)', 'first call ms', 'goal']))
  const cells = (r: typeof one) => [r.seconds, r.stall.cpu, r.stall.wall, r.firstCallMs]
  console.log(row(['register() each', ...cells(one), '']))
  figure({ name: 'register 10,000 tools s', value: all.seconds, goal: 2, better: 'lower' })
  figure({
    name: 'register max loop stall ms',
    value: all.stall.cpu,
    goal: 50,
    better: 'lower',
    baseline: `the CPU spent in the longest gap between 1 ms ticks (wall: ${all.stall.wall.toFixed(0)} ms)`,
  })
  console.log(row(['registerAll()', ...cells(all), '≤ 2 s, ≤ 50 ms']))
}

if (import.meta.url === `file://${process.argv[1]}`)
  await registerBench(Number(process.argv[2] ?? COUNT)).then(() => process.exit(0))
