// Capability metrics and the audit log shared through a store (shared.ts), two replicas at a time:
// two counting sides (each a MetricsStore, its kept SharedState and a Sharer) over one store —
// the memory engine's state shared in-process, and a real redis-server (two connections). Counts
// from both merge exactly under concurrency, p50 / p95 come from the merged buckets, audit entries
// from both appear once each in one order, and on Redis an outage fails and blocks no call, the
// deltas wait (bounded, counted past the cap) and land after the restart. No timed assertions.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, describe, it } from 'node:test'
import type { AuditEntry } from '../../../plugins/capabilities/api.ts'
import { newKept } from '../../../plugins/capabilities/kept.ts'
import type { RowKey } from '../../../plugins/capabilities/metrics.ts'
import { mergedRows, sharedChecks } from '../../../plugins/capabilities/merged.ts'
import { MAX_PENDING, Sharer } from '../../../plugins/capabilities/shared.ts'
import type { Store } from '../../../plugins/store/api.ts'
import { MemoryBackend, MemoryStore } from '../../../plugins/store/memory.ts'
import { RedisStore } from '../../../plugins/store/redis.ts'
import { until } from '../../helpers/until.ts'
import { missing, redisForFile } from '../store/redis-server.ts'

/** Waits until `store` answers again (the client reconnects by itself after a restart). */
const answering = (store: Store) =>
  until('the store to answer again', async () => (await store.health()).state === 'ready', {
    ms: 30_000,
  })

/** One replica's capabilities metrics and audit, sharing through `store`. */
function replica(store: Store, name: string) {
  const kept = newKept()
  const said: string[] = []
  const sharer = new Sharer(kept.shared, kept.store, store, {
    prefix: 'capabilities:',
    warn: (m) => said.push(`warn: ${m}`),
    info: (m) => said.push(`info: ${m}`),
  })
  sharer.start()
  const merged = async (id: string) => {
    await sharer.fresh()
    return mergedRows(kept.shared, kept.store).find((r) => r.id === id)
  }
  const audit = (id: string): AuditEntry => ({
    at: new Date().toISOString(),
    who: name,
    id,
    from: null,
    to: '1',
  })
  return { kept, sharer, said, merged, audit, metrics: kept.store }
}

const key = (id: string): RowKey => ({
  id,
  version: '1.0.0',
  hash: 'sha256:0123456789ab',
  source: 'native',
})

