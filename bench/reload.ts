/**
 * Reload latency: file write → reload event, p50 and p95 over 50 edits, for (a) one instance's
 * config and (b) a local plugin module. Baseline in the same run: the raw chokidar event for the
 * same kind of write (what any watcher pays before yoke does anything).
 */
import { watch } from 'chokidar'
import { Composition } from '../src/index.ts'
import { tempProject } from '../test/helpers/project.ts'
import { percentile, row, sleep } from './stats.ts'

const EDITS = 50
const PLUGIN = (v: number) => `export default { name: 'p${v}', apply(ctx, config) { ctx.provide(ctx.key, config) } }\n`
const CONFIG = (n: number) => `plugins:\n  a:\n    use: ./a.mjs\n    config: { n: ${n} }\n  b:\n    use: ./b.mjs\n  c:\n    use: ./a.mjs\n    config: { n: 0 }\n`

async function rawChokidar(file: string, write: (i: number) => void): Promise<number[]> {
  const watcher = watch(file, { ignoreInitial: true, atomic: 50 })
  await new Promise<void>((r) => watcher.once('ready', () => r()))
  const times: number[] = []
  for (let i = 0; i < EDITS; i++) {
    const seen = new Promise((r) => watcher.once('all', r))
    const t0 = performance.now()
    write(i)
    await seen
    times.push(performance.now() - t0)
    await sleep(60)
  }
  await watcher.close()
  return times
}

async function yokeReload(composition: Composition, write: (i: number) => void): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < EDITS; i++) {
    const reloaded = new Promise<void>((resolve) => {
      const tap = (event: { restarted: string[] }) => {
        if (!event.restarted.length) return
        const at = composition.hooks.reload.taps.findIndex((t) => t.fn === tap)
        composition.hooks.reload.taps.splice(at, 1)
        ;(composition.hooks.reload as any)._resetCompilation()
        resolve()
      }
      composition.hooks.reload.tap('bench', tap)
    })
    const t0 = performance.now()
    write(i)
    await reloaded
    times.push(performance.now() - t0)
    await sleep(60)
  }
  return times
}

export async function reloadBench() {
  const project = tempProject({ 'a.mjs': PLUGIN(0), 'b.mjs': PLUGIN(0), 'yoke.config.yaml': CONFIG(0) })
  try {
    const composition = new Composition({ cwd: project.dir, home: project.home })
    await composition.start()
    await composition.watch()
    const configWrite = (i: number) => project.write('yoke.config.yaml', CONFIG(i + 1))
    const moduleWrite = (i: number) => project.write('b.mjs', PLUGIN(i + 1))
    const results = [
      ['(a) config edit', await rawChokidar(project.path('yoke.config.yaml'), configWrite), await yokeReload(composition, configWrite)],
      ['(b) module edit', await rawChokidar(project.path('b.mjs'), moduleWrite), await yokeReload(composition, moduleWrite)],
    ] as const
    await composition.close()
    console.log(`\nreload latency, file write → reload event, ${EDITS} edits each (ms)`)
    console.log(row(['', 'raw chokidar p50', 'p95', 'yoke reload p50', 'p95', 'ratio p50', 'goal p50']))
    for (const [name, raw, yoke] of results) {
      const goal = name.startsWith('(a)') ? 150 : 300
      console.log(row([name, percentile(raw, 50), percentile(raw, 95), percentile(yoke, 50), percentile(yoke, 95), `${(percentile(yoke, 50) / percentile(raw, 50)).toFixed(1)}×`, `≤ ${goal}`]))
    }
  } finally {
    project.cleanup()
  }
}
