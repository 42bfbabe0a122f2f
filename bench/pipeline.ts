/**
 * Pipeline overhead: a no-op native tool called through all nine stages, with one tap on each
 * hook, against a direct call of the same function in the same run. Then throughput with 64
 * concurrent safe calls.
 */
import { Ajv } from 'ajv'
import { ToolRuntime } from '../src/index.ts'
import { tapHook } from '../src/kernel/hooks.ts'
import { budgeted, createAjv } from '../src/lib/schema-safety.ts'
import { row } from './stats.ts'

const N = 20_000

export async function pipelineBench() {
  const rt = new ToolRuntime()
  const noop = (args: Record<string, unknown>) => args.n as unknown as string
  rt.register(
    {
      name: 'noop',
      concurrency: 'safe',
      inputSchema: { type: 'object', properties: { n: { type: 'integer' } } },
      execute: noop,
    },
    'bench',
  )
  tapHook(rt.hooks.preExecute, 'pre', async (d) => d)
  tapHook(rt.hooks.around, 'around', async (next) => next)
  tapHook(rt.hooks.postExecute, 'post', async (d) => d)
  tapHook(rt.hooks.result, 'result', async () => {})
  rt.guard(() => undefined)

  const direct = async () => {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < N; i++) await noop({ n: i })
    return Number(process.hrtime.bigint() - t0) / N
  }
  const piped = async () => {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < N; i++) await rt.call('noop', { n: i })
    return Number(process.hrtime.bigint() - t0) / N
  }
  // alternate the two, 7 rounds each, and keep the medians: one GC pause must not decide the figure
  const rounds: Array<[number, number]> = []
  for (let r = 0; r < 8; r++) rounds.push([await direct(), await piped()])
  rounds.shift() // warm-up
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1]
  const d = median(rounds.map((x) => x[0]))
  const p = median(rounds.map((x) => x[1]))
  console.log(
    `\npipeline overhead, ${N} sequential calls of a no-op tool (one tap on every hook, one guard), median of 7 rounds`,
  )
  console.log(row(['', 'direct ns/call', 'pipeline ns/call', 'added µs/call', 'goal']))
  console.log(row(['sequential', d, p, ((p - d) / 1000).toFixed(2), '≤ 5 µs']))

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
  const directPerSecond = 1e9 / d
  console.log(
    row([
      '64 concurrent',
      `${Math.round(directPerSecond).toLocaleString()}/s`,
      `${Math.round(perSecond).toLocaleString()}/s`,
      '',
      '',
    ]),
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
