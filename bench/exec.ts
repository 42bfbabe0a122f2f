/**
 * Plugin executables: the same small executable (a POSIX sh script: JSON in, JSON out) called
 * through yoke (exec-tools and the whole pipeline) and spawned raw with child_process (same input,
 * output read whole), interleaved call by call. Then the process runner alone (runProcess, built on
 * execa) against the raw spawn, with execa itself as a reference (its defaults, and with cleanup,
 * final-newline stripping and reject off), in rounds of calls in rotating order: the ratios of
 * each round's medians give the spread. Then the integrity check's cost per call for a 1 MB and a
 * 50 MB executable: unchanged (one lstat) and touched (hashed again).
 */
import { spawn } from 'node:child_process'
import { utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import { IntegrityGate, verify } from '../plugins/exec-tools/executable.ts'
import { runProcess } from '../plugins/process/api.ts'
import { execHarness } from '../test/helpers/exec.ts'
import { median, percentile, row, timed, type Call } from './stats.ts'

const CALLS = 300
const ROUNDS = 5
const PER_ROUND = 100
const SCRIPT = '#!/bin/sh\nread -r input\nprintf \'{"output":"%s","success":true}\' "$1"\n'

/** child_process alone: the input written, stdout read whole, done at 'close'. */
function raw(
  exe: string,
  args: string[],
  input: string,
  env?: Record<string, string>,
  cwd?: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(exe, args, { stdio: ['pipe', 'pipe', 'pipe'], env, cwd })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.once('error', reject)
    child.once('close', () => resolve(out))
    child.stdin.end(input)
  })
}

export async function execBench() {
  const h = await execHarness({
    tiny: {
      manifest: {
        name: 'tiny',
        version: '1',
        tools: [{ name: 'tiny_run', description: 'x', concurrency_class: 'safe' }],
      },
      exe: SCRIPT,
    },
  })
  const exe = join(h.root, 'packages/tiny/tiny')
  const viaYoke = async () => {
    const r = await h.rt.call('tiny_run', { n: 1 })
    if (!r.ok) throw new Error(r.error?.message ?? JSON.stringify(r.content))
  }
  const viaRaw = () => raw(exe, ['tiny_run'], `${JSON.stringify({ n: 1 })}\n`)
  for (let i = 0; i < 30; i++) await Promise.all([viaYoke(), viaRaw()]) // warm-up
  const yoke: number[] = []
  const bare: number[] = []
  for (let i = 0; i < CALLS; i++) {
    if (i % 2) {
      yoke.push(await timed(viaYoke))
      bare.push(await timed(viaRaw))
    } else {
      bare.push(await timed(viaRaw))
      yoke.push(await timed(viaYoke))
    }
  }
  console.log(
    `\nplugin executable (a sh script, JSON in and out), ${CALLS} calls each, interleaved`,
  )
  console.log(row(['', 'raw spawn µs', 'yoke µs', 'ratio', 'goal']))
  for (const p of [50, 99])
    console.log(
      row([
        `p${p}`,
        percentile(bare, p),
        percentile(yoke, p),
        (percentile(yoke, p) / percentile(bare, p)).toFixed(2),
        p === 50 ? '≤ 1.3' : '',
      ]),
    )

  await runnerBench(exe, h.root)

  console.log('\nintegrity check before each spawn, per call (median of 20)')
  console.log(row(['executable', 'unchanged µs', 'touched µs']))
  for (const mb of [1, 50]) {
    const file = join(h.root, `exe-${mb}mb`)
    writeFileSync(file, Buffer.alloc(mb * 1024 * 1024, 1), { mode: 0o755 })
    const gate = new IntegrityGate(await verify(file))
    const unchanged: number[] = []
    const touched: number[] = []
    for (let i = 0; i < 20; i++) {
      unchanged.push(await timed(() => gate.check()))
      const t = new Date(Date.now() + (i + 1) * 1000)
      utimesSync(file, t, t)
      touched.push(await timed(() => gate.check()))
    }
    console.log(row([`${mb} MB`, percentile(unchanged, 50), percentile(touched, 50)]))
  }
  await h.close()
}

/**
 * runProcess against a raw spawn of the same executable, same input, environment and directory,
 * and execa itself run as the runner could (its defaults; lean: cleanup, stripFinalNewline and
 * reject off). Calls rotate their order; each round's medians give a ratio per round.
 */
async function runnerBench(exe: string, cwd: string) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined),
  )
  const input = JSON.stringify({ n: 1 })
  const args = ['tiny_run']
  const sides: Array<[string, Call]> = [
    ['raw spawn', () => raw(exe, args, input, env, cwd)],
    [
      'runner',
      async () => {
        const r = await runProcess({
          file: exe,
          args,
          env,
          cwd,
          input,
          maxStdoutBytes: 1 << 22,
          onKill: () => {}, // as exec-tools runs it: killable from outside (a cancelSignal)
        })
        if (r.code !== 0) throw new Error(`runner: exit ${r.code}`)
      },
    ],
    ['execa', () => execa(exe, args, { env, extendEnv: false, cwd, input })],
    [
      'execa lean',
      () =>
        execa(exe, args, {
          env,
          extendEnv: false,
          cwd,
          input,
          cleanup: false,
          stripFinalNewline: false,
          reject: false,
        }),
    ],
  ]
  for (let i = 0; i < 30; i++) for (const [, call] of sides) await call() // warm-up
  const all: number[][] = sides.map(() => [])
  const rounds: number[][] = sides.map(() => [])
  for (let round = 0; round < ROUNDS; round++) {
    const times: number[][] = sides.map(() => [])
    for (let i = 0; i < PER_ROUND; i++)
      for (let j = 0; j < sides.length; j++) {
        const k = (i + j) % sides.length // rotating order
        times[k]!.push(await timed(sides[k]![1]))
      }
    times.forEach((t, k) => {
      all[k]!.push(...t)
      rounds[k]!.push(median(t))
    })
  }
  const ratios = (k: number) => rounds[k]!.map((m, r) => m / rounds[0]![r]!)
  const spread = (k: number) => {
    const r = ratios(k)
    return `${Math.min(...r).toFixed(2)}–${Math.max(...r).toFixed(2)}`
  }
  console.log(
    `\nprocess runner (runProcess) vs a raw spawn, same script, input and environment; ${ROUNDS} rounds of ${PER_ROUND} calls each, interleaved`,
  )
  console.log(row(['', ...sides.map(([name]) => `${name} µs`)]))
  for (const p of [50, 99]) console.log(row([`p${p}`, ...all.map((t) => percentile(t, p))]))
  console.log(
    row(['p50 / raw', ...all.map((t) => (percentile(t, 50) / percentile(all[0]!, 50)).toFixed(2))]),
  )
  console.log(row(['rounds / raw', ...sides.map((_, k) => spread(k))]))
  console.log(
    `  runner / raw per round: ${ratios(1)
      .map((r) => r.toFixed(2))
      .join(' / ')} (goal ≤ 1.1); execa lean / raw: ${ratios(3)
      .map((r) => r.toFixed(2))
      .join(' / ')}`,
  )
}

if (import.meta.url === `file://${process.argv[1]}`) await execBench().then(() => process.exit(0))
