/**
 * Rate limits on the HTTP endpoint (`rateLimit`, and a view's own): each caller — a token holder:
 * the static token's holders together, each OAuth subject alone — makes at most `max` requests per
 * `windowMs` in each view. With a store in the composition the count is the store's (a fixed window, counted
 * atomically), so every replica draws on one budget; without one it is this process's. A request
 * past the limit is answered 429 with `Retry-After` before its body is read. A store that does
 * not answer refuses nothing: requests pass uncounted meanwhile, and that is said once per outage.
 */
import { createHash } from 'node:crypto'
import { messageOf } from 'yoke'
import type { RateDecision, RateLimit, Store } from '../store/api.ts'

/** the most callers a process counts on its own before the expired windows are swept */
const SWEEP_AT = 10_000

export class RateLimiter {
  readonly #local = new Map<string, { start: number; count: number }>()
  #failing = false

  constructor(
    private readonly store: () => Store | undefined,
    private readonly warn: (message: string) => void,
  ) {}

  /** Counts one request of `who` in `view`: the decision, or undefined when it went uncounted. */
  async hit(view: string, who: string, limit: RateLimit): Promise<RateDecision | undefined> {
    const key = `mcp:rate:${view}:${createHash('sha256').update(who).digest('hex').slice(0, 16)}`
    const store = this.store()
    if (!store) return this.#hitHere(key, limit)
    try {
      const decision = await store.hit(key, limit)
      if (this.#failing) this.warn('the shared store answers again: rate limits are counted again')
      this.#failing = false
      return decision
    } catch (err) {
      if (!this.#failing)
        this.warn(
          `rate limits are not counted while the shared store does not answer (${messageOf(err)}): requests pass meanwhile`,
        )
      this.#failing = true
      return undefined
    }
  }

  #hitHere(key: string, { max, windowMs }: RateLimit): RateDecision {
    const now = Date.now()
    if (this.#local.size >= SWEEP_AT)
      for (const [k, w] of this.#local) if (now - w.start >= windowMs) this.#local.delete(k)
    let window = this.#local.get(key)
    if (!window || now - window.start >= windowMs)
      this.#local.set(key, (window = { start: now, count: 0 }))
    const allowed = window.count + 1 <= max
    if (allowed) window.count++
    return {
      allowed,
      count: window.count,
      remaining: Math.max(0, max - window.count),
      resetMs: window.start + windowMs - now,
    }
  }
}

/** The answer's RateLimit headers (the IETF draft's fields), and Retry-After when refused. */
export function rateHeaders(decision: RateDecision, max: number): Record<string, string> {
  const reset = String(Math.max(1, Math.ceil(decision.resetMs / 1000)))
  return {
    'ratelimit-limit': String(max),
    'ratelimit-remaining': String(decision.remaining),
    'ratelimit-reset': reset,
    ...(!decision.allowed && { 'retry-after': reset }),
  }
}
