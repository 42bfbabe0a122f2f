/**
 * Plugin executables: the same small executable (a POSIX sh script: JSON in, JSON out) called
 * through yoke (exec-tools and the whole pipeline) and spawned raw with child_process (same input,
 * output read whole), interleaved call by call. Then the integrity check's cost per call for a
 * 1 MB and a 50 MB executable: unchanged (one lstat) and touched (hashed again).
 */
import { spawn } from 'node:child_process'
import { utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { IntegrityGate, verify } from '../plugins/exec-tools/executable.ts'
import { execHarness } from '../test/helpers/exec.ts'
import { percentile, row } from './stats.ts'

const CALLS = 300
const SCRIPT = '#!/bin/sh\nread -r input\nprintf \'{"output":"%s","success":true}\' "$1"\n'

function raw(exe: string, tool: string, args: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(exe, [tool], { stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.once('error', reject)
    child.once('close', () => resolve(out))
    child.stdin.end(`${JSON.stringify(args)}\n`)
  })
}

async function micros(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await fn()
  return (performance.now() - t0) * 1000
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
  const viaRaw = () => raw(exe, 'tiny_run', { n: 1 })
  for (let i = 0; i < 30; i++) await Promise.all([viaYoke(), viaRaw()]) // warm-up
  const yoke: number[] = []
  const bare: number[] = []
  for (let i = 0; i < CALLS; i++) {
    if (i % 2) {
      yoke.push(await micros(viaYoke))
      bare.push(await micros(viaRaw))
    } else {
      bare.push(await micros(viaRaw))
      yoke.push(await micros(viaYoke))
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

  console.log('\nintegrity check before each spawn, per call (median of 20)')
  console.log(row(['executable', 'unchanged µs', 'touched µs']))
  for (const mb of [1, 50]) {
    const file = join(h.root, `exe-${mb}mb`)
    writeFileSync(file, Buffer.alloc(mb * 1024 * 1024, 1), { mode: 0o755 })
    const gate = new IntegrityGate(await verify(file))
    const unchanged: number[] = []
    const touched: number[] = []
    for (let i = 0; i < 20; i++) {
      unchanged.push(await micros(() => gate.check()))
      const t = new Date(Date.now() + (i + 1) * 1000)
      utimesSync(file, t, t)
      touched.push(await micros(() => gate.check()))
    }
    console.log(row([`${mb} MB`, percentile(unchanged, 50), percentile(touched, 50)]))
  }
  await h.close()
}
