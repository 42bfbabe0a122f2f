// The store plugin in a kernel: the default is the memory engine (its state kept for the next
// version of the instance); the redis engine on a real redis-server, with `store/doctor` saying
// ready, then the fix when Redis is gone; disposing the instance closes its connections; the
// config refuses what is not a Redis URL.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Redis } from 'ioredis'
import {
  Kernel,
  toPlugin,
  validateConfig,
  type DoctorCheck,
  type Plugin,
} from '../../../src/index.ts'
import type { Store } from '../../../plugins/store/api.ts'
import storePlugin from '../../../plugins/store/index.ts'
import { until } from '../../helpers/until.ts'
import { missing, redisForFile } from './redis-server.ts'

const plugin = toPlugin(storePlugin) as Plugin

/** A kernel running the store plugin under `key` with `config` (validated as the resolver does). */
async function kernelWith(config: unknown, kernel = new Kernel(), key = 'store') {
  const checked = validateConfig(plugin, config)
  assert.ok('value' in checked, JSON.stringify(checked))
  const fiber = kernel.spawn(plugin, checked.value, { key })
  await kernel.settled()
  assert.equal(fiber.state, 'active', fiber.error?.message)
  const store = kernel.services.get('store')!.value as Store
  const doctor = async () => (await kernel.ask('store/doctor')) as DoctorCheck[]
  return { kernel, fiber, store, doctor }
}

describe('the store plugin', () => {
  it('is in memory by default, and the next version of the instance keeps what it holds', async () => {
    const { kernel, fiber, store, doctor } = await kernelWith({})
    try {
      assert.equal(store.engine, 'memory')
      await store.put('session', { era: '2025' })
      assert.deepEqual(await doctor(), [
        {
          level: 'ok',
          message: 'in memory (this process only: replicas share nothing)',
        },
      ])
      await kernel.remove(fiber)
      const next = await kernelWith({}, kernel)
      assert.deepEqual((await next.store.get('session'))?.value, { era: '2025' })
    } finally {
      await kernel.dispose()
    }
  })

  it('refuses a url that is not redis:// or rediss://, and an unknown key', () => {
    const refused = [
      { url: 'http://127.0.0.1:6379' },
      { engine: 'redis', urls: 'redis://127.0.0.1:6379' },
      { keyPrefix: 'a b' },
      { engine: 'valkey' },
    ]
    for (const config of refused)
      assert.ok('issues' in validateConfig(plugin, config), JSON.stringify(config))
    const defaults = validateConfig(plugin, {})
    assert.ok('value' in defaults)
    assert.deepEqual(defaults.value, {
      engine: 'memory',
      url: 'redis://127.0.0.1:6379',
      keyPrefix: 'yoke:',
      connectTimeoutMs: 2_000,
      commandTimeoutMs: 1_000,
    })
  })
})

describe('the store plugin on Redis', { skip: missing }, async () => {
  const server = await redisForFile()

  it('doctor says ready, then what is wrong and the fix when Redis is gone; dispose closes its connections', async () => {
    const config = {
      engine: 'redis',
      url: server!.url,
      keyPrefix: 'plugin-test:',
      commandTimeoutMs: 5_000,
    }
    const { kernel, store, doctor } = await kernelWith(config, new Kernel(), 'shared-state')
    const watcher = new Redis(server!.url, { lazyConnect: true, maxRetriesPerRequest: 0 })
    try {
      assert.equal(store.engine, 'redis')
      await store.subscribe('list_changed', () => {})
      const [ok] = await doctor()
      assert.equal(ok?.level, 'ok')
      assert.match(
        ok!.message,
        /^shared-state: redis redis:\/\/127\.0\.0\.1:\d+, keys plugin-test:\* ready, PING [\d.]+ ms$/,
      )
      await watcher.connect()
      const named = async () =>
        String(await watcher.client('LIST'))
          .split('\n')
          .filter((line) => / name=yoke-(store|pubsub)-shared-state /.test(line)).length
      assert.equal(await named(), 2, 'a commands connection and a pub/sub one')

      await server!.kill()
      await until(
        'the store to see Redis gone',
        async () => (await store.health()).state === 'down',
      )
      const [down] = await doctor()
      assert.equal(down?.level, 'error')
      assert.match(down!.message, /^shared-state: redis .* down since .*: /)
      assert.match(down!.hint!, /redis-cli -u <url> ping/)

      watcher.disconnect()
      await server!.start()
      await until('the store to reconnect', async () => (await store.health()).state === 'ready', {
        ms: 20_000,
      })
      await watcher.connect()
      await until('both connections back', async () => (await named()) === 2, { ms: 20_000 })
      await kernel.dispose()
      await until('its connections to close', async () => (await named()) === 0)
    } finally {
      watcher.disconnect()
      await kernel.dispose()
    }
  })
})