/** The same checks on each engine: `open` gives two stores over one state (two replicas). */
function sharedSuite(engine: string, open: () => { a: Store; b: Store }, skip: string | false) {
  describe(`capability metrics shared through the ${engine} store`, { skip }, () => {
    it('counts from two replicas merge exactly, flushed while both count at once', async () => {
      const { a, b } = open()
      const [ra, rb] = [replica(a, 'a'), replica(b, 'b')]
      const alpha = key('alpha')
      // each replica: 400 calls and 100 offers, flushing every 25 calls, both at the same time
      const run = async (r: ReturnType<typeof replica>, status: string) => {
        for (let i = 0; i < 400; i++) {
          r.metrics.called(alpha, i % 4 ? 'ok' : status, 3)
          if (i % 4 === 0) r.metrics.offered(alpha)
          if (i % 25 === 0) await r.sharer.tick()
        }
      }
      await Promise.all([
        run(ra, 'EXEC_FAILED'),
        run(rb, 'TIMEOUT'),
        ra.sharer.tick(),
        rb.sharer.tick(),
      ])
      // the last flush is each one's stop; a reader after it sees every call once
      await Promise.all([ra.sharer.stop(), rb.sharer.stop()])
      for (const r of [ra, rb]) {
        r.sharer.start()
        const row = await r.merged('alpha')
        assert.ok(row, 'the merged row')
        assert.equal(row.called, 800)
        assert.equal(row.ok, 600)
        assert.equal(row.offered, 200)
        assert.deepEqual(row.errors, { EXEC_FAILED: 100, TIMEOUT: 100 })
      }
      assert.deepEqual(ra.said, [])
    })

    it('a reader sees the others’ flushed counts and its own unflushed ones, each once', async () => {
      const { a, b } = open()
      const [ra, rb] = [replica(a, 'a'), replica(b, 'b')]
      const beta = key('beta')
      rb.metrics.called(beta, 'ok', 1)
      await rb.sharer.tick()
      await ra.sharer.fresh() // a reads b's call back
      ra.metrics.called(beta, 'ok', 1) // counted on a, not flushed yet
      const view = mergedRows(ra.kept.shared, ra.metrics).find((r) => r.id === 'beta')
      assert.equal(view?.called, 2, 'b’s flushed call and a’s own, not flushed yet')
      assert.equal((await ra.merged('beta'))?.called, 2, 'and after a’s flush, still each once')
      assert.equal((await rb.merged('beta'))?.called, 2)
    })

    it('p50 / p95 come from the merged buckets', async () => {
      const { a, b } = open()
      const [ra, rb] = [replica(a, 'a'), replica(b, 'b')]
      const gamma = key('gamma')
      for (let i = 0; i < 10; i++) ra.metrics.called(gamma, 'ok', 3) // bucket (2, 5]
      for (let i = 0; i < 10; i++) rb.metrics.called(gamma, 'ok', 400) // bucket (250, 500]
      await Promise.all([ra.sharer.tick(), rb.sharer.tick()])
      // merged: rank 10 of 20 is the last of (2, 5]; rank 19 is the 9th of 10 in (250, 500]
      for (const r of [ra, rb]) {
        const row = await r.merged('gamma')
        assert.equal(row?.p50, 5)
        assert.equal(row?.p95, 475)
      }
      // each replica alone would say otherwise: its own rows are not what a reader sees
      assert.equal(ra.metrics.rows().find((r) => r.id === 'gamma')?.p95, 3)
    })

    it('one replica alone: its rows read back as with no store, p50 / p95 over its own calls', async () => {
      const { a } = open()
      const ra = replica(a, 'a')
      const theta = key('theta')
      for (let i = 0; i < 10; i++) ra.metrics.called(theta, 'ok', 3)
      for (let i = 0; i < 10; i++) ra.metrics.called(theta, i ? 'ok' : 'TIMEOUT', 400)
      ra.metrics.offered(theta)
      const row = await ra.merged('theta')
      const { firstAt: _f, lastAt: _l, ...alone } = ra.metrics.rows().find((r) => r.id === 'theta')!
      assert.deepEqual(
        { ...row, firstAt: undefined, lastAt: undefined },
        {
          ...alone,
          firstAt: undefined,
          lastAt: undefined,
        },
      )
      assert.equal(row?.p50, 3)
      assert.equal(row?.p95, 400)
    })

    it('audit entries from both replicas appear once each, in one order both read alike', async () => {
      const { a, b } = open()
      const [ra, rb] = [replica(a, 'a'), replica(b, 'b')]
      const ids = Array.from({ length: 50 }, (_, i) => `t${i}`)
      await Promise.all(
        ids.map(async (id, i) => {
          const r = i % 2 ? rb : ra
          r.sharer.record([r.audit(id)])
        }),
      )
      await Promise.all([ra.sharer.tick(false), rb.sharer.tick(false)])
      const [fromA, fromB] = await Promise.all([ra.sharer.readAudit(), rb.sharer.readAudit()])
      assert.deepEqual(fromA, fromB, 'one order')
      assert.deepEqual(fromA.map((e) => e.id).sort(), [...ids].sort(), 'each once')
      // each replica's own entries keep the order it recorded them in
      for (const who of ['a', 'b'])
        assert.deepEqual(
          fromA.filter((e) => e.who === who).map((e) => e.id),
          ids.filter((_, i) => (i % 2 ? 'b' : 'a') === who),
        )
      assert.ok(fromA.every((e) => typeof e.replica === 'string' && e.replica.length > 0))
    })

    // a sink's file is this process's history: Redis has it from the run that counted it; the
    // memory engine starts empty with the process, so there it is added (figures as with no store)
    const history = engine === 'memory' ? 7 : 0
    it(`counts seeded from a file are ${history ? 'added once' : 'history, not added again'}`, async () => {
      const { a } = open()
      const ra = replica(a, 'a')
      const seed = (called: number) =>
        ra.metrics.seed([
          {
            ...key('delta'),
            offered: 0,
            found: 0,
            called,
            ok: called,
            errors: {},
            firstAt: '2026-01-01T00:00:00.000Z',
            lastAt: '2026-01-01T00:00:00.000Z',
          },
        ])
      seed(7)
      ra.metrics.called(key('delta'), 'ok', 1)
      await ra.sharer.tick()
      const counters = await a.counters('capabilities:metrics:delta@1.0.0#sha256:0123456789ab')
      assert.equal(counters.called, history + 1)
      assert.equal((await ra.merged('delta'))?.called, history + 1, 'what a reader sees')
      // a row seeded after the sharer started is decided alike; a restart of the sharer adds nothing again
      ra.metrics.seed([
        {
          ...key('epsilon'),
          offered: 2,
          found: 0,
          called: 0,
          ok: 0,
          errors: {},
          firstAt: '2026-01-01T00:00:00.000Z',
          lastAt: '2026-01-01T00:00:00.000Z',
        },
      ])
      await ra.sharer.stop()
      ra.sharer.start()
      await ra.sharer.tick()
      assert.equal((await ra.merged('epsilon'))?.offered, history ? 2 : 0)
      assert.equal((await ra.merged('delta'))?.called, history + 1)
    })
  })
}

