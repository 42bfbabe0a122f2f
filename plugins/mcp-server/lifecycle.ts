/**
 * A replica's life as a load balancer sees it: `GET /healthz` answers 200 while the process serves
 * (liveness); `GET /readyz` answers 200 until a drain begins, then 503, so the balancer stops
 * sending it traffic (readiness). Neither needs the token: they say nothing but the state and the
 * replica id, and a balancer's checks carry no credentials.
 *
 * A drain (`yoke serve` on SIGTERM or Ctrl-C) refuses new requests with 503, `Retry-After` and
 * `Connection: close`, so a client retries and the balancer picks another replica; the requests
 * in flight finish, within a bound; then it reports how many finished and how many it cut off.
 * Long-lived streams (a 2025 session's GET stream, a `subscriptions/listen`) are not waited on:
 * they end when the endpoint closes, and their clients reconnect.
 */
import { hostname } from 'node:os'
import type { IncomingMessage, ServerResponse } from 'node:http'

export interface DrainReport {
  /** requests that were in flight when the drain began, or arrived before its refusals, and finished */
  finished: number
  /** requests still in flight when the bound ran out: they end with the endpoint */
  cut: number
  ms: number
}

/** `YOKE_REPLICA_ID`, else this host's name and the process id: in health answers, headers and `yoke serve`'s banner. */
export function replicaId(env: NodeJS.ProcessEnv = process.env): string {
  const given = env.YOKE_REPLICA_ID?.trim()
  return given ? given.slice(0, 128) : `${hostname()}-${process.pid}`
}

export class Lifecycle {
  #inflight = 0
  #drain?: { finished: number; idle: Promise<void>; settle: () => void }

  /**
   * how this replica shares state with the others, for the health answers: `store` (joined
   * through the shared store), `alone: <why>` (a store it cannot reach now), absent (no store)
   */
  sharing?: () => string | undefined

  constructor(readonly replica: string) {}

  get draining(): boolean {
    return this.#drain !== undefined
  }

  /** Counts a request as in flight until its response closes. */
  track(res: ServerResponse): void {
    this.#inflight++
    res.once('close', this.#left)
  }

  /** A tracked request that turned out to be a long-lived stream: not waited on. */
  release(res: ServerResponse): void {
    res.off('close', this.#left)
    this.#inflight--
    if (this.#drain && !this.#inflight) this.#drain.settle()
  }

  readonly #left = () => {
    this.#inflight--
    const drain = this.#drain
    if (!drain) return
    drain.finished++
    if (!this.#inflight) drain.settle()
  }

  /** Answers `/healthz` and `/readyz` (true), or leaves the request alone (false). */
  answer(path: string, req: IncomingMessage, res: ServerResponse): boolean {
    if (path !== '/healthz' && path !== '/readyz') return false
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end()
      return true
    }
    const live = path === '/healthz'
    const ok = live || !this.draining
    const shared = this.sharing?.()
    const body = {
      ...(live
        ? { status: 'ok', replica: this.replica }
        : { ready: ok, replica: this.replica, ...(!ok && { reason: 'draining' }) }),
      ...(shared !== undefined && { shared }),
    }
    res.writeHead(ok ? 200 : 503, {
      'content-type': 'application/json',
      'cache-control': 'no-store',
    })
    res.end(req.method === 'GET' ? JSON.stringify(body) : undefined)
    return true
  }

  /**
   * Begins (or joins) the drain: from now on `/readyz` is 503 and new requests are refused.
   * Resolves when no request is in flight, or after `ms`.
   */
  async drain(ms: number): Promise<DrainReport> {
    const started = performance.now()
    if (!this.#drain) {
      let settle!: () => void
      const idle = new Promise<void>((resolve) => (settle = resolve))
      this.#drain = { finished: 0, idle, settle }
    }
    const drain = this.#drain
    if (this.#inflight) {
      let bound: NodeJS.Timeout | undefined
      await Promise.race([
        drain.idle,
        new Promise<void>((resolve) => (bound = setTimeout(resolve, ms))),
      ])
      clearTimeout(bound)
    }
    return {
      finished: drain.finished,
      cut: this.#inflight,
      ms: Math.round(performance.now() - started),
    }
  }
}
