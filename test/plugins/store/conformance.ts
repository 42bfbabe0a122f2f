/**
 * The store's shared suite: every engine runs it (memory.test.ts, redis.test.ts). `open` gives two
 * stores over one shared state, two "replicas" (two views of one memory backend; two connections
 * to one Redis), so what must hold across replicas — create once, claim once, merged counters,
 * one rate window, fan-out — is checked between them, under concurrency. No timed assertions: a
 * wait for an expiry polls with a bound (until).
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { histogramDeltas, histogramOf, type Store } from '../../../plugins/store/api.ts'
import { until } from '../../helpers/until.ts'

export interface Replicas {
  a: Store
  b: Store
  close(): void | Promise<void>
}

/** A key no other test uses. */
const fresh = (what: string) => `${what}-${randomBytes(6).toString('hex')}`

/** Resolves with the messages once `count` arrived (bounded). */
function inbox() {
  const got: unknown[] = []
  return {
    got,
    listener: (m: unknown) => void got.push(m),
    until: (count: number, what: string) => until(what, () => got.length >= count),
  }
}

export function storeConformance(
  engine: string,
  open: () => Promise<Replicas>,
  skip: string | false = false,
) {
  describe(`store conformance: ${engine}`, { skip }, () => {
    let r: Replicas
    before(async () => {
      r = await open()
    })
    after(() => r?.close())

    records(() => r)
    claims(() => r)
    pubsub(() => r)
    counters(() => r)
    logs(() => r)
    rates(() => r)

    it('says it is ready', async () => {
      const h = await r.a.health()
      assert.equal(h.state, 'ready')
      assert.equal(h.engine, r.a.engine)
    })
  })
}

function records(replicas: () => Replicas) {
  it('a record is written, read back as a copy, and gets a new version on every write', async () => {
    const { a, b } = replicas()
    const key = fresh('rec')
    assert.equal(await a.get(key), undefined)
    const value = { n: 1, list: ['x'], nested: { ok: true } }
    const first = await a.put(key, value)
    assert.ok(first.ok)
    value.n = 2 // a later change to the object is not stored
    const read = await b.get<typeof value>(key)
    assert.deepEqual(read, {
      value: { n: 1, list: ['x'], nested: { ok: true } },
      version: first.version,
    })
    read!.value.list.push('y')
    assert.deepEqual((await a.get<typeof value>(key))?.value.list, ['x'])
    const second = await b.put(key, 'text')
    assert.ok(second.ok && second.version !== first.version)
    assert.equal((await a.get(key))?.value, 'text')
    for (const v of [null, 0, false, [1, [2]], 'ü ✓']) {
      await a.put(key, v)
      assert.deepEqual((await b.get(key))?.value, v)
    }
  })

  it('compare-and-set: create once, write at a version, refused with what is there', async () => {
    const { a, b } = replicas()
    const key = fresh('cas')
    const made = await a.put(key, { state: 'asked' }, { ifVersion: null })
    assert.ok(made.ok)
    const again = await b.put(key, { state: 'other' }, { ifVersion: null })
    assert.deepEqual(again, {
      ok: false,
      current: { value: { state: 'asked' }, version: made.version },
    })
    const answered = await b.put(key, { state: 'answered' }, { ifVersion: made.version })
    assert.ok(answered.ok)
    const stale = await a.put(key, { state: 'late' }, { ifVersion: made.version })
    assert.ok(!stale.ok)
    assert.deepEqual(stale.current?.value, { state: 'answered' })
    const absent = await a.put(fresh('cas-none'), 1, { ifVersion: 'no-such-version' })
    assert.deepEqual(absent, { ok: false, current: undefined })
  })

  it('delete removes a record, only at its version when one is given', async () => {
    const { a, b } = replicas()
    const key = fresh('del')
    const { version } = (await a.put(key, 1)) as { version: string }
    assert.equal(await b.delete(key, { ifVersion: 'other' }), false)
    assert.equal(await b.delete(key, { ifVersion: version }), true)
    assert.equal(await a.get(key), undefined)
    assert.equal(await a.delete(key), false)
  })

  it('a record with a ttl expires; a write without one keeps it', async () => {
    const { a, b } = replicas()
    const key = fresh('ttl')
    await a.put(key, 'short', { ttlMs: 60_000 })
    const read = await b.get(key)
    assert.ok(
      read?.ttlMs !== undefined && read.ttlMs > 0 && read.ttlMs <= 60_000,
      `ttl ${read?.ttlMs}`,
    )
    await a.put(key, 'kept')
    assert.equal((await b.get(key))?.ttlMs, undefined, 'a put without ttlMs removes the expiry')
    await a.put(key, 'gone soon', { ttlMs: 30 })
    await until('the record to expire', async () => (await b.get(key)) === undefined)
    assert.ok((await b.put(key, 'new', { ifVersion: null })).ok, 'an expired key is absent')
  })

  it('refuses what is not JSON, and a key that is empty, at once', async () => {
    const { a } = replicas()
    await assert.rejects(a.put(fresh('bad'), undefined), TypeError)
    await assert.rejects(a.put('', 1), TypeError)
    await assert.rejects(
      a.publish(fresh('ch'), () => {}),
      TypeError,
    )
    await assert.rejects(a.add(fresh('c'), { n: Number.NaN }), TypeError)
    await assert.rejects(a.read(fresh('log'), { after: 'not-an-id' }), TypeError)
  })
}

