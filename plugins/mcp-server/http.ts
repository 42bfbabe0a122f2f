/**
 * The Streamable HTTP endpoint, both eras on one URL per view. Each request is checked in order:
 * Host and Origin (403 on a loopback endpoint), the token (401, or 403 for an OAuth token without
 * the view's scope; the protected resource metadata is served before it: oauth/access.ts), the
 * path's view (404), the body's size (413, before it is read, from Content-Length, or while it
 * streams), its media type (415) and JSON (400, also for JSON nested deeper than MAX_DEPTH);
 * request.ts has those checks. Then its era decides (the SDK's own classification, as
 * isLegacyRequest runs it, over the body already parsed):
 *
 * - 2026-07-28 requests are stateless: the view's modern handler (createMcpHandler) serves each
 *   with a Server of its own, and checks the Mcp-Method / Mcp-Name headers against the body.
 * - 2025-era requests are sessions, as before: one Server and transport per session, kept in a map
 *   (404 for a session we do not know, or that belongs to another view); the Mcp-Method and
 *   Mcp-Name headers, when a client sends them, must agree with the body too. Idle sessions are
 *   closed. Sessions are capped per client (remote address) and in all (admission.ts), so no
 *   token holder can lock the others out.
 */
import { randomUUID } from 'node:crypto'
import {
  createServer,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from 'node:http'
import type { AddressInfo } from 'node:net'
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node'
import { isInitializeRequest, isJsonContentType } from '@modelcontextprotocol/server'
import { messageOf, YokeError } from 'yoke'
import { admission, perClientCap, type Seat } from './admission.ts'
import { DEFAULT_VIEW, type HttpConfig } from './config.ts'
import type { DrainReport, Lifecycle } from './lifecycle.ts'
import { duration } from './exchange.ts'
import { rateHeaders, type RateLimiter } from './rate.ts'
import type { RateLimit } from '../store/api.ts'
import { feed, type SessionSeal } from './sealed.ts'
import { isRefusal, type Access } from './oauth/access.ts'
import {
  clientOf,
  deeperThan,
  foreignRequest,
  headerMismatch,
  isLegacy,
  isLoopback,
  MAX_DEPTH,
  nestsDeeper,
  pathOf,
  readBody,
  reply,
} from './request.ts'
import type { McpSession } from './session.ts'
import type { View } from './views.ts'
import { keepStreamAlive } from './keepalive.ts'
import './errors.ts'

export { isLoopback, MAX_DEPTH, deeperThan }

export interface EndpointHost {
  views: Map<string, View>
  access: Access
  maxBodyBytes: number
  idleSessionMs: number
  maxSessions: number
  /** health, readiness, the drain and the replica id (lifecycle.ts) */
  lifecycle: Lifecycle
  /** with the replicas' shared secret: session ids any replica can resume (sealed.ts) */
  seal?: SessionSeal
  /**
   * with replicas: sends a 2025-era client's answers (JSON-RPC responses to what a session asked
   * it) to the replica whose question they answer (`deliver` there); false when it cannot
   */
  relayAnswer?(replica: string, answer: ClientAnswer): Promise<boolean>
  /** with `rateLimit`: counts a request of `who` in `view` (rate.ts) */
  rate: RateLimiter
  /** the rate limit of a view's requests, if it has one */
  rateLimitOf(view: View): RateLimit | undefined
  /** a new session for `view` (not yet connected) */
  open(view: View, id: string): McpSession
  /** the 2026-07-28 handler for `who`'s requests to `view` (stateless.ts) */
  modern(
    view: View,
    who: string,
  ): (req: IncomingMessage, res: ServerResponse, body: unknown) => Promise<void>
  /** a client's doing (bad input, a session closed to make room) */
  debug(message: string): void
  /** the endpoint's own trouble */
  warn(message: string): void
}

/** Where an instance's endpoint listened last: kept for its next version (ctx.keep). */
export interface LastEndpoint {
  host: string
  port: number
  url: string
}

/**
 * The port a new version of an instance asks for first: with `port: 0` (any free port) on the same
 * host, the one its last version had, so clients keep their URL; otherwise none (the config's).
 */
export function portAgain(
  last: LastEndpoint | undefined,
  http: { host: string; port: number },
): number | undefined {
  return http.port === 0 && last?.host === http.host ? last.port : undefined
}

/**
 * A 2025-era client's answer to what its session asked it (an elicitation, a sampling request),
 * as a replica relays it to the one whose question it answers (the id it answers names that one).
 */
export interface ClientAnswer {
  session: string
  view: string
  who: string
  protocolVersion?: string
  body: unknown
}

/**
 * The replica whose questions a POST's body answers: a body of JSON-RPC responses only, each to a
 * question with a tagged id (`tagQuestions`) of that one replica. Undefined for anything else.
 */
function answeredReplica(body: unknown): string | undefined {
  const messages = Array.isArray(body) ? body : [body]
  let replica: string | undefined
  for (const m of messages) {
    if (m === null || typeof m !== 'object' || 'method' in m) return undefined
    if (!('result' in m) && !('error' in m)) return undefined
    const id = (m as { id?: unknown }).id
    const at = typeof id === 'string' ? id.indexOf(QUESTION_TAG) : -1
    if (at < 0) return undefined
    const of = (id as string).slice(at + QUESTION_TAG.length)
    if (replica !== undefined && of !== replica) return undefined
    replica = of
  }
  return replica
}

/** what joins a question's own number and its replica in the id a session's client is sent */
const QUESTION_TAG = '@replica:'
/** the most questions of one session waiting for their answers whose ids are kept */
const QUESTIONS_KEPT = 1024

/**
 * Gives what a 2025-era session asks its client (an elicitation, a sampling request) an id that
 * names this replica: each replica's copy of a resumed session numbers its questions from 0, so
 * bare ids would collide, and one answer would settle two replicas' questions. The client's answer
 * gets its own id back on the way in; another replica's answer is relayed to it (`answeredReplica`).
 */
function tagQuestions(transport: NodeStreamableHTTPServerTransport, replica: string) {
  const send = transport.send.bind(transport)
  const receive = transport.onmessage
  const asked = new Map<string, string | number>()
  let n = 0
  transport.send = (message, options) => {
    if ('method' in message && 'id' in message) {
      const tagged = `${++n}${QUESTION_TAG}${replica}`
      asked.set(tagged, message.id)
      if (asked.size > QUESTIONS_KEPT) asked.delete(asked.keys().next().value!)
      return send({ ...message, id: tagged }, options)
    }
    // a question withdrawn (another asker answered first, the call ended) is named as it was sent
    if ('method' in message && message.method === 'notifications/cancelled') {
      const params = message.params as { requestId?: string | number } | undefined
      const tagged = [...asked].find(([, own]) => own === params?.requestId)?.[0]
      if (tagged) {
        asked.delete(tagged)
        return send({ ...message, params: { ...params, requestId: tagged } }, options)
      }
    }
    return send(message, options)
  }
  transport.onmessage = (message, extra) => {
    const id = 'id' in message ? message.id : undefined
    const own = typeof id === 'string' && !('method' in message) ? asked.get(id) : undefined
    if (own !== undefined) {
      asked.delete(id as string)
      return receive?.({ ...message, id: own } as typeof message, extra)
    }
    return receive?.(message, extra)
  }
}

/** #body's mark for a request it has answered (refused) already. */
const ANSWERED = Symbol('answered')

interface Tracked extends Seat {
  session: McpSession
  transport: NodeStreamableHTTPServerTransport
  /** who opened it (oauth/access.ts): only they may use it */
  who: string
  /** requests being handled and streams open: a session with any is not idle */
  active: number
}

/** A request let past the checks that come before its body: the view it names, and who sent it. */
interface Admitted {
  view: View
  who: string
}

export class HttpEndpoint {
  readonly sessions = new Map<string, Tracked>()
  #server?: HttpServer
  #sweep?: NodeJS.Timeout
  base = ''
  /** the port it listens on */
  port = 0

  constructor(
    private readonly cfg: HttpConfig,
    private readonly host: EndpointHost,
  ) {}

  /**
   * Listens; resolves to the base URL (`http://host:port`). `again`: the port to take when it is
   * free (a reload's, with `port: 0`), else any free one.
   */
  async listen(again?: number): Promise<string> {
    const server = (this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((err) => {
        // the path alone: a query string may hold what a client should not have put there
        this.host.warn(`HTTP ${req.method} ${pathOf(req.url)}: ${messageOf(err)}`)
        if (!res.headersSent) reply(res, 500, -32603, 'Internal error')
        else res.end()
      })
    }))
    const bind = (port: number) =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, this.cfg.host, () => {
          server.off('error', reject)
          resolve()
        })
      })
    await (again ? bind(again).catch(() => bind(this.cfg.port)) : bind(this.cfg.port)).catch(
      (err: NodeJS.ErrnoException) => {
        const why =
          err.code === 'EADDRINUSE'
            ? `port ${this.cfg.port} is in use (another yoke?); set http.port, or 0 for any free port`
            : err.message
        throw new YokeError(
          'MCP_ENDPOINT_FAILED',
          { address: `${this.cfg.host}:${this.cfg.port}`, reason: why },
          { cause: err },
        )
      },
    )
    const { address, port } = server.address() as AddressInfo
    this.port = port
    this.base = `http://${address.includes(':') ? `[${address}]` : address}:${port}`
    const every = Math.max(10, Math.min(60_000, this.host.idleSessionMs / 2))
    this.#sweep = setInterval(() => this.#closeIdle(), every)
    this.#sweep.unref()
    return this.base
  }

  urlOf(view: string): string {
    return `${this.base}${view === DEFAULT_VIEW ? this.cfg.path : `${this.cfg.path.replace(/\/$/, '')}/${view}`}`
  }

  /**
   * Refuses new requests from now on (each refusal closes its connection, so the client's retry
   * opens one the balancer may send elsewhere) and lets those in flight finish within `ms`. Idle
   * keep-alive connections are left open until the endpoint closes: closing one as a client reuses
   * it would fail that request instead of refusing it (lifecycle.ts).
   */
  drain(ms: number): Promise<DrainReport> {
    return this.host.lifecycle.drain(ms)
  }

  async close(): Promise<void> {
    clearInterval(this.#sweep)
    const server = this.#server
    await Promise.all([...this.sessions.values()].map((t) => t.session.close()))
    if (!server) return
    const closed = new Promise((resolve) => server.close(resolve))
    server.closeAllConnections()
    await closed
  }

  async #handle(req: IncomingMessage, res: ServerResponse) {
    const { lifecycle } = this.host
    res.setHeader('yoke-replica', lifecycle.replica)
    if (lifecycle.answer(pathOf(req.url), req, res)) return
    if (lifecycle.draining) {
      // the body is read first (and dropped, up to the size limit): a balancer still sending it
      // gets the 503, not a broken pipe, and sends the request to another replica
      if (req.method === 'POST') await readBody(req, this.host.maxBodyBytes).catch(() => {})
      return reply(
        res,
        503,
        -32000,
        `Service unavailable: this replica (${lifecycle.replica}) is shutting down; retry, and another replica answers`,
        { 'retry-after': '1', connection: 'close' },
      )
    }
    // a POST is waited on by a drain; a stream (GET, subscriptions/listen) is not
    if (req.method === 'POST') lifecycle.track(res)
    const admitted = await this.#admit(req, res)
    if (!admitted) return
    keepStreamAlive(res, this.cfg.keepAliveMs)
    // no limit, no wait: the count is asked for only where a view has one
    const limit = req.method === 'POST' ? this.host.rateLimitOf(admitted.view) : undefined
    if (limit && (await this.#limited(admitted, limit, req, res))) return
    let body: unknown
    if (req.method === 'POST') {
      body = await this.#body(req, res)
      if (body === ANSWERED) return
      if ((body as { method?: unknown } | null)?.method === 'subscriptions/listen')
        lifecycle.release(res)
    }
    const sid = req.headers['mcp-session-id']
    // a session is 2025-era by definition; the rest is classified as the SDK does it (from the
    // body we hold and the headers: a request with the envelope claim is 2026-07-28, and the
    // modern handler answers a malformed one)
    if (typeof sid !== 'string' && !isLegacy(req, body))
      return this.host.modern(admitted.view, admitted.who)(req, res, body)
    const mismatch = headerMismatch(req, body)
    if (mismatch) return reply(res, 400, -32020, `Bad Request: ${mismatch}`)
    if (typeof sid !== 'string') return this.#open(admitted, req, res, body)
    const tracked = this.sessions.get(sid) ?? (await this.#resume(sid, admitted, req, res))
    if (tracked === ANSWERED) return
    // a session stays with who opened it: another token holder cannot take it over by its id
    if (
      !tracked ||
      tracked.session.closed ||
      tracked.session.view !== admitted.view ||
      tracked.who !== admitted.who
    )
      return reply(res, 404, -32001, 'Session not found: initialize a new session')
    // the session's own client answered what another replica asked it: that replica takes it
    const asker = this.host.relayAnswer && answeredReplica(body)
    if (asker && asker !== this.host.lifecycle.replica) {
      const version = req.headers['mcp-protocol-version']
      const relayed = await this.host.relayAnswer!(asker, {
        session: sid,
        view: admitted.view.name,
        who: admitted.who,
        ...(typeof version === 'string' && { protocolVersion: version }),
        body,
      })
      if (relayed) return void res.writeHead(202).end()
      return reply(
        res,
        404,
        -32001,
        `Not found: the question this answers was asked by replica ${asker}, which is gone or cannot be reached; its call ended with it`,
      )
    }
    return this.#serve(tracked, req, res, body)
  }

  /**
   * The checks before the body: Host and Origin, the metadata documents served without a token,
   * the token, the path's view, the method. Undefined: the request was answered.
   */
  async #admit(req: IncomingMessage, res: ServerResponse): Promise<Admitted | undefined> {
    const foreign = isLoopback(this.cfg.host) ? foreignRequest(req) : undefined
    if (foreign) return void reply(res, 403, -32000, `Forbidden: ${foreign}`)
    const document = this.host.access.document?.(pathOf(req.url))
    if (document) {
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return void reply(res, 405, -32000, `Method not allowed: ${req.method}; use GET`, {
          allow: 'GET, HEAD',
        })
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' })
      return void res.end(req.method === 'GET' ? JSON.stringify(document) : undefined)
    }
    const view = this.#route(req.url ?? '/')
    const verdict = await this.host.access.check(
      req.headers.authorization,
      typeof view === 'string' ? undefined : view,
    )
    if (isRefusal(verdict)) {
      this.host.debug(
        `MCP ${req.method} ${pathOf(req.url)} refused (${verdict.status}): ${verdict.message}`,
      )
      return void reply(res, verdict.status, -32001, verdict.message, verdict.headers)
    }
    if (typeof view === 'string') return void reply(res, 404, -32601, view)
    if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE')
      return void reply(
        res,
        405,
        -32000,
        `Method not allowed: ${req.method}; MCP uses POST, GET and DELETE`,
        { allow: 'GET, POST, DELETE' },
      )
    return { view, who: verdict.who }
  }

  /** A POST's body as JSON, or ANSWERED: it was too large, not JSON, or nested too deep. */
  async #body(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
    const max = this.host.maxBodyBytes
    const read = await readBody(req, max)
    if (read === 'too large') {
      reply(res, 413, -32600, `Request body too large: at most ${max} bytes`, {
        connection: 'close',
      })
      return ANSWERED
    }
    if (!isJsonContentType(req.headers['content-type'] ?? '')) {
      reply(res, 415, -32000, 'Unsupported Media Type: send Content-Type: application/json')
      return ANSWERED
    }
    let body: unknown
    try {
      body = JSON.parse(read)
    } catch {
      reply(res, 400, -32700, 'Parse error: the body is not JSON')
      return ANSWERED
    }
    if (!nestsDeeper(read, body, MAX_DEPTH)) return body
    reply(
      res,
      400,
      -32700,
      `Parse error: the body nests arrays and objects deeper than ${MAX_DEPTH} levels`,
    )
    return ANSWERED
  }

  /** A 2025-era initialize: a new session, once there is room for it. */
  async #open(admitted: Admitted, req: IncomingMessage, res: ServerResponse, body: unknown) {
    if (req.method !== 'POST' || !isInitializeRequest(body))
      return reply(
        res,
        400,
        -32000,
        'Bad Request: no mcp-session-id header; start with an initialize request (2025 era), or send the 2026-07-28 request envelope',
      )
    const { view, who } = admitted
    const id =
      this.host.seal?.seal({ v: 1, view: view.name, who, init: body.params, iat: Date.now() }) ??
      randomUUID()
    const tracked = await this.#seat(admitted, id, req, res)
    if (!tracked) return
    await this.#serve(tracked, req, res, body)
    if (!tracked.transport.sessionId) await tracked.session.close() // the initialize was refused: no session came of it
  }

  /**
   * A session this replica does not hold, whose sealed id says it is the request's view's and
   * caller's: opened again here with that id and its initialize, fed as if the client sent it.
   * Undefined: not one (404 follows); ANSWERED: refused for room.
   */
  async #resume(id: string, admitted: Admitted, req: IncomingMessage, res: ServerResponse) {
    const facts = this.host.seal?.open(id)
    if (!facts || facts.view !== admitted.view.name || facts.who !== admitted.who) return undefined
    const tracked = await this.#seat(admitted, id, req, res)
    if (!tracked) return ANSWERED
    const { protocolVersion } = facts.init as { protocolVersion?: string }
    const opened = await feed(
      tracked.transport,
      {
        jsonrpc: '2.0',
        id: 'yoke-resume',
        method: 'initialize',
        params: facts.init,
      },
      {},
    )
    const headers = { 'mcp-session-id': id, 'mcp-protocol-version': String(protocolVersion) }
    const initialized =
      opened === 200 &&
      (await feed(
        tracked.transport,
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        headers,
      )) < 300
    if (!initialized) {
      this.host.warn(
        `MCP session ${id.slice(0, 8)}… could not be resumed here (its initialize got ${opened})`,
      )
      await tracked.session.close()
      return undefined
    }
    this.host.debug(
      `MCP session ${id.slice(0, 8)}… resumed on replica ${this.host.lifecycle.replica} (opened elsewhere, or before a restart)`,
    )
    return tracked
  }

  /** A new session `id` for the admitted caller, within the caps; undefined: refused (answered). */
  async #seat({ view, who }: Admitted, id: string, req: IncomingMessage, res: ServerResponse) {
    const client = clientOf(req)
    const room = admission([...this.sessions.values()], client, {
      maxSessions: this.host.maxSessions,
      maxSessionsPerClient: perClientCap(this.host.maxSessions, this.cfg.maxSessionsPerClient),
    })
    if (!room.admitted)
      return void reply(res, room.status, -32000, room.message, { 'retry-after': '5' })
    if (room.evict) this.#evict(room.evict.seat, room.evict.why)
    const session = this.host.open(view, id)
    session.closeWithServer = true
    const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: () => id })
    const tracked: Tracked = {
      session,
      transport,
      who,
      client,
      lastSeen: Date.now(),
      active: 0,
      requests: 0,
      get closed() {
        return session.closed
      },
    }
    this.sessions.set(id, tracked)
    void session.ended.then(() => this.sessions.delete(id))
    await session.serverFor('legacy').connect(transport)
    tagQuestions(transport, this.host.lifecycle.replica)
    return tracked
  }

  /** Counts the request against its caller's rate limit: true when it was refused (answered 429). */
  async #limited(
    { view, who }: Admitted,
    limit: RateLimit,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<boolean> {
    const decision = await this.host.rate.hit(view.name, who, limit)
    if (!decision) return false
    const headers = rateHeaders(decision, limit.max)
    if (decision.allowed) {
      for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
      return false
    }
    await readBody(req, this.host.maxBodyBytes).catch(() => {}) // read and dropped, as a drain does
    reply(
      res,
      429,
      -32000,
      `Too many requests: at most ${limit.max} per ${duration(limit.windowMs)} in the MCP view "${view.name}" (rateLimit); retry after ${headers['retry-after']} s`,
      headers,
    )
    return true
  }

  /**
   * A client's answer relayed by another replica, to a question this replica's copy of the session
   * asked: given to its transport as if the client had POSTed it here.
   */
  async deliver(answer: ClientAnswer): Promise<void> {
    const tracked = this.sessions.get(answer.session)
    const mine =
      tracked &&
      !tracked.closed &&
      tracked.who === answer.who &&
      tracked.session.view.name === answer.view
    // its question went with the session (closed, or never here): the answer has nothing to settle
    if (!mine) throw new Error(`no session ${answer.session.slice(0, 8)}… of that caller here`)
    await feed(tracked.transport, answer.body, {
      'mcp-session-id': answer.session,
      ...(answer.protocolVersion && { 'mcp-protocol-version': answer.protocolVersion }),
    })
  }

  async #serve(tracked: Tracked, req: IncomingMessage, res: ServerResponse, body: unknown) {
    // a GET is the client's stream for server messages: it keeps the session from the idle sweep,
    // but holding one open does not keep others out (any client can hold one per session)
    const request = req.method !== 'GET'
    tracked.active++
    if (request) tracked.requests++
    tracked.lastSeen = Date.now()
    res.once('close', () => {
      tracked.active--
      if (request) tracked.requests--
      tracked.lastSeen = Date.now()
    })
    await tracked.transport.handleRequest(req, res, body)
  }

  #evict(t: Tracked, why: string) {
    this.host.debug(`MCP session ${t.session.id} closed to make room: ${why}`)
    this.sessions.delete(t.session.id)
    void t.session.close()
  }

  /** The view a path names, or why it names none. */
  #route(url: string): View | string {
    const path = url.split('?')[0]!.replace(/\/+$/, '') || '/'
    const root = this.cfg.path.replace(/\/+$/, '') || '/'
    if (path === root) return this.host.views.get(DEFAULT_VIEW)!
    const prefix = root === '/' ? '/' : `${root}/`
    let name: string | undefined
    try {
      name = path.startsWith(prefix) ? decodeURIComponent(path.slice(prefix.length)) : undefined
    } catch {
      return `Not found: ${path} is not a well-encoded path`
    }
    const view = name === undefined ? undefined : this.host.views.get(name)
    if (view) return view
    if (name === undefined) return `Not found: the MCP endpoint is ${this.cfg.path}`
    return new YokeError('MCP_VIEW_UNKNOWN', {
      view: name,
      views: [...this.host.views.keys()].join(', '),
    }).message
  }

  #closeIdle() {
    const before = Date.now() - this.host.idleSessionMs
    for (const [id, t] of this.sessions) {
      if (t.active > 0 || t.lastSeen > before) continue
      this.host.debug(`MCP session ${id} idle for ${this.host.idleSessionMs} ms: closed`)
      this.sessions.delete(id)
      void t.session.close()
    }
  }
}
