/**
 * Pipeline overhead: a no-op native tool called through all nine stages against a direct call of
 * the same function, in rounds that interleave: no taps; one tap on each hook and one guard; and
 * the default preset's plugins loaded (capabilities, policy, tool-search, … with their taps). CPU
 * time per call (process.cpuUsage) is the figure, steadier than wall time on a loaded machine.
 * Then throughput with 64 concurrent safe calls.
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Ajv } from 'ajv'
import * as source from '../src/index.ts'
import { guardProcess, toPlugin, type Plugin, type ToolRuntime } from '../src/index.ts'
import type { ToolDefinition } from '../src/runtime/types.ts'
import { budgeted, createAjv } from '../src/lib/schema-safety.ts'
import { buildOnce, defaultPreset, figure, median, row } from './stats.ts'

const N = 20_000
const ROUNDS = 9
const noop = (args: Record<string, unknown>) => args.n as unknown as string
const noopTool: ToolDefinition = {
  name: 'noop',
  concurrency: 'safe',
  inputSchema: { type: 'object', properties: { n: { type: 'integer' } } },
  execute: noop,
}
type Caller = { call(name: string, args: unknown): Promise<unknown> }

type Lib = Pick<typeof source, 'ToolRuntime' | 'tapHook'>

function bareRuntime(taps: boolean, { ToolRuntime, tapHook }: Lib = source): ToolRuntime {
  const rt = new ToolRuntime()
  rt.register(noopTool, 'bench')
  if (taps) {
    tapHook(rt.hooks.preExecute, 'pre', async (d) => d)
    tapHook(rt.hooks.around, 'around', async (next) => next)
    tapHook(rt.hooks.postExecute, 'post', async (d) => d)
    tapHook(rt.hooks.result, 'result', async () => {})
    rt.guard(() => undefined)
  }
  return rt
}

/** The default preset composed in a scratch project, the tool registered by a plugin of its own. */
async function defaultPresetTool() {
  const { project, composition } = defaultPreset()
  await composition.start()
  composition.kernel.spawn(
    toPlugin({
      name: 'noop',
      inject: ['runtime'],
      apply: (ctx: { runtime: { register(d: ToolDefinition): unknown } }) =>
        void ctx.runtime.register(noopTool),
    }) as Plugin,
    {},
    { key: 'noop' },
  )
  await composition.kernel.settled()
  return {
    rt: composition.runtime!,
    close: async () => (await composition.close(), project.cleanup()),
  }
}

/** CPU and wall µs per call of `n` sequential calls. */
async function measure(run: (i: number) => unknown): Promise<{ cpu: number; wall: number }> {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < N; i++) await run(i)
  const c = process.cpuUsage(c0)
  return { cpu: (c.user + c.system) / N, wall: ((performance.now() - t0) * 1000) / N }
}

/** Each caller's CPU and wall µs per call, over ROUNDS rounds that interleave the callers. */
async function interleaved(rows: Array<[string, Caller | undefined]>) {
  const cpu = rows.map(() => [] as number[])
  const wall = rows.map(() => [] as number[])
  for (let r = 0; r <= ROUNDS; r++)
    for (const [k, [, rt]] of rows.entries()) {
      const m = await measure(rt ? (i) => rt.call('noop', { n: i }) : (i) => noop({ n: i }))
      if (r === 0) continue // warm-up
      cpu[k]!.push(m.cpu)
      wall[k]!.push(m.wall)
    }
  return { cpu, wall }
}

/**
 * The runtime as the package ships it (dist/, built now): what users run. The source rows run
 * under tsx, whose esbuild keeps function names by wrapping every closure made per call in a
 * `__name` call that the build does not have.
 */
async function built(): Promise<Lib> {
  const root = join(import.meta.dirname, '..')
  buildOnce()
  return import(pathToFileURL(join(root, 'dist/src/index.js')).href) as Promise<Lib>
}

