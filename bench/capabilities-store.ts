/**
 * What sharing capability metrics through a store costs a call (issue 31): one yoke per side, each
 * calling a native tool through the whole pipeline (the capabilities plugin counts it), in rounds
 * with the sides in rotating order; CPU per call is `process.cpuUsage()` around each side's calls,
 * a ratio against `no store` is taken per round (median, quartiles and range). Sides: no store,
 * the memory store, a real redis-server when installed, and — with `CAPABILITIES_BEFORE=<dir>`
 * holding an earlier `plugins/capabilities` (e.g. `git archive <commit> plugins/capabilities | tar
 * -x -C <dir>`) — that version with no store, the same run's "before". Then the counting alone:
 * `MetricsStore.called` with and without sharing (the buckets and the changed-row mark).
 *
 * @example node --import tsx --conditions=yoke-source bench/capabilities-store.ts
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { loadavg } from 'node:os'
import type { RowKey } from '../plugins/capabilities/metrics.ts'
import { createYoke, type Yoke } from '../src/index.ts'
import { ROOT, tempProject } from '../test/helpers/project.ts'
import { RedisServer, missing } from '../test/plugins/store/redis-server.ts'
import { median, row } from './stats.ts'

const ROUNDS = 40
const PER_ROUND = 5000
const TOOLS = join(ROOT, 'test/fixtures/capabilities/tools.mjs')

interface Side {
  name: string
  yoke: Yoke
}

async function side(name: string, plugins: Record<string, unknown>): Promise<Side> {
  const tools = { use: TOOLS, config: { tools: [{ name: 'alpha' }] } }
  const p = tempProject({ 'yoke.config.yaml': JSON.stringify({ plugins: { tools, ...plugins } }) })
  const env = { ...process.env, YOKE_TRUST: '1' }
  const yoke = createYoke({ cwd: p.dir, home: p.home, env, onLog: () => {} })
  const ready = await yoke.ready
  if (ready.failed.length) throw new Error(`${name}: ${JSON.stringify(ready.failed)}`)
  return { name, yoke }
}

async function call(s: Side) {
  const r = await s.yoke.call('alpha')
  if (!r.ok) throw new Error(`${s.name}: ${r.error?.message}`)
}

/** CPU µs per call of each side, per round. */
async function measure(sides: Side[]): Promise<number[][]> {
  const cpu = sides.map(() => [] as number[])
  for (const s of sides) for (let i = 0; i < 500; i++) await call(s) // warm-up
  for (let round = 0; round < ROUNDS; round++)
    for (let j = 0; j < sides.length; j++) {
      const k = (round + j) % sides.length
      const start = process.cpuUsage()
      for (let i = 0; i < PER_ROUND; i++) await call(sides[k]!)
      const used = process.cpuUsage(start)
      cpu[k]!.push((used.user + used.system) / PER_ROUND)
    }
  return cpu
}

const quartiles = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!
  return { q1: q(0.25), q3: q(0.75), min: s[0]!, max: s.at(-1)! }
}

type Counter = { called(key: RowKey, status: string, ms: number): void; takeUnshared?(): unknown }

/** `MetricsStore.called` alone: CPU ns per count of each store, interleaved (the first is the base). */
function counting(stores: Record<string, Counter>): Record<string, number[]> {
  const names = Object.keys(stores)
  const out = Object.fromEntries(names.map((n) => [n, [] as number[]]))
  const key: RowKey = { id: 'alpha', hash: 'sha256:0123456789ab', source: 'native' }
  const N = 200_000
  for (let round = 0; round < 60; round++)
    for (let j = 0; j < names.length; j++) {
      const name = names[(round + j) % names.length]!
      const m = stores[name]!
      const start = process.cpuUsage()
      for (let i = 0; i < N; i++) m.called(key, 'ok', i % 700)
      const used = process.cpuUsage(start)
      out[name]!.push(((used.user + used.system) * 1000) / N)
      m.takeUnshared?.()
    }
  return out
}

/**
 * The counting sides: this MetricsStore without and with sharing, and the earlier one if given,
 * each a module of its own (a query on its URL), so one side's row shapes do not make another's
 * code polymorphic.
 */
async function countingSides(before: string | undefined): Promise<Record<string, Counter>> {
  type Module = { MetricsStore: new () => Counter & { share?(): void } }
  const load = (file: string, side: string) =>
    import(`${pathToFileURL(file).href}?side=${side}`) as Promise<Module>
  const mine = join(ROOT, 'plugins/capabilities/metrics.ts')
  const plain = new (await load(mine, 'plain')).MetricsStore()
  const shared = new (await load(mine, 'shared')).MetricsStore()
  shared.share!()
  const sides: Record<string, Counter> = { 'no store': plain, shared }
  const old = before && join(before, 'plugins/capabilities/metrics.ts')
  if (old && existsSync(old))
    sides['before, no store'] = new (await load(old, 'before')).MetricsStore()
  return sides
}

export async function capabilitiesStoreBench(): Promise<void> {
  const before = process.env.CAPABILITIES_BEFORE
  const redis = missing ? undefined : await new RedisServer().start()
  const sides: Side[] = [await side('no store', {})]
  if (before && existsSync(join(before, 'plugins/capabilities/index.ts')))
    sides.push(
      await side('before, no store', {
        capabilities: { use: join(before, 'plugins/capabilities/index.ts') },
      }),
    )
  sides.push(await side('memory store', { store: { use: 'store' } }))
  if (redis)
    sides.push(
      await side('redis store', {
        store: { use: 'store', config: { engine: 'redis', url: redis.url, keyPrefix: 'bench:' } },
      }),
    )
  try {
    console.log(
      `capabilities metrics through a store: CPU per call (load ${loadavg()[0]!.toFixed(2)})`,
    )
    const cpu = await measure(sides)
    const base = cpu[0]!
    console.log(row(['side', 'µs/call (median)', 'ratio to no store', 'ratio q1–q3', 'range']))
    sides.forEach((s, k) => {
      const ratios = cpu[k]!.map((x, r) => x / base[r]!)
      const q = quartiles(ratios)
      console.log(
        row([
          s.name,
          median(cpu[k]!).toFixed(1),
          median(ratios).toFixed(3),
          `${q.q1.toFixed(3)}–${q.q3.toFixed(3)}`,
          `${q.min.toFixed(3)}–${q.max.toFixed(3)}`,
        ]),
      )
    })
    const counts = counting(await countingSides(before))
    const plain = counts['no store']!
    console.log(row(['counting alone', 'ns/call (median)', 'ratio to no store', 'ratio q1–q3']))
    for (const [name, ns] of Object.entries(counts)) {
      const ratios = ns.map((x, r) => x / plain[r]!)
      const q = quartiles(ratios)
      console.log(
        row([
          name,
          median(ns).toFixed(1),
          median(ratios).toFixed(3),
          `${q.q1.toFixed(3)}–${q.q3.toFixed(3)}`,
        ]),
      )
    }
    console.log(`load after: ${loadavg()[0]!.toFixed(2)}`)
  } finally {
    for (const s of sides) await s.yoke.close()
    await redis?.close()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await capabilitiesStoreBench()
