/**
 * Reload latency: file write → reload done (yoke's reload hook, with the edit applied), against a
 * raw chokidar event for the same kind of write in the same run (no write-finish wait, no
 * debounce: what any watcher pays before doing anything). The two are interleaved edit by edit,
 * over rounds, for three kinds of edit: a config written in place (writeFileSync: truncate, then
 * write), a config saved the way editors do (a temp file renamed over it), and a local plugin
 * module written in place. Each round's p50 gives the spread.
 */
import { watch } from 'chokidar'
import { Composition, tapHook } from '../src/index.ts'
import { tempProject } from '../test/helpers/project.ts'
import { figure, median, percentile, ratioSpread, row, sleep } from './stats.ts'

const ROUNDS = 5
const PER_ROUND = 10
const GAP_MS = 80 // quiet after each edit: more than chokidar's 50 ms change throttle
const PLUGIN = (v: number) =>
  `export default { name: 'p${v}', apply(ctx, config) { ctx.provide(ctx.key, config) } }\n`
const CONFIG = (n: number) =>
  `plugins:\n  a:\n    use: ./a.mjs\n    config: { n: ${n} }\n  b:\n    use: ./b.mjs\n  c:\n    use: ./a.mjs\n    config: { n: 0 }\n`

type Project = ReturnType<typeof tempProject>
interface Kind {
  name: string
  file: string
  write: (dir: Project, n: number) => void
  applied: (c: Composition, n: number) => boolean
}

const running = (c: Composition, key: string) => c.reconciler.running.get(key)
const KINDS: Kind[] = [
  {
    name: 'config, in place',
    file: 'yoke.config.yaml',
    write: (dir, n) => dir.write('yoke.config.yaml', CONFIG(n)),
    applied: (c, n) => (running(c, 'a')?.spec.raw as { n: number }).n === n,
  },
  {
    name: 'config, atomic save',
    file: 'yoke.config.yaml',
    write: (dir, n) => dir.writeAtomic('yoke.config.yaml', CONFIG(n)),
    applied: (c, n) => (running(c, 'a')?.spec.raw as { n: number }).n === n,
  },
  {
    name: 'module, in place',
    file: 'b.mjs',
    write: (dir, n) => dir.write('b.mjs', PLUGIN(n)),
    applied: (c, n) => running(c, 'b')?.fiber?.plugin.name === `p${n}`,
  },
]

/** ms from `write()` until `done` settles (armed before the write); an edit never seen fails. */
async function timeOne(what: string, done: Promise<unknown>, write: () => void): Promise<number> {
  const t0 = performance.now()
  write()
  let timer: NodeJS.Timeout | undefined
  const lost = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`reload bench: ${what} was not seen in 10 s`)),
      10_000,
    )
  })
  await Promise.race([done, lost]).finally(() => clearTimeout(timer))
  return performance.now() - t0
}

/** The reload event after which `applied()` holds (earlier reloads, e.g. of a half, do not count). */
function reloaded(c: Composition, applied: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const untap = tapHook(c.hooks.reload, 'bench', () => {
      if (!applied()) return
      untap()
      resolve()
    })
  })
}

async function rawWatchers(dir: Project) {
  const files = [...new Set(KINDS.map((k) => k.file))]
  const watchers = new Map(
    files.map((f) => [f, watch(dir.path(f), { ignoreInitial: true, atomic: 50 })]),
  )
  await Promise.all(
    [...watchers.values()].map((w) => new Promise<void>((r) => w.once('ready', () => r()))),
  )
  return watchers
}

export async function reloadBench() {
  const files = { 'a.mjs': PLUGIN(0), 'b.mjs': PLUGIN(0), 'yoke.config.yaml': CONFIG(0) }
  const project = tempProject(files)
  const baseline = tempProject(files) // the raw watchers watch here, out of yoke's sight
  // trusted: the plugins are the project's own modules, which otherwise wait for `yoke trust`
  const composition = new Composition({ cwd: project.dir, home: project.home, trust: true })
  const raw = await rawWatchers(baseline)
  try {
    await composition.start()
    await composition.watch()
    // per kind, per round: yoke's and raw chokidar's times
    const times = KINDS.map(() => ({
      yoke: [] as number[][],
      raw: [] as number[][],
    }))
    let n = 0
    for (let r = 0; r < ROUNDS; r++)
      for (const [k, kind] of KINDS.entries()) {
        const yoke: number[] = []
        const chokidar: number[] = []
        for (let j = 0; j < PER_ROUND; j++) {
          const v = ++n
          const applied = () => kind.applied(composition, v)
          const what = `${kind.name} #${v}`
          const done = reloaded(composition, applied)
          yoke.push(await timeOne(`yoke: ${what}`, done, () => kind.write(project, v)))
          await sleep(GAP_MS)
          const event = new Promise((r) => raw.get(kind.file)!.once('all', r))
          chokidar.push(await timeOne(`chokidar: ${what}`, event, () => kind.write(baseline, v)))
          await sleep(GAP_MS)
        }
        times[k]!.yoke.push(yoke)
        times[k]!.raw.push(chokidar)
      }
    report(times)
  } finally {
    await composition.close()
    await Promise.all([...raw.values()].map((w) => w.close()))
    project.cleanup()
    baseline.cleanup()
  }
}

function report(times: Array<{ yoke: number[][]; raw: number[][] }>) {
  const edits = ROUNDS * PER_ROUND
  console.log(
    `\nreload latency, file write → reload done (ms), ${edits} edits of each kind, interleaved with a raw`,
  )
  console.log(
    `chokidar event for the same write (no write-finish wait, no debounce); spread: the ${ROUNDS} rounds' p50s`,
  )
  console.log(
    row(['', 'raw p50', 'p95', 'yoke p50', 'p95', 'spread', 'yoke/raw', 'spread', 'goal p50']),
  )
  for (const [k, kind] of KINDS.entries()) {
    const { yoke, raw } = times[k]!
    const p50s = yoke.map(median)
    const rawP50s = raw.map(median)
    const all = yoke.flat()
    const allRaw = raw.flat()
    const spread = `${Math.min(...p50s).toFixed(1)}–${Math.max(...p50s).toFixed(1)}`
    const value = percentile(all, 50)
    // the figure: a config written in place (the atomic save is printed beside it)
    if (k === 0)
      figure({ name: 'reload p50 ms', value, goal: 50, better: 'lower', unit: ' ms', spread })
    console.log(
      row([
        kind.name,
        percentile(allRaw, 50),
        percentile(allRaw, 95),
        value,
        percentile(all, 95),
        spread,
        `${(value / percentile(allRaw, 50)).toFixed(1)}×`,
        ratioSpread(p50s, rawP50s),
        k < 2 ? '≤ 50' : '',
      ]),
    )
  }
}
