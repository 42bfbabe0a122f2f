/**
 * Reload latency: file write → reload event, p50 and p95 over 50 edits, for (a) one instance's
 * config and (b) a local plugin module. Baseline in the same run: the raw chokidar event for the
 * same kind of write (what any watcher pays before yoke does anything).
 */
import { watch } from 'chokidar'
import { Composition, tapHook } from '../src/index.ts'
import { tempProject } from '../test/helpers/project.ts'
import { percentile, row, timeEdits } from './stats.ts'

const EDITS = 50
const PLUGIN = (v: number) =>
  `export default { name: 'p${v}', apply(ctx, config) { ctx.provide(ctx.key, config) } }\n`
const CONFIG = (n: number) =>
  `plugins:\n  a:\n    use: ./a.mjs\n    config: { n: ${n} }\n  b:\n    use: ./b.mjs\n  c:\n    use: ./a.mjs\n    config: { n: 0 }\n`

async function rawChokidar(
  file: string,
  write: (i: number) => void,
  settle = false,
): Promise<number[]> {
  const awaitWriteFinish = settle ? { stabilityThreshold: 40, pollInterval: 10 } : false
  const watcher = watch(file, { ignoreInitial: true, atomic: 50, awaitWriteFinish })
  await new Promise<void>((r) => watcher.once('ready', () => r()))
  const times = await timeEdits(EDITS, write, () => new Promise((r) => watcher.once('all', r)), 60)
  await watcher.close()
  return times
}

/** Times write → the reload event after which `applied(i)` holds (earlier reloads do not count). */
function yokeReload(
  composition: Composition,
  write: (i: number) => void,
  applied: (i: number) => boolean,
): Promise<number[]> {
  const reloaded = (i: number) =>
    new Promise<void>((resolve) => {
      const untap = tapHook(composition.hooks.reload, 'bench', () => {
        if (!applied(i)) return
        untap()
        resolve()
      })
    })
  return timeEdits(EDITS, write, reloaded, 60)
}

export async function reloadBench() {
  const files = { 'a.mjs': PLUGIN(0), 'b.mjs': PLUGIN(0), 'yoke.config.yaml': CONFIG(0) }
  const project = tempProject(files)
  const baseline = tempProject(files) // the raw watcher writes here, out of yoke's sight
  try {
    const composition = new Composition({ cwd: project.dir, home: project.home })
    await composition.start()
    await composition.watch()
    const running = (key: string) => composition.reconciler.running.get(key)
    const configWrite = (dir: typeof project) => (i: number) =>
      dir.write('yoke.config.yaml', CONFIG(i + 1))
    const moduleWrite = (dir: typeof project) => (i: number) => dir.write('b.mjs', PLUGIN(i + 1))
    const results = [
      [
        '(a) config edit',
        await rawChokidar(baseline.path('yoke.config.yaml'), configWrite(baseline)),
        await rawChokidar(baseline.path('yoke.config.yaml'), configWrite(baseline), true),
        await yokeReload(
          composition,
          configWrite(project),
          (i) => (running('a')?.spec.raw as { n: number }).n === i + 1,
        ),
      ],
      [
        '(b) module edit',
        await rawChokidar(baseline.path('b.mjs'), moduleWrite(baseline)),
        await rawChokidar(baseline.path('b.mjs'), moduleWrite(baseline), true),
        await yokeReload(
          composition,
          moduleWrite(project),
          (i) => running('b')?.fiber?.plugin.name === `p${i + 1}`,
        ),
      ],
    ] as const
    await composition.close()
    console.log(
      `\nreload latency, file write → reload event, ${EDITS} edits each (ms); baselines: a raw chokidar event,`,
    )
    console.log(
      `and one after chokidar's write-finish wait (40 ms of stability), which yoke also waits for, plus a 30 ms debounce`,
    )
    console.log(
      row([
        '',
        'raw p50',
        'p95',
        'finish p50',
        'p95',
        'yoke p50',
        'p95',
        'yoke/finish',
        'goal p50',
      ]),
    )
    for (const [name, raw, finished, yoke] of results) {
      const goal = name.startsWith('(a)') ? 150 : 300
      const p50 = (xs: number[]) => percentile(xs, 50)
      console.log(
        row([
          name,
          p50(raw),
          percentile(raw, 95),
          p50(finished),
          percentile(finished, 95),
          p50(yoke),
          percentile(yoke, 95),
          `${(p50(yoke) / p50(finished)).toFixed(2)}×`,
          `≤ ${goal}`,
        ]),
      )
    }
  } finally {
    project.cleanup()
    baseline.cleanup()
  }
}
