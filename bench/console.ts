/**
 * The web console's cost on `yoke dev`'s ready time: the built CLI's `yoke dev --events json` on
 * the default preset in a scratch project (the MCP endpoint and the metrics file off), from spawn
 * to its `ready` event, with the console (the preset's default) and without it
 * (`plugins.console.enabled=false`: the instance is not composed at all), interleaved round by
 * round (the order alternates), on the same machine state. Per round: with − without (ms) and
 * with / without. Run `npm run build` first (the bench does).
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { tempProject } from '../test/helpers/project.ts'
import { buildOnce, figure, percentile, ratioSpread, row } from './stats.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const YOKE = join(ROOT, 'bin', 'yoke.js')
const ROUNDS = Number(process.env.CONSOLE_BENCH_ROUNDS) || 10
const BASE = [
  'dev',
  '--events',
  'json',
  '--preset',
  'default',
  '--set',
  'plugins.serve.enabled=false',
  '--set',
  'plugins.metrics.enabled=false',
]

/** CPU ms (user + system, all threads) a process used so far, from /proc (10 ms ticks). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS
}
const TICKS = 100

interface Ready {
  wall: number
  cpu: number
}

/** Wall and CPU ms from spawning `yoke dev` to its ready event; the dev is then stopped. */
function readyMs(cwd: string, home: string, extra: string[]): Promise<Ready> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(process.execPath, [YOKE, ...BASE, ...extra], {
      cwd,
      env: { ...process.env, NO_COLOR: '1', YOKE_HOME: home, OPENAI_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stderr = ''
    let ready: Ready | undefined
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`yoke dev was not ready in 120 s: ${stderr}`))
    }, 120_000)
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (!line.includes('"type":"ready"')) return
      ready = { wall: performance.now() - t0, cpu: cpuMs(child.pid!) }
      clearTimeout(timer)
      child.kill('SIGINT')
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      if (ready !== undefined) resolve(ready)
      else reject(new Error(`yoke dev exited ${code} before ready: ${stderr}`))
    })
  })
}

export async function consoleBench() {
  buildOnce()
  const project = tempProject({})
  try {
    const sides: Record<'with' | 'without', string[]> = {
      with: [],
      without: ['--set', 'plugins.console.enabled=false'],
    }
    const wall: Record<'with' | 'without', number[]> = { with: [], without: [] }
    const cpu: Record<'with' | 'without', number[]> = { with: [], without: [] }
    await readyMs(project.dir, project.home, sides.with) // warm the file cache
    await readyMs(project.dir, project.home, sides.without)
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? (['without', 'with'] as const) : (['with', 'without'] as const)
      for (const side of order) {
        const r = await readyMs(project.dir, project.home, sides[side])
        wall[side].push(r.wall)
        cpu[side].push(r.cpu)
      }
    }
    console.log(
      `\nconsole: yoke dev until ready (${ROUNDS} interleaved rounds, ms; load ${loadavg()[0]!.toFixed(1)})`,
    )
    console.log(row(['side', 'wall p50', 'wall min', 'cpu p50', 'cpu min']))
    for (const side of ['with', 'without'] as const)
      console.log(
        row([
          side,
          percentile(wall[side], 50),
          Math.min(...wall[side]),
          percentile(cpu[side], 50),
          Math.min(...cpu[side]),
        ]),
      )
    const added = (m: typeof wall) => m.with.map((w, i) => w - m.without[i]!)
    for (const [label, m] of [
      ['wall', wall],
      ['cpu', cpu],
    ] as const) {
      const a = added(m)
      console.log(
        row([
          `${label} added (with − without)`,
          percentile(a, 50),
          `p10 ${percentile(a, 10).toFixed(0)}`,
          `p90 ${percentile(a, 90).toFixed(0)}`,
          `ratio ${ratioSpread(m.with, m.without)}`,
        ]),
      )
    }
    const cpuAdded = added(cpu)
    figure({
      name: "console: added to yoke dev's ready time (CPU ms until ready)",
      value: Math.round(percentile(cpuAdded, 50)),
      goal: 150,
      better: 'lower',
      unit: 'ms',
      spread: `${Math.round(percentile(cpuAdded, 10))}–${Math.round(percentile(cpuAdded, 90))} (p10–p90 of per-round differences)`,
      baseline: 'yoke dev with plugins.console.enabled=false, same rounds',
    })
  } finally {
    project.cleanup()
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await consoleBench()
