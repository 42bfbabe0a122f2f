// Two yoke instances as two replicas of one gateway (two projects with the same tools, each its
// own audit file), sharing one store: the memory engine's state shared in-process (a project
// plugin provides `store` over one MemoryBackend), and the store plugin on a real redis-server.
// `capabilities/list`, `capability_stats` and `capabilities/audit` answer the merged figures and
// the one ordered log on either replica; on Redis, a stopped server neither fails nor blocks a
// call, and what was counted meanwhile lands after it restarts. No timed assertions.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { after, describe, it } from 'node:test'
import type {
  CapabilitiesAudit,
  CapabilitiesList,
  MetricsRow,
} from '../../../plugins/capabilities/api.ts'
import { readAudit } from '../../../plugins/capabilities/audit.ts'
import { MemoryBackend, MemoryStore } from '../../../plugins/store/memory.ts'
import { createYoke, type DoctorCheck, type Yoke } from '../../../src/index.ts'
import { ROOT, runYoke, tempProject, type Project } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'
import { missing, redisForFile } from '../store/redis-server.ts'

const TOOLS = join(ROOT, 'test/fixtures/capabilities/tools.mjs')
/** a project plugin that provides the `store` a test put in `globalThis` under its slot */
const SHARED_STORE = `export default {
  name: 'shared-store',
  provides: ['store'],
  apply(ctx, config) { ctx.provide('store', globalThis.yokeTestStores[config.slot]) },
}
`
const stores: Record<string, unknown> = {}
;(globalThis as { yokeTestStores?: unknown }).yokeTestStores = stores

const projects: Project[] = []
const yokes: Yoke[] = []
after(async () => {
  for (const y of yokes) await y.close()
  for (const p of projects) p.cleanup()
})

/** One replica: the tools `alpha`, `beta` (fails) and its own `only-<name>`, with `store`. */
async function replica(name: string, store: Record<string, unknown>) {
  const tools = [{ name: 'alpha' }, { name: 'beta', fails: true }, { name: `only-${name}` }]
  const plugins = {
    tools: { use: TOOLS, config: { tools } },
    store,
    capabilities: { config: { statsTool: true } },
  }
  const p = tempProject({
    'yoke.config.yaml': JSON.stringify({ plugins }, null, 2),
    'shared-store.mjs': SHARED_STORE,
  })
  projects.push(p)
  const env = { ...process.env, YOKE_TRUST: '1' }
  const yoke = createYoke({ cwd: p.dir, home: p.home, env, onLog: () => {} })
  yokes.push(yoke)
  assert.deepEqual((await yoke.ready).failed, [], 'every instance applied')
  const ask = <T>(control: string) => yoke.composition.kernel.ask(control, {}) as Promise<T>
  const list = async (id: string) =>
    (await ask<CapabilitiesList>('capabilities/list')).rows.find((r) => r.id === id)
  await until(`${name}'s start to be in its audit file`, () =>
    readAudit(p.path('.yoke/audit.jsonl')).some((e) => e.id === `only-${name}`),
  )
  return { p, yoke, ask, list }
}

/** The checks both stores pass: `open` gives each replica's `store` plugin entry. */
function replicasSuite(engine: string, open: (name: string) => Record<string, unknown>) {
  it(`merge their counts and order their audit entries (${engine} store)`, async () => {
    const [a, b] = [await replica('a', open('a')), await replica('b', open('b'))]
    const calls = [
      ...Array.from({ length: 30 }, () => a.yoke.call('alpha')),
      ...Array.from({ length: 20 }, () => b.yoke.call('alpha')),
      a.yoke.call('beta'),
      b.yoke.call('beta'),
    ]
    const results = await Promise.all(calls)
    assert.equal(results.filter((r) => r.status === 'ok').length, 50)
    // each list flushes its replica first: b's, then a's, sees all of them
    await b.list('alpha')
    const alpha = await a.list('alpha')
    assert.equal(alpha?.called, 50)
    assert.equal(alpha?.ok, 50)
    assert.ok(alpha?.p50 !== undefined && alpha.p95! >= alpha.p50, 'bucket estimates')
    assert.deepEqual((await b.list('beta'))?.errors, { EXEC_FAILED: 2 })
    // the stats tool on either replica answers the merged rows
    const stats = await b.yoke.call('capability_stats', { id: 'alpha' })
    const rows = (stats.structured as { rows: MetricsRow[] }).rows
    assert.equal(rows[0]?.called, 50, JSON.stringify(rows))

    // the audit log: each replica's start entries once each, in one order both read alike
    const [fromA, fromB] = await Promise.all([
      a.ask<CapabilitiesAudit>('capabilities/audit'),
      b.ask<CapabilitiesAudit>('capabilities/audit'),
    ])
    assert.equal(fromA.source, 'store')
    assert.deepEqual(fromA.entries, fromB.entries, 'one order')
    const mine = (id: string) => ['alpha', 'beta', 'only-a', 'only-b'].includes(id)
    const ids = fromA.entries
      .map((e) => e.id)
      .filter(mine)
      .sort()
    assert.deepEqual(ids, ['alpha', 'alpha', 'beta', 'beta', 'only-a', 'only-b'])
    // the local files stay as they were: each its own replica's entries
    const local = readAudit(a.p.path('.yoke/audit.jsonl'))
      .map((e) => e.id)
      .filter(mine)
    assert.deepEqual(local.sort(), ['alpha', 'beta', 'only-a'])
    // and the replica says so once its own flush has been through (the next tick at the latest)
    let doctor: DoctorCheck[] = []
    await until(
      () => `the doctor to be ok: ${JSON.stringify(doctor)}`,
      async () => {
        doctor = await a.ask<DoctorCheck[]>('capabilities-store/doctor')
        return doctor[0]?.level === 'ok'
      },
      { ms: 30_000 },
    )
    assert.match(doctor[0]!.message, /merged/)
  })
}