export async function pipelineBench() {
  const shipped = await built()
  const preset = await defaultPresetTool()
  const rows: Array<[string, Caller | undefined]> = [
    ['direct', undefined],
    ['0 taps', bareRuntime(false, shipped)],
    ['1 tap per stage', bareRuntime(true, shipped)],
    ['0 taps, source (tsx)', bareRuntime(false)],
    ['1 tap per stage, source (tsx)', bareRuntime(true)],
    ['default preset', preset.rt],
  ]
  const { cpu, wall } = await interleaved(rows)
  // added per call in each round, against the direct call of the same round
  const added = (xs: number[][], k: number) => xs[k]!.map((x, r) => x - xs[0]![r]!)
  const spread = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`
  console.log(
    `\npipeline overhead: ${N} sequential calls of a no-op tool, CPU and wall µs added per call over a direct call, median of ${ROUNDS} interleaved rounds (spread: min–max); the runtime as built (dist/), and from source under tsx`,
  )
  console.log(row(['', 'CPU added µs', 'CPU spread', 'wall added µs', 'wall spread', 'goal']))
  const goals: Record<string, number | undefined> = { '0 taps': 1.5, '1 tap per stage': 2.5 }
  for (const [k, [label]] of rows.entries()) {
    if (k === 0) continue
    const c = added(cpu, k)
    const goal = goals[label]
    const value = median(c)
    if (goal !== undefined)
      figure({
        name: `pipeline added µs/call, ${label}`,
        value,
        goal,
        better: 'lower',
        unit: ' µs',
        spread: spread(c),
        baseline: 'a direct call of the same function (the runtime as built)',
      })
    const w = added(wall, k)
    const cells = [value.toFixed(2), spread(c), median(w).toFixed(2), spread(w)]
    console.log(row([label, ...cells, goal === undefined ? '' : `≤ ${goal} µs`]))
  }
  // as the CLI runs: under the process guard, plugin code runs in a fault context (AsyncLocalStorage),
  // and promise hooks run for every promise in the process
  const unguard = guardProcess()
  const guarded = await defaultPresetTool()
  const under = await interleaved([rows[0]!, rows[3]!, ['default preset', guarded.rt]])
  unguard()
  for (const [k, label] of ['0 taps, source (tsx)', 'default preset'].entries()) {
    const c = added(under.cpu, k + 1)
    const w = added(under.wall, k + 1)
    console.log(
      row([`${label}, guarded`, median(c).toFixed(2), spread(c), median(w).toFixed(2), spread(w)]),
    )
  }
  await Promise.all([preset.close(), guarded.close()])

  const rt = rows[2]![1] as ToolRuntime
  const concurrent = async (width: number, calls: number) => {
    const t0 = performance.now()
    let next = 0
    await Promise.all(
      Array.from({ length: width }, async () => {
        while (next < calls) await rt.call('noop', { n: next++ })
      }),
    )
    return calls / ((performance.now() - t0) / 1000)
  }
  rt.configure({ maxConcurrent: 64 })
  await concurrent(64, 5_000)
  const perSecond = await concurrent(64, N)
  console.log(
    row(['64 concurrent, 1 tap per stage', `${Math.round(perSecond).toLocaleString()}/s`]),
  )
  patternBench()
}

/** Validation with two ordinary patterns: re2js (what the runtime uses) against ajv's RegExp. */
function patternBench() {
  const schema = {
    type: 'object',
    properties: {
      id: { type: 'string', pattern: '^[a-z0-9-]+$' },
      mail: { type: 'string', pattern: '^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$' },
    },
  }
  const args = { id: 'my-tool-name-42', mail: 'someone@example.com' }
  const perCall = (validate: (data: unknown) => boolean) => {
    for (let i = 0; i < 5_000; i++) validate(args)
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < N; i++) if (!validate(args)) throw new Error('invalid')
    return Number(process.hrtime.bigint() - t0) / N
  }
  const plain = perCall(new Ajv().compile(schema))
  const linear = perCall(budgeted(createAjv().compile(schema)))
  console.log(`\nargument validation with two patterns, ${N} calls`)
  console.log(row(['', 'RegExp ns/call', 're2js ns/call', 'ratio', '']))
  console.log(row(['patterns', plain, linear, `${(linear / plain).toFixed(1)}×`, '']))
}

if (import.meta.url === `file://${process.argv[1]}`)
  await pipelineBench().then(() => process.exit(0))
