// The gateway's rate limiter on its own: counted in the process with no store (a fixed window per
// caller and view), in the store when there is one, and uncounted — said once — while the store
// does not answer.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { rateHeaders, RateLimiter } from '../../../plugins/mcp-server/rate.ts'
import type { RateLimit, Store } from '../../../plugins/store/api.ts'

const LIMIT: RateLimit = { max: 2, windowMs: 60_000 }

describe('the rate limiter', () => {
  it('counts each caller in each view on its own, in the process when there is no store', async () => {
    const limiter = new RateLimiter(() => undefined, assert.fail)
    const a1 = await limiter.hit('v', 'alice', LIMIT)
    const a2 = await limiter.hit('v', 'alice', LIMIT)
    const a3 = await limiter.hit('v', 'alice', LIMIT)
    assert.deepEqual([a1!.allowed, a2!.allowed, a3!.allowed], [true, true, false])
    assert.equal(a3!.remaining, 0)
    assert.ok(a3!.resetMs > 0 && a3!.resetMs <= LIMIT.windowMs)
    assert.equal((await limiter.hit('v', 'bob', LIMIT))!.allowed, true, 'another caller')
    assert.equal((await limiter.hit('w', 'alice', LIMIT))!.allowed, true, 'another view')
    assert.deepEqual(rateHeaders(a3!, LIMIT.max), {
      'ratelimit-limit': '2',
      'ratelimit-remaining': '0',
      'ratelimit-reset': String(Math.ceil(a3!.resetMs / 1000)),
      'retry-after': String(Math.ceil(a3!.resetMs / 1000)),
    })
  })

  it('counts in the store when there is one, and lets requests pass, saying so once, while it does not answer', async () => {
    const keys: string[] = []
    let down = false
    const store = {
      hit: async (key: string, limit: RateLimit) => {
        if (down) throw new Error('STORE_UNAVAILABLE: no answer')
        keys.push(key)
        return { allowed: false, count: limit.max, remaining: 0, resetMs: 1500 }
      },
    } as unknown as Store
    const said: string[] = []
    const limiter = new RateLimiter(
      () => store,
      (m) => said.push(m),
    )
    assert.equal((await limiter.hit('v', 'alice', LIMIT))!.allowed, false)
    assert.match(keys[0]!, /^mcp:rate:v:[0-9a-f]{16}$/, 'the caller is a hash, not its name')
    down = true
    assert.equal(await limiter.hit('v', 'alice', LIMIT), undefined)
    assert.equal(await limiter.hit('v', 'alice', LIMIT), undefined)
    assert.equal(said.length, 1)
    assert.match(said[0]!, /not counted while the shared store does not answer/)
    down = false
    assert.equal((await limiter.hit('v', 'alice', LIMIT))!.allowed, false)
    assert.match(said[1]!, /answers again/)
  })
})