describe('two replicas sharing one in-process memory store', () => {
  const backend = new MemoryBackend()
  replicasSuite('memory', (name) => {
    stores[name] = new MemoryStore(backend)
    return { use: './shared-store.mjs', config: { slot: name } }
  })
})

const server = await redisForFile()

describe('two replicas sharing a redis-server', { skip: missing }, () => {
  const keyPrefix = () => `replicas-${randomBytes(4).toString('hex')}:`
  const redis = (prefix: string) => ({
    use: 'store',
    config: { engine: 'redis', url: server?.url, keyPrefix: prefix, commandTimeoutMs: 5_000 },
  })
  const prefix = keyPrefix()
  replicasSuite('redis', () => redis(prefix))

  it('yoke stats and yoke audit, composed on their own (bin runs dist), answer from the store', async () => {
    const shared = keyPrefix()
    const [a, b] = [await replica('a', redis(shared)), await replica('b', redis(shared))]
    await Promise.all([a.yoke.call('alpha'), b.yoke.call('alpha'), b.yoke.call('alpha')])
    await Promise.all([a.list('alpha'), b.list('alpha')]) // each flushed
    const cli = (...args: string[]) =>
      runYoke([...args, '--json'], { cwd: a.p.dir, home: a.p.home, env: { YOKE_TRUST: '1' } })
    const stats = await cli('stats')
    assert.equal(stats.code, 0, stats.stderr)
    const rows = (JSON.parse(stats.stdout) as { rows: MetricsRow[] }).rows
    assert.equal(rows.find((r) => r.id === 'alpha')?.called, 3, stats.stdout)
    const audit = await cli('audit', '--id', 'only-*')
    assert.equal(audit.code, 0, audit.stderr)
    const read = JSON.parse(audit.stdout) as { source?: string; entries: Array<{ id: string }> }
    assert.equal(read.source, 'store')
    assert.deepEqual(read.entries.map((e) => e.id).sort(), ['only-a', 'only-b'])
  })

  it('a stopped Redis neither fails nor blocks a call; what was counted lands after it restarts', async () => {
    const shared = keyPrefix()
    const [a, b] = [await replica('a', redis(shared)), await replica('b', redis(shared))]
    assert.equal((await a.yoke.call('alpha')).status, 'ok')
    assert.equal((await a.list('alpha'))?.called, 1)
    await server!.kill()
    try {
      const during = await Promise.all(Array.from({ length: 10 }, () => a.yoke.call('alpha')))
      assert.deepEqual(
        during.map((r) => r.status),
        Array(10).fill('ok'),
      )
      // a reader still answers (the last merged rows and what it counted since)
      assert.equal((await a.list('alpha'))?.called, 11)
      const doctor = await a.ask<DoctorCheck[]>('capabilities-store/doctor')
      assert.match(doctor[0]!.message, /wait for the store/)
    } finally {
      await server!.start()
    }
    // a Redis without persistence comes back empty: the 10 counted meanwhile land in it
    await until('the pending counts to land', async () => (await b.list('alpha'))?.called === 10, {
      ms: 30_000,
    })
    // and the replica says so once its own flush has been through (the next tick at the latest)
    let doctor: DoctorCheck[] = []
    await until(
      () => `the doctor to be ok: ${JSON.stringify(doctor)}`,
      async () => {
        doctor = await a.ask<DoctorCheck[]>('capabilities-store/doctor')
        return doctor[0]?.level === 'ok'
      },
      { ms: 30_000 },
    )
    assert.match(doctor[0]!.message, /merged/)
  })
})
