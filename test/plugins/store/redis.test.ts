// The redis engine on a real redis-server (one per file, on a free loopback port): the shared
// suite with two connections as two replicas, then what only a networked store has — prefixes
// that keep deployments apart, Redis killed mid-load and restarted, a peer that stops answering,
// one that never answers, none at all. Every failure is STORE_UNAVAILABLE naming the store, and
// every wait is bounded; no timed assertions. Skips, saying which binary, without redis-server.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { YokeError } from '../../../src/index.ts'
import type { StoreHealth } from '../../../plugins/store/api.ts'
import { RedisStore, type RedisStoreOptions } from '../../../plugins/store/redis.ts'
import { until } from '../../helpers/until.ts'
import { storeConformance } from './conformance.ts'
import { freePort, missing, redisForFile, silentPeer } from './redis-server.ts'

const server = await redisForFile()
const opened: RedisStore[] = []
after(() => opened.forEach((s) => s.close()))

/** A store on this file's server (or `url`), with its log lines collected. */
function store(options: Partial<RedisStoreOptions> = {}) {
  const said: string[] = []
  const s = new RedisStore({
    name: 'shared',
    url: server?.url ?? 'redis://127.0.0.1:1',
    keyPrefix: `test-${randomBytes(4).toString('hex')}:`,
    // generous where a test is not about timeouts: a loaded machine stalls the event loop
    connectTimeoutMs: 5_000,
    commandTimeoutMs: 5_000,
    say: (level, message) => said.push(`${level}: ${message}`),
    ...options,
  })
  opened.push(s)
  return Object.assign(s, { said })
}

/** Awaits `work`, which must fail with STORE_UNAVAILABLE; returns the error. */
async function unavailable(work: Promise<unknown>) {
  const error = await work.then(
    (value) => assert.fail(`expected STORE_UNAVAILABLE, got ${JSON.stringify(value)}`),
    (e: unknown) => e,
  )
  assert.ok(error instanceof YokeError, `not a YokeError: ${String(error)}`)
  assert.equal(error.code, 'STORE_UNAVAILABLE', error.message)
  return error
}

storeConformance(
  'redis',
  async () => {
    const keyPrefix = `conformance-${randomBytes(4).toString('hex')}:`
    const [a, b] = [store({ keyPrefix }), store({ keyPrefix })]
    return { a, b, close: () => [a, b].forEach((s) => s.close()) }
  },
  missing,
)

describe('the redis engine', { skip: missing }, () => {
  it('keeps deployments apart by key prefix, on one Redis', async () => {
    const [prod, staging] = [store({ keyPrefix: 'prod:' }), store({ keyPrefix: 'staging:' })]
    await prod.put('session', 'prod')
    await prod.add('metrics', { n: 1 })
    assert.equal(await staging.get('session'), undefined)
    assert.deepEqual(await staging.counters('metrics'), {})
    const heard: unknown[] = []
    await staging.subscribe('changed', (m) => heard.push(m))
    assert.equal(await prod.publish('changed', 1), 0, "prod's channel is not staging's")
    assert.equal((await store({ keyPrefix: 'prod:' }).get('session'))?.value, 'prod')
  })

  it('logs in with a password that needs escaping, as an ACL user held to its prefix', async () => {
    const admin = new Redis(server!.url, { maxRetriesPerRequest: 0 })
    const password = 'p@ss:w/rd%?#'
    try {
      await admin.call('ACL', 'SETUSER', 'yoke-test', 'on', `>${password}`, 'resetkeys', '~acl:*')
      await admin.call('ACL', 'SETUSER', 'yoke-test', 'resetchannels', '&acl:*', '+@all')
      const url = server!.url.replace('redis://', 'redis://yoke-test@')
      const s = store({ url, password, keyPrefix: 'acl:' })
      assert.equal((await s.put('k', 1)).ok, true)
      assert.doesNotMatch(s.target + s.said.join('\n'), /p@ss/)
      const outside = store({ url, password, keyPrefix: 'other:' })
      const refused = await unavailable(outside.get('k'))
      assert.match(refused.message, /NOPERM/)
    } finally {
      await admin.call('ACL', 'DELUSER', 'yoke-test')
      admin.disconnect()
    }
  })

  it('connects at its first operation when lazy (a one-shot command), and says it connected', async () => {
    const s = store({ lazy: true })
    assert.equal((await s.put('k', 1)).ok, true)
    assert.deepEqual(s.said, [`info: store shared: connected to ${s.target}`])
    const health = await s.health()
    assert.equal(health.state, 'ready')
    assert.ok(typeof health.latencyMs === 'number')
  })
})

/**
 * Operations on `s` one after another until stopped: how many answered, how many failed with
 * STORE_UNAVAILABLE; `stop()` ends the stream (also when a test failed) and gives any other error.
 */
function loadOn(s: RedisStore) {
  const counts = { ok: 0, unavailable: 0, other: [] as string[] }
  let stopped = false
  const running = (async () => {
    while (!stopped) {
      await s.add('load', { n: 1 }).then(
        () => counts.ok++,
        (e) =>
          e instanceof YokeError && e.code === 'STORE_UNAVAILABLE'
            ? counts.unavailable++
            : counts.other.push(String(e)),
      )
      await new Promise((resolve) => setImmediate(resolve))
    }
  })()
  const stop = async () => {
    stopped = true
    await running
    return counts.other
  }
  after(stop)
  return Object.assign(counts, { stop })
}

