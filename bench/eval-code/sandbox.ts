/**
 * What code mode costs beside the model: a sandbox start (a run_code that returns at once, with a
 * warm worker and with a new one) against a direct pipeline call, and a nested call (`await
 * tools.noop({})` in a program) against a direct pipeline call of the same tool. Rounds are
 * interleaved; wall and CPU (process.cpuUsage: every thread, the worker's too) per call.
 */
import { GLOBAL } from 'yoke'
import { QuickJsExecutor } from '../../plugins/code-mode/quickjs.ts'
import { figure, median, ratioSpread, row } from '../stats.ts'
import type { EvalHarness } from './harness.ts'

const NESTED = 50
const ROUNDS = 7

async function timed(fn: () => Promise<unknown>): Promise<{ ms: number; cpu: number }> {
  const cpu = process.cpuUsage()
  const t = performance.now()
  await fn()
  const used = process.cpuUsage(cpu)
  return { ms: performance.now() - t, cpu: (used.user + used.system) / 1000 }
}

export async function sandboxCosts(h: EvalHarness): Promise<void> {
  const { rt } = h
  const remove = rt.register(
    { name: 'noop', concurrency: 'safe', execute: () => 'ok' },
    'eval',
    GLOBAL,
  )
  const run = async (code: string) => {
    const r = await rt.call('run_code', { code })
    if (!r.ok) throw new Error(`run_code failed: ${JSON.stringify(r.error)}`)
  }
  const loop = `for (let i = 0; i < ${NESTED}; i++) await tools.noop({})`
  const direct = async () => {
    for (let i = 0; i < NESTED; i++) await rt.call('noop', {})
  }
  const samples = {
    start: [] as number[],
    startCpu: [] as number[],
    cold: [] as number[],
    one: [] as number[],
    nested: [] as number[],
    nestedCpu: [] as number[],
    direct: [] as number[],
    directCpu: [] as number[],
  }
  try {
    await run('return 1') // the first worker
    for (let r = 0; r < ROUNDS; r++) {
      const one = await timed(() => rt.call('noop', {}))
      const start = await timed(() => run('return 1'))
      const fresh = new QuickJsExecutor(0)
      const cold = await timed(() =>
        fresh.execute(
          'return 1',
          {
            call: async () => ({ value: null }),
            declarations: () => '',
            signal: new AbortController().signal,
          },
          { memoryBytes: 64 << 20, stackBytes: 256 << 10, cpuMs: 5000, outputBytes: 65536 },
        ),
      )
      fresh.close()
      const nested = await timed(() => run(loop))
      const baseline = await timed(direct)
      samples.one.push(one.ms)
      samples.start.push(start.ms)
      samples.startCpu.push(start.cpu)
      samples.cold.push(cold.ms)
      // a nested call's share: the program's time less an empty program's, per call
      samples.nested.push(Math.max(0, nested.ms - start.ms) / NESTED)
      samples.nestedCpu.push(Math.max(0, nested.cpu - start.cpu) / NESTED)
      samples.direct.push(baseline.ms / NESTED)
      samples.directCpu.push(baseline.cpu / NESTED)
    }
  } finally {
    await remove()
  }
  const m = (xs: number[]) => median(xs).toFixed(3)
  console.log(`\nsandbox costs (${ROUNDS} interleaved rounds, medians)`)
  console.log(row(['what', 'wall ms', 'cpu ms', 'against']))
  console.log(row(['direct pipeline call (noop)', m(samples.one), '', '']))
  console.log(
    row([
      'run_code "return 1", warm worker',
      m(samples.start),
      m(samples.startCpu),
      `${(median(samples.start) / median(samples.one)).toFixed(0)}× a direct call`,
    ]),
  )
  console.log(row(['sandbox on a new worker', m(samples.cold), '', '']))
  console.log(
    row([
      `nested call (of ${NESTED} in a program)`,
      m(samples.nested),
      m(samples.nestedCpu),
      `ratio ${ratioSpread(samples.nested, samples.direct)}`,
    ]),
  )
  console.log(
    row([`direct call (${NESTED} in a row)`, m(samples.direct), m(samples.directCpu), '']),
  )
  figure({
    name: 'code mode: run_code start, warm worker',
    value: median(samples.start),
    goal: 25,
    better: 'lower',
    unit: 'ms',
    spread: `${Math.min(...samples.start).toFixed(1)}–${Math.max(...samples.start).toFixed(1)}`,
  })
  figure({
    name: 'code mode: nested call overhead',
    value: median(samples.nested),
    goal: 1,
    better: 'lower',
    unit: 'ms',
    spread: `${Math.min(...samples.nested).toFixed(3)}–${Math.max(...samples.nested).toFixed(3)}`,
    baseline: 'direct pipeline call',
  })
}