function claims(replicas: () => Replicas) {
  it('claim-once: of concurrent takers on two replicas exactly one gets each record', async () => {
    const { a, b } = replicas()
    for (let round = 0; round < 10; round++) {
      const key = fresh('answer')
      await a.put(key, { answer: round })
      const takers = Array.from({ length: 16 }, (_, i) =>
        (i % 2 ? a : b).take<{ answer: number }>(key),
      )
      const got = (await Promise.all(takers)).filter((t) => t !== undefined)
      assert.equal(got.length, 1, `round ${round}: ${got.length} takers got the record`)
      assert.equal(got[0]!.value.answer, round)
      assert.equal(await a.get(key), undefined)
    }
  })

  it('create-once from two replicas at once: exactly one put wins, the others see it', async () => {
    const { a, b } = replicas()
    const key = fresh('owner')
    const puts = Array.from({ length: 20 }, (_, i) =>
      (i % 2 ? a : b).put(key, { by: i }, { ifVersion: null }),
    )
    const results = await Promise.all(puts)
    const won = results.filter((p) => p.ok)
    assert.equal(won.length, 1)
    const winner = results.findIndex((p) => p.ok)
    for (const lost of results.filter((p) => !p.ok))
      assert.deepEqual(!lost.ok && lost.current?.value, { by: winner })
  })

  it('take at a version takes only that version', async () => {
    const { a, b } = replicas()
    const key = fresh('take-v')
    const first = (await a.put(key, 'one')) as { version: string }
    await a.put(key, 'two')
    assert.equal(await b.take(key, { ifVersion: first.version }), undefined)
    assert.equal((await b.take(key))?.value, 'two')
  })
}

function pubsub(replicas: () => Replicas) {
  it("a publish reaches every replica's subscribers; an unsubscribed one gets no more", async () => {
    const { a, b } = replicas()
    const channel = fresh('list_changed')
    const [onA, onB, alsoB] = [inbox(), inbox(), inbox()]
    const offA = await a.subscribe(channel, onA.listener)
    const offB = await b.subscribe(channel, onB.listener)
    const offB2 = await b.subscribe(channel, alsoB.listener)
    assert.equal(await a.publish(channel, { kind: 'tools', n: 1 }), 2, 'two replicas subscribed')
    await b.publish(channel, { kind: 'tools', n: 2 })
    await Promise.all([onA.until(2, 'a'), onB.until(2, 'b'), alsoB.until(2, 'b, second listener')])
    for (const box of [onA, onB, alsoB])
      assert.deepEqual(box.got, [
        { kind: 'tools', n: 1 },
        { kind: 'tools', n: 2 },
      ])
    await offB()
    assert.equal(await a.publish(channel, 3), 2, "b's other listener still holds the channel")
    await alsoB.until(3, "b's other listener to get 3")
    await offB2()
    assert.equal(await a.publish(channel, 4), 1, 'only a is subscribed now')
    await onA.until(4, 'a to get 3 and 4')
    assert.deepEqual(onB.got.length, 2)
    assert.deepEqual(alsoB.got, [{ kind: 'tools', n: 1 }, { kind: 'tools', n: 2 }, 3])
    await offA()
    assert.equal(await a.publish(channel, 5), 0)
    await offA() // a second unsubscribe does nothing
  })

  it('a subscription counts from when subscribe resolves: a publish right after it arrives', async () => {
    const { a, b } = replicas()
    for (let i = 0; i < 5; i++) {
      const channel = fresh('answered')
      const box = inbox()
      const off = await a.subscribe(channel, box.listener)
      assert.equal(await b.publish(channel, { i }), 1)
      await box.until(1, `message ${i}`)
      await off()
    }
  })
}

