/**
 * Whole-process start-up, wall time: `yoke --help` against `node -e 0`, and `yoke tools list` on
 * the repository's config against a hand-written script that composes the same config with the
 * library (bench/cold/compose.mjs). Both run the build (`npm run build` first). Interleaved over
 * rounds; ratios per round, with their spread.
 */
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildOnce, percentile, row } from './stats.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const YOKE = join(ROOT, 'bin', 'yoke.js')
const CONFIG = join(ROOT, 'config', 'yoke.yaml')
const ROUNDS = 12

const CASES: Record<string, string[]> = {
  'node -e 0': ['-e', '0'],
  'yoke --help': [YOKE, '--help'],
  'yoke tools list': [YOKE, 'tools', 'list', '--fresh', '--config', CONFIG],
  'compose script': [join(ROOT, 'bench', 'cold', 'compose.mjs'), CONFIG],
}

function wallMs(args: string[]): number {
  const t0 = performance.now()
  const run = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', timeout: 60_000 })
  const ms = performance.now() - t0
  if (run.status !== 0) throw new Error(`${args.join(' ')} exited ${run.status}: ${run.stderr}`)
  return ms
}

export async function coldStartBench() {
  buildOnce()
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(CASES).map((k) => [k, []]))
  for (const args of Object.values(CASES)) wallMs(args) // warm the file cache
  for (let round = 0; round < ROUNDS; round++)
    for (const [name, args] of Object.entries(CASES)) times[name]!.push(wallMs(args))
  const ratios = (a: string, b: string) => times[a]!.map((t, i) => t / times[b]![i]!)
  console.log(`\ncold start (${ROUNDS} interleaved rounds, wall ms)`)
  console.log(row(['case', 'p50 ms', 'min', 'max']))
  for (const [name, ms] of Object.entries(times))
    console.log(row([name, percentile(ms, 50), Math.min(...ms), Math.max(...ms)]))
  console.log(row(['ratio', 'p50', 'p10', 'p90', 'goal']))
  for (const [label, a, b, goal] of [
    ['help / node', 'yoke --help', 'node -e 0', '<= 3'],
    ['list / script', 'yoke tools list', 'compose script', '<= 1.2'],
  ] as const) {
    const r = ratios(a, b)
    console.log(row([label, percentile(r, 50), percentile(r, 10), percentile(r, 90), goal]))
  }
}
