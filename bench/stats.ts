import { execFileSync } from 'node:child_process'
import { Composition } from '../src/config/composer.ts'
import { ROOT, tempProject, type Project } from '../test/helpers/project.ts'

let isBuilt = false
/**
 * Builds the package (dist/) once per bench run: the figures are of what users run. Source under
 * tsx differs: its esbuild wraps every closure made per call in a `__name` call, and its loader
 * hooks stay in the process.
 */
export function buildOnce(): void {
  if (isBuilt) return
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' })
  isBuilt = true
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

/** One table row: the first cell left-aligned, the others right-aligned, never run together. */
export function row(cells: Array<string | number>): string {
  return cells
    .map((c, i) => {
      const text = typeof c === 'number' ? c.toFixed(c < 10 ? 2 : 1) : c
      return i === 0 ? text.padEnd(18) : ' ' + text.padStart(Math.max(12, text.length))
    })
    .join('')
}

/**
 * Times `count` edits: for each, `wait(i)` is armed, `edit(i)` runs, and the time until the wait
 * settles is recorded; `gapMs` of quiet follows each edit so the next starts clean.
 */
export async function timeEdits(
  count: number,
  edit: (i: number) => void,
  wait: (i: number) => Promise<unknown>,
  gapMs: number,
): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < count; i++) {
    const done = wait(i)
    const t0 = performance.now()
    edit(i)
    await done
    times.push(performance.now() - t0)
    await sleep(gapMs)
  }
  return times
}

export type Call = () => Promise<unknown>
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!

/** One call's duration in µs. */
export async function timed(call: Call): Promise<number> {
  const t0 = performance.now()
  await call()
  return (performance.now() - t0) * 1000
}

/** Calls per second with `width` callers in parallel, `calls` in all. */
export async function throughput(call: Call, calls: number, width: number): Promise<number> {
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next++ < calls) await call()
    }),
  )
  return calls / ((performance.now() - t0) / 1000)
}

/**
 * One figure of the table, with its goal: `npm run bench -- check` prints every figure the
 * run recorded against its goal and exits non-zero where one falls short.
 * `better`: which way the goal lies ('lower': value ≤ goal passes; 'higher': value ≥ goal).
 * `spread`: the figure's range over the run's rounds (e.g. "1.02–1.11"), `baseline`: what it is
 * a ratio against, when it is one.
 */
export interface Figure {
  name: string
  value: number
  goal: number
  better: 'lower' | 'higher'
  unit?: string
  spread?: string
  baseline?: string
}

export const figures: Figure[] = []

/** Records a figure for the check (and returns its value, to print it in the bench's own table). */
export function figure(f: Figure): number {
  figures.push(f)
  return f.value
}

export const meets = (f: Figure) => (f.better === 'lower' ? f.value <= f.goal : f.value >= f.goal)

/** The range of per-round ratios `a[r] / b[r]`, as "min–max". */
export function ratioSpread(a: number[], b: number[]): string {
  const ratios = a.map((x, r) => x / b[r]!)
  return `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`
}

/** The default preset composed (not started) in a scratch project: no gateway, no metrics file. */
export function defaultPreset(): { project: Project; composition: Composition } {
  const project = tempProject({})
  const composition = new Composition({
    cwd: project.dir,
    home: project.home,
    preset: 'default',
    sets: ['plugins.serve.enabled=false', 'plugins.metrics.enabled=false'],
  })
  return { project, composition }
}