function counters(replicas: () => Replicas) {
  it("counters from two replicas merge: every addition counts, none overwrites another's", async () => {
    const { a, b } = replicas()
    const key = fresh('metrics')
    const adds = Array.from({ length: 60 }, (_, i) =>
      (i % 2 ? a : b).add(key, { called: 1, ms: 0.5 }),
    )
    await Promise.all(adds)
    await a.add(key, { 'error:TIMEOUT': 2 })
    assert.deepEqual(await b.counters(key), { called: 60, ms: 30, 'error:TIMEOUT': 2 })
    assert.deepEqual(await a.add(key, { called: -10 }), { called: 50 })
    assert.deepEqual(await a.counters(fresh('none')), {})
  })

  it('a histogram made of counters merges across replicas', async () => {
    const { a, b } = replicas()
    const key = fresh('latency')
    const bounds = [5, 10, 50]
    await Promise.all(
      [1, 7, 7, 20, 90].map((v, i) => (i % 2 ? a : b).add(key, histogramDeltas(v, bounds))),
    )
    assert.deepEqual(histogramOf(await a.counters(key), bounds), {
      count: 5,
      sum: 125,
      bounds,
      cumulative: [1, 3, 4],
    })
  })

  it('counters with a ttl expire', async () => {
    const { a, b } = replicas()
    const key = fresh('window-counters')
    await a.add(key, { n: 1 }, { ttlMs: 30 })
    await until(
      'the counters to expire',
      async () => Object.keys(await b.counters(key)).length === 0,
    )
  })
}

function logs(replicas: () => Replicas) {
  it('the append log keeps the order of appends from every replica, and its bound', async () => {
    const { a, b } = replicas()
    const log = fresh('audit')
    const ids: string[] = []
    for (let i = 0; i < 6; i++) ids.push(await (i % 2 ? a : b).append(log, { i }, { maxLen: 4 }))
    const all = await a.read<{ i: number }>(log)
    assert.deepEqual(
      all.map((e) => e.value.i),
      [2, 3, 4, 5],
      'the last maxLen entries, oldest first',
    )
    assert.deepEqual(
      all.map((e) => e.id),
      ids.slice(2),
    )
    const page = await b.read<{ i: number }>(log, { after: ids[2], limit: 2 })
    assert.deepEqual(
      page.map((e) => e.value.i),
      [3, 4],
    )
    assert.deepEqual(await b.read(log, { after: ids[5] }), [])
    assert.deepEqual(await b.read(fresh('empty')), [])
  })

  it('a long log keeps its last maxLen entries, and pages through them in order', async () => {
    const { a, b } = replicas()
    const log = fresh('long')
    for (let i = 0; i < 150; i++) await a.append(log, i, { maxLen: 25 })
    const seen: number[] = []
    for (let after: string | undefined; ;) {
      const page = await b.read<number>(log, { limit: 7, ...(after ? { after } : {}) })
      if (!page.length) break
      seen.push(...page.map((e) => e.value))
      after = page.at(-1)!.id
    }
    assert.deepEqual(
      seen,
      Array.from({ length: 25 }, (_, i) => 125 + i),
    )
  })

  it('concurrent appends from two replicas all land, each once, in one order both read', async () => {
    const { a, b } = replicas()
    const log = fresh('events')
    const ids = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).append(log, i, { maxLen: 1000 })),
    )
    const [fromA, fromB] = [
      await a.read<number>(log, { limit: 1000 }),
      await b.read<number>(log, { limit: 1000 }),
    ]
    assert.deepEqual(fromA, fromB)
    assert.deepEqual(
      fromA.map((e) => e.value).sort((x, y) => x - y),
      Array.from({ length: 40 }, (_, i) => i),
    )
    assert.deepEqual(new Set(fromA.map((e) => e.id)), new Set(ids))
  })
}

function rates(replicas: () => Replicas) {
  it('a rate limit allows exactly max hits per window across replicas', async () => {
    const { a, b } = replicas()
    const key = fresh('rate')
    const limit = { max: 7, windowMs: 60_000 }
    const hits = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).hit(key, limit)),
    )
    assert.equal(hits.filter((h) => h.allowed).length, 7)
    const last = await a.hit(key, limit)
    assert.equal(last.allowed, false)
    assert.equal(last.count, 7)
    assert.equal(last.remaining, 0)
    assert.ok(last.resetMs > 0 && last.resetMs <= 60_000, `resetMs ${last.resetMs}`)
    const other = await b.hit(fresh('rate'), { ...limit, cost: 3 })
    assert.deepEqual([other.allowed, other.count, other.remaining], [true, 3, 4])
  })

  it('a window resets after windowMs; a hit that does not fit is not counted', async () => {
    const { a, b } = replicas()
    const key = fresh('rate-reset')
    const limit = { max: 2, windowMs: 1_000 }
    assert.ok((await a.hit(key, limit)).allowed)
    const big = await b.hit(key, { ...limit, cost: 5 })
    assert.deepEqual([big.allowed, big.count], [false, 1])
    assert.ok((await b.hit(key, limit)).allowed)
    await until('the window to reset', async () => (await a.hit(key, limit)).allowed)
    assert.equal((await b.hit(fresh('never'), { max: 0, windowMs: 1000 })).allowed, false)
    assert.equal((await b.hit(key, limit)).count, 2)
    const lowered = await a.hit(key, { max: 1, windowMs: 1_000 })
    assert.deepEqual([lowered.allowed, lowered.remaining], [false, 0], 'a lower max than counted')
  })
}
