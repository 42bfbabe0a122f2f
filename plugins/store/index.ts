/**
 * store: the `store` service, the state a gateway's replicas must share (issue 31): keyed records
 * with expiry and compare-and-set, claim-once, pub/sub, merged counters, a bounded append log and
 * rate limits. The `memory` engine (the default) keeps it in this process, across reloads of the
 * instance; the `redis` engine shares it through Redis. `yoke doctor` says which runs and how it
 * is (`store/doctor`).
 */
import { definePlugin, type Context, type DoctorCheck } from 'yoke'
import type { Store, StoreHealth } from './api.ts'
import { storeConfig, type StoreConfig } from './config.ts'
import { MemoryBackend, MemoryStore } from './memory.ts'
import { RedisStore } from './redis.ts'

export type * from './api.ts'

/** how often the memory engine drops what expired (reads drop it anyway) */
const SWEEP_MS = 60_000

export default definePlugin({
  name: 'store',
  provides: ['store'],
  config: storeConfig,
  // where the gateway's shared state (sessions, approvals, OAuth holders' sessions) goes, and
  // which variable's password is sent there: a project that sets them waits until it is trusted
  sendsSecrets: () => ['url', 'passwordEnv'],
  apply(ctx, config) {
    const store = config.engine === 'redis' ? redisStore(ctx, config) : memoryStore(ctx)
    ctx.provide('store', store)
    ctx.control('store/doctor', async () => doctor(ctx.key, await store.health()))
  },
})

function memoryStore(ctx: Context): Store {
  const backend = ctx.keep('memory', () => new MemoryBackend())
  const store = new MemoryStore(backend)
  ctx.setInterval(() => backend.sweep(), SWEEP_MS)
  ctx.effect('store: end this version’s subscriptions', () => store.close())
  return store
}

function redisStore(ctx: Context, config: StoreConfig): Store {
  const password = config.passwordEnv ? process.env[config.passwordEnv] : undefined
  if (config.passwordEnv && password === undefined)
    ctx.logger.warn(
      `store ${ctx.key}: ${config.passwordEnv} is not set: connecting without a password`,
    )
  const store = new RedisStore({
    name: ctx.key,
    url: config.url,
    ...(password !== undefined ? { password } : {}),
    keyPrefix: config.keyPrefix,
    connectTimeoutMs: config.connectTimeoutMs,
    commandTimeoutMs: config.commandTimeoutMs,
    // a one-shot command connects only if something uses the store
    lazy: ctx.runMode === 'once',
    say: (level, message) => ctx.logger[level](message),
  })
  ctx.effect('store: close the Redis connections', () => store.close())
  return store
}

/** `yoke doctor`'s check of the store: which engine, and whether it answers. */
export function doctor(name: string, health: StoreHealth): DoctorCheck[] {
  // doctor prints the plugin's name first: the instance is said when it has another key
  const who = name === 'store' ? '' : `${name}: `
  if (health.engine === 'memory')
    return [
      {
        level: 'ok',
        message: `${who}in memory (this process only: replicas share nothing)`,
      },
    ]
  if (health.state === 'ready')
    return [
      {
        level: 'ok',
        message: `${who}redis ${health.target} ready${health.latencyMs === undefined ? '' : `, PING ${health.latencyMs} ms`}`,
      },
    ]
  return [
    {
      level: 'error',
      message: `${who}redis ${health.target} ${health.state} since ${new Date(health.since).toISOString()}: ${health.error ?? 'no answer'}`,
      hint: 'Start Redis there or fix the store instance’s `url` (`redis-cli -u <url> ping` checks it); the client reconnects by itself.',
    },
  ]
}
