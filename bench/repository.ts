// What running a dynamic plugin in a worker costs, against the same tool registered in-process:
// one call through the whole pipeline (interleaved rounds; median, p95 and the spread of the
// rounds' medians), and a version's start (worker + import + apply) against an in-process apply.
// `node --import tsx --conditions=yoke-source bench/repository.ts`
import policy from '../plugins/policy/index.ts'
import repository from '../plugins/repository/index.ts'
import {
  Kernel,
  runtimePlugin,
  toPlugin,
  validateConfig,
  type Plugin,
  type ToolRuntime,
} from '../src/index.ts'
import { median, percentile, row, timed } from './stats.ts'

const SOURCE = (
  name: string,
) => `export default { name: '${name}', inject: ['runtime'], apply(ctx) {
  ctx.runtime.register({ name: '${name}', concurrency: 'safe', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, execute: (a) => String(a.text).toUpperCase() })
} }`

export async function repositoryBench(rounds = 7, perRound = 300): Promise<void> {
  const kernel = new Kernel()
  kernel.spawn(toPlugin(runtimePlugin) as Plugin, {}, { key: 'yoke:runtime' })
  for (const [key, plugin] of [
    ['policy', policy],
    ['repository', repository],
  ] as const) {
    const p = toPlugin(plugin) as Plugin
    kernel.spawn(p, (validateConfig(p, {}) as { value: unknown }).value, { key })
  }
  await kernel.settled()
  const rt = kernel.services.get('runtime')!.value as ToolRuntime
  rt.approvals.register({ name: 'bench', ask: async () => 'allow-once' })
  rt.register(
    {
      name: 'inproc',
      concurrency: 'safe',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      execute: (a) => String(a.text).toUpperCase(),
    },
    'bench',
  )
  const starts: number[] = []
  for (let i = 0; i < 5; i++) {
    const name = `dyn${i}`
    await rt.call('repository_define', { name, purpose: 'bench', source: SOURCE(name) })
    starts.push(await timed(() => rt.call('repository_run', { plugin: name })))
  }
  const applies: number[] = []
  for (let i = 0; i < 5; i++) {
    const p = toPlugin({
      name: `in${i}`,
      inject: ['runtime'],
      apply: (ctx: any) => ctx.runtime.register({ name: `in${i}`, execute: () => 'x' }),
    }) as Plugin
    applies.push(
      await timed(async () => {
        kernel.spawn(p, {}, { key: `in${i}` })
        await kernel.settled()
      }),
    )
  }
  const rows = { inproc: [] as number[], worker: [] as number[] }
  const medians = { inproc: [] as number[], worker: [] as number[] }
  for (let r = 0; r < rounds; r++)
    for (const [kind, tool] of (r % 2
      ? [
          ['worker', 'dyn0'],
          ['inproc', 'inproc'],
        ]
      : [
          ['inproc', 'inproc'],
          ['worker', 'dyn0'],
        ]) as Array<['inproc' | 'worker', string]>) {
      const times: number[] = []
      for (let i = 0; i < perRound; i++)
        times.push(await timed(() => rt.call(tool, { text: 'hello' })))
      rows[kind].push(...times)
      medians[kind].push(median(times))
    }
  const spread = (xs: number[]) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`
  console.log('\nrepository: a dynamic plugin in a worker vs in-process (µs)')
  console.log(row(['', 'median', 'p95', 'round medians']))
  for (const kind of ['inproc', 'worker'] as const)
    console.log(
      row([`call ${kind}`, median(rows[kind]), percentile(rows[kind], 95), spread(medians[kind])]),
    )
  console.log(
    `call ratio worker/in-process: ${(median(rows.worker) / median(rows.inproc)).toFixed(2)}×`,
  )
  console.log(
    row(['start worker', median(starts), percentile(starts, 95), `${starts.length} runs`]),
  )
  console.log(
    row(['start in-process', median(applies), percentile(applies, 95), `${applies.length} runs`]),
  )
  console.log(
    `start ratio worker/in-process: ${(median(starts) / median(applies)).toFixed(1)}×` +
      ' (run: approval answered at once, worker start, import, apply; define is not timed)',
  )
  await kernel.dispose()
}

if (import.meta.url === `file://${process.argv[1]}`)
  await repositoryBench().then(() => process.exit(0))