sharedSuite(
  'memory',
  () => {
    const backend = new MemoryBackend()
    return { a: new MemoryStore(backend), b: new MemoryStore(backend) }
  },
  false,
)

const server = await redisForFile()
const opened: RedisStore[] = []
after(() => opened.forEach((s) => s.close()))
function redisStore(keyPrefix: string) {
  const s = new RedisStore({
    name: 'shared',
    url: server?.url ?? 'redis://127.0.0.1:1',
    keyPrefix,
    // generous where a test is not about timeouts: a loaded machine stalls the event loop
    connectTimeoutMs: 5_000,
    commandTimeoutMs: 5_000,
    say: () => {},
  })
  opened.push(s)
  return s
}

sharedSuite(
  'redis',
  () => {
    const keyPrefix = `caps-${randomBytes(4).toString('hex')}:`
    return { a: redisStore(keyPrefix), b: redisStore(keyPrefix) }
  },
  missing,
)

describe('a store outage (redis-server stopped)', { skip: missing }, () => {
  it('fails and blocks no count; the deltas wait, bounded, and land after the restart', async () => {
    const keyPrefix = `outage-${randomBytes(4).toString('hex')}:`
    const [ra, rb] = [replica(redisStore(keyPrefix), 'a'), replica(redisStore(keyPrefix), 'b')]
    const eps = key('epsilon')
    ra.metrics.called(eps, 'ok', 1)
    await ra.sharer.tick()
    await server!.kill()
    try {
      // counting is synchronous, whatever the store; a flush fails inside, said once, and returns
      for (let i = 0; i < 5; i++) ra.metrics.called(eps, 'ok', 1)
      ra.sharer.record([ra.audit('during')])
      await ra.sharer.tick()
      await ra.sharer.tick()
      const warned = ra.said.filter((s) => s.startsWith('warn:'))
      assert.equal(warned.length, 1, ra.said.join('\n'))
      assert.match(warned[0]!, /wait for the store/)
      const [waiting] = sharedChecks(ra.kept.shared)
      assert.equal(waiting?.level, 'warn')
      assert.match(waiting!.message, /^1 rows of metrics and 1 audit entries wait for the store/)
      // past the cap, the oldest rows go: counted, said, and in yoke doctor
      for (let i = 0; i < MAX_PENDING + 3; i++) ra.metrics.offered(key(`many-${i}`))
      await ra.sharer.tick()
      assert.equal(ra.kept.shared.pending.size, MAX_PENDING)
      assert.equal(ra.kept.shared.dropped.rows, 4, 'epsilon’s row (the oldest) and three more')
      assert.match(
        sharedChecks(ra.kept.shared).at(-1)!.message,
        /missed 4 rows of metrics \(5 calls\)/,
      )
      // more drops in the same outage: counted, not warned again
      for (let i = 0; i < 2; i++) ra.metrics.offered(key(`more-${i}`))
      await ra.sharer.tick()
      assert.equal(ra.kept.shared.dropped.rows, 6)
      assert.equal(ra.said.filter((s) => /metrics lost/.test(s)).length, 1, ra.said.join('\n'))
    } finally {
      await server!.start()
    }
    // the store answers again: what waited lands, said once
    await answering(ra.sharer.store)
    ra.metrics.called(eps, 'ok', 1)
    await ra.sharer.tick()
    assert.match(ra.said.at(-1)!, /^info: the store answers again/)
    assert.equal(ra.kept.shared.pending.size, 0)
    const row = await rb.merged('epsilon')
    // a Redis without persistence restarted empty: what landed is the one call since the drop
    assert.equal(row?.called, 1)
    assert.deepEqual(
      (await rb.sharer.readAudit()).map((e) => e.id),
      ['during'],
    )
  })

  it('pending deltas land after a restart, nothing lost below the cap', async () => {
    const keyPrefix = `restart-${randomBytes(4).toString('hex')}:`
    const [ra, rb] = [replica(redisStore(keyPrefix), 'a'), replica(redisStore(keyPrefix), 'b')]
    const zeta = key('zeta')
    await server!.kill()
    try {
      for (let i = 0; i < 40; i++) (i % 2 ? rb : ra).metrics.called(zeta, 'ok', 1)
      await Promise.all([ra.sharer.tick(), rb.sharer.tick()])
      assert.equal(ra.kept.shared.pending.size, 1)
    } finally {
      await server!.start()
    }
    await Promise.all([answering(ra.sharer.store), answering(rb.sharer.store)])
    await Promise.all([ra.sharer.tick(), rb.sharer.tick()])
    assert.equal((await ra.merged('zeta'))?.called, 40)
  })
})