describe('store outages', { skip: missing }, () => {
  it('Redis killed mid-load: operations fail with STORE_UNAVAILABLE, then it reconnects by itself', async () => {
    const keyPrefix = `outage-${randomBytes(4).toString('hex')}:`
    const [s, other] = [store({ name: 'sessions', keyPrefix }), store({ keyPrefix })]
    const states: Array<StoreHealth['state']> = []
    s.onState((h) => states.push(h.state))
    const heard: unknown[] = []
    await other.subscribe('list_changed', (m) => heard.push(m))
    await s.put('before', 1)

    // a stream of operations while Redis dies: each one answers or fails with the code, none hangs
    const load = loadOn(s)
    try {
      await until('a few operations before the kill', () => load.ok > 20)
      await server!.kill()
      await until('operations to fail while Redis is down', () => load.unavailable > 5)

      const error = await unavailable(s.get('before'))
      assert.match(
        error.message,
        /the store "sessions" \(redis:\/\/127\.0\.0\.1:\d+, keys outage-\w+:\*\) cannot answer: /,
      )
      assert.match(error.hint, /reconnects by itself/)
      assert.equal((await s.health()).state, 'down')
      await unavailable(other.publish('list_changed', 'lost'))
      await until(
        'the other replica to see Redis gone',
        async () => (await other.health()).state === 'down',
      )
      await unavailable(other.subscribe('list_changed', () => {}))
    } finally {
      await server!.start()
    }
    await until('the store to reconnect', async () => (await s.health()).state === 'ready', {
      ms: 20_000,
    })
    assert.deepEqual(await load.stop(), [], 'every failure was STORE_UNAVAILABLE')
    assert.equal((await s.put('after', 2)).ok, true)
    assert.equal(
      await s.get('before'),
      undefined,
      "a restarted Redis without persistence lost its data (we run it with --save '')",
    )
    assert.deepEqual(states, ['ready', 'down', 'ready'], 'connected, lost, back')
    const [lost, back] = s.said.slice(1)
    assert.match(
      lost!,
      /^warn: store sessions: lost redis:.*; reconnecting, and what needs the store fails with STORE_UNAVAILABLE meanwhile$/,
    )
    assert.match(back!, /^info: store sessions: reconnected to redis:.* after \d+\.\d s$/)
    assert.equal(s.said.length, 3, `said once each: ${s.said.join(' | ')}`)

    // the subscription came back with the connection: a publish after the restart reaches it
    await until(
      'the pub/sub connection to resubscribe',
      async () => (await s.publish('list_changed', 'again')) === 1,
    )
    await until('the message after the restart', () => heard.includes('again'))
  })

  it('a peer that stops answering: a bounded STORE_UNAVAILABLE, then back when it answers again', async () => {
    const s = store({ commandTimeoutMs: 200 })
    await s.put('k', 'v')
    server!.pause()
    try {
      const error = await unavailable(s.get('k'))
      assert.match(error.message, /cannot answer: no answer within 200 ms|Socket timeout/)
      await until(
        'the silent socket to be dropped',
        async () => (await s.health()).state === 'down',
      )
      await unavailable(s.get('k'))
    } finally {
      server!.resume()
    }
    await until('the store to reconnect', async () => (await s.health()).state === 'ready', {
      ms: 20_000,
    })
    assert.equal((await s.get('k'))?.value, 'v')
  })

  it('a peer that accepts and never answers: a bounded STORE_UNAVAILABLE, never a hang', async () => {
    const peer = await silentPeer()
    try {
      const s = store({ name: 'dead', url: peer.url, connectTimeoutMs: 300, commandTimeoutMs: 200 })
      const error = await unavailable(s.take('answer'))
      assert.match(error.message, /the store "dead" .* cannot answer: no connection within 300 ms/)
      await unavailable(s.subscribe('x', () => {}))
      const health = await s.health()
      assert.equal(health.state, 'down')
      assert.match(
        s.said.join('\n'),
        /warn: store dead: cannot reach redis:\/\/127\.0\.0\.1:\d+, keys .*; retrying/,
      )
    } finally {
      await peer.close()
    }
  })

  it('nothing listening: STORE_UNAVAILABLE at once, naming the store, where, why and the fix', async () => {
    const port = await freePort()
    const s = store({ name: 'approvals', url: `redis://:secret@127.0.0.1:${port}/2` })
    const error = await unavailable(s.put('q', 1))
    assert.match(
      error.message,
      new RegExp(
        `the store "approvals" \\(redis://127\\.0\\.0\\.1:${port}/2, keys .*\\) cannot answer: .*ECONNREFUSED`,
      ),
    )
    assert.doesNotMatch(
      error.message + s.said.join('\n'),
      /secret/,
      'the password is never printed',
    )
    assert.match(error.hint, /redis-cli -u <url> ping/)
    for (const op of [
      s.get('q'),
      s.hit('q', { max: 1, windowMs: 10 }),
      s.read('log'),
      s.append('log', 1, { maxLen: 2 }),
    ])
      await unavailable(op)
    s.close()
    await unavailable(s.get('q'))
  })
})
