/**
 * The Streamable HTTP endpoint, both eras on one URL per view. Each request is checked in order:
 * Host and Origin (403 on a loopback endpoint), the token (401, or 403 for an OAuth token without
 * the view's scope; access.ts: the protected resource metadata is served before it), the path's view (404), the
 * body's size (413, before it is read, from Content-Length, or while it streams), its media type
 * (415) and JSON (400, also for JSON nested deeper than MAX_DEPTH). Then its era decides (the SDK's own classification, isLegacyRequest):
 *
 * - 2026-07-28 requests are stateless: the view's modern handler (createMcpHandler) serves each
 *   with a Server of its own, and checks the Mcp-Method / Mcp-Name headers against the body.
 * - 2025-era requests are sessions, as before: one Server and transport per session, kept in a map
 *   (404 for a session we do not know, or that belongs to another view); the Mcp-Method and
 *   Mcp-Name headers, when a client sends them, must agree with the body too. Idle sessions are
 *   closed. Sessions are capped per client (remote address) and in all; at a cap a new session
 *   takes the place of an idle one (the client's own, else one of the client that holds the
 *   most), so no token holder can lock the others out.
 */
import { randomUUID } from 'node:crypto'
import {
  createServer,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from 'node:http'
import { isIP, type AddressInfo } from 'node:net'
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node'
import {
  isInitializeRequest,
  isJsonContentType,
  isLegacyRequest,
} from '@modelcontextprotocol/server'
import { YokeError } from 'yoke'
import { DEFAULT_VIEW, type HttpConfig } from './config.ts'
import type { McpSession } from './session.ts'
import { isRefusal, type Access } from './access.ts'
import type { View } from './views.ts'
import './errors.ts'

export interface EndpointHost {
  views: Map<string, View>
  access: Access
  maxBodyBytes: number
  idleSessionMs: number
  maxSessions: number
  /** a new session for `view` (not yet connected) */
  open(view: View, id: string): McpSession
  /** the view's handler of 2026-07-28 requests (stateless) */
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

/**
 * The deepest nesting of arrays and objects a body may have: the SDK re-serialises a body on its
 * way in, and a deeper one would overflow the stack there (a 500) instead of being refused.
 */
export const MAX_DEPTH = 512

interface Tracked {
  session: McpSession
  transport: NodeStreamableHTTPServerTransport
  /** the remote address that opened it: sessions are capped per client */
  client: string
  /** who opened it (access.ts): only they may use it */
  who: string
  lastSeen: number
  /** requests being handled and streams open: a session with any is not idle */
  active: number
  /** requests being handled (not the GET stream): a session with any is never made to give way */
  requests: number
}

/** The client a request comes from, for the per-client cap: its remote address (IPv4-mapped folded). */
function clientOf(req: IncomingMessage): string {
  return (req.socket.remoteAddress ?? 'unknown').replace(/^::ffff:(?=\d+\.)/i, '')
}

export function isLoopback(host: string): boolean {
  return (
    host === 'localhost' ||
    host === '::1' ||
    host === '[::1]' ||
    (isIP(host) === 4 && host.startsWith('127.'))
  )
}

/**
 * DNS rebinding and browser pages (the MCP spec's advice for local servers): a loopback endpoint
 * answers only requests addressed to a loopback name, and only from no origin or a loopback one.
 */
function foreignRequest(req: IncomingMessage): string | undefined {
  const hostname = (value: string) => value.replace(/:\d+$/, '')
  const host = req.headers.host
  if (host && !isLoopback(hostname(host)))
    return `the Host "${host}" is not this machine's loopback address`
  const origin = req.headers.origin
  if (origin === undefined) return undefined
  let url: URL | undefined
  try {
    url = new URL(origin)
  } catch {
    // not a URL: refused below
  }
  if (!url || !/^https?:$/.test(url.protocol) || !isLoopback(url.hostname))
    return `requests from the origin "${origin}" are not accepted (only loopback origins)`
  return undefined
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
        this.host.warn(`HTTP ${req.method} ${pathOf(req.url)}: ${(err as Error)?.message ?? err}`)
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
    const foreign = isLoopback(this.cfg.host) ? foreignRequest(req) : undefined
    if (foreign) return reply(res, 403, -32000, `Forbidden: ${foreign}`)
    const document = this.host.access.document?.(pathOf(req.url))
    if (document) {
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return reply(res, 405, -32000, `Method not allowed: ${req.method}; use GET`, {
          allow: 'GET, HEAD',
        })
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' })
      return res.end(req.method === 'GET' ? JSON.stringify(document) : undefined)
    }
    const view = this.#route(req.url ?? '/')
    const verdict = await this.host.access.check(
      req.headers.authorization,
      typeof view === 'string' ? undefined : view,
    )
    if (isRefusal(verdict)) {
      const denied = verdict
      this.host.debug(
        `MCP ${req.method} ${pathOf(req.url)} refused (${denied.status}): ${denied.message}`,
      )
      return reply(res, denied.status, -32001, denied.message, denied.headers)
    }
    if (typeof view === 'string') return reply(res, 404, -32601, view)
    if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE')
      return reply(
        res,
        405,
        -32000,
        `Method not allowed: ${req.method}; MCP uses POST, GET and DELETE`,
        {
          allow: 'GET, POST, DELETE',
        },
      )
    let body: unknown
    if (req.method === 'POST') {
      const read = await readBody(req, this.host.maxBodyBytes)
      if (read === 'too large')
        return reply(
          res,
          413,
          -32600,
          `Request body too large: at most ${this.host.maxBodyBytes} bytes`,
          { connection: 'close' },
        )
      if (!isJsonContentType(req.headers['content-type'] ?? ''))
        return reply(
          res,
          415,
          -32000,
          'Unsupported Media Type: send Content-Type: application/json',
        )
      try {
        body = JSON.parse(read)
      } catch {
        return reply(res, 400, -32700, 'Parse error: the body is not JSON')
      }
      if (deeperThan(body, MAX_DEPTH))
        return reply(
          res,
          400,
          -32700,
          `Parse error: the body nests arrays and objects deeper than ${MAX_DEPTH} levels`,
        )
    }
    const sid = req.headers['mcp-session-id']
    // a session is 2025-era by definition; the rest is classified as the SDK does it (from the
    // body we hold and the headers: a request with the envelope claim is 2026-07-28, and the
    // modern handler answers a malformed one)
    if (typeof sid !== 'string' && !(await isLegacyRequest(headersOnly(req), body)))
      return this.host.modern(view, verdict.who)(req, res, body)
    const mismatch = headerMismatch(req, body)
    if (mismatch) return reply(res, 400, -32020, `Bad Request: ${mismatch}`)
    if (typeof sid === 'string') {
      const tracked = this.sessions.get(sid)
      // a session stays with who opened it: another token holder cannot take it over by its id
      if (
        !tracked ||
        tracked.session.closed ||
        tracked.session.view !== view ||
        tracked.who !== verdict.who
      )
        return reply(res, 404, -32001, 'Session not found: initialize a new session')
      return this.#serve(tracked, req, res, body)
    }
    if (req.method !== 'POST' || !isInitializeRequest(body))
      return reply(
        res,
        400,
        -32000,
        'Bad Request: no mcp-session-id header; start with an initialize request (2025 era), or send the 2026-07-28 request envelope',
      )
    const client = clientOf(req)
    const refused = this.#makeRoom(client)
    if (refused) return reply(res, refused.status, -32000, refused.message, { 'retry-after': '5' })
    const id = randomUUID()
    const session = this.host.open(view, id)
    session.closeWithServer = true
    const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: () => id })
    const tracked: Tracked = {
      session,
      transport,
      who: verdict.who,
      client,
      lastSeen: Date.now(),
      active: 0,
      requests: 0,
    }
    this.sessions.set(id, tracked)
    void session.ended.then(() => this.sessions.delete(id))
    await session.serverFor('legacy').connect(transport)
    await this.#serve(tracked, req, res, body)
    if (!transport.sessionId) await session.close() // the initialize was refused: no session came of it
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

  /**
   * Room for a new session of `client`, so no client can lock others out. A client at its own cap
   * gives up its idlest session (one with no request in flight, the longest unused); a full table
   * takes the idlest session of the client holding the most. Refused (429 / 503) only when every
   * candidate has a request in flight.
   */
  #makeRoom(client: string): { status: number; message: string } | undefined {
    const { maxSessions } = this.host
    const perClient = this.cfg.maxSessionsPerClient ?? Math.max(1, Math.ceil(maxSessions / 4))
    const byClient = new Map<string, Tracked[]>()
    for (const t of this.sessions.values()) {
      if (t.session.closed) continue
      const held = byClient.get(t.client)
      if (held) held.push(t)
      else byClient.set(t.client, [t])
    }
    const mine = byClient.get(client) ?? []
    if (mine.length >= perClient) {
      const victim = idlest(mine)
      if (!victim)
        return {
          status: 429,
          message: `Too many sessions from ${client}: ${mine.length} (http.maxSessionsPerClient ${perClient}), each with a request in flight; end one (DELETE) or try later`,
        }
      this.#evict(victim, `${client} opened a new one past http.maxSessionsPerClient ${perClient}`)
      return undefined
    }
    if (this.sessions.size < maxSessions) return undefined
    const holders = [...byClient.values()].sort((a, b) => b.length - a.length)
    for (const held of holders) {
      const victim = idlest(held)
      if (!victim) continue
      this.#evict(
        victim,
        `maxSessions ${maxSessions} reached; ${victim.client} holds the most sessions (${held.length})`,
      )
      return undefined
    }
    return {
      status: 503,
      message: `Too many sessions (maxSessions ${maxSessions}), each with a request in flight; try later`,
    }
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

/** A request's path, without its query. */
function pathOf(url: string | undefined): string {
  return (url ?? '/').split('?')[0]!
}

/** The session with no request in flight that was used longest ago. */
function idlest(list: Tracked[]): Tracked | undefined {
  let found: Tracked | undefined
  for (const t of list) if (t.requests === 0 && (!found || t.lastSeen < found.lastSeen)) found = t
  return found
}

/**
 * The request as the SDK's classification reads it: method and headers (the body is passed
 * parsed, so it is not copied, nor serialised again).
 */
function headersOnly(req: IncomingMessage): Request {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    if (name.startsWith(':')) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
  }
  return new Request(`http://localhost${req.url ?? '/'}`, { method: req.method ?? 'GET', headers })
}

/** Whether `value` nests arrays and objects more than `max` deep (iteratively: no stack to overflow). */
export function deeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length) {
    const [node, depth] = stack.pop()!
    if (node === null || typeof node !== 'object') continue
    if (depth >= max) return true
    for (const child of Array.isArray(node) ? node : Object.values(node))
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1])
  }
  return false
}

/**
 * The standard headers a 2025-era client may send as well (Mcp-Method, Mcp-Name), checked
 * against the body as the modern path checks them: what disagrees is refused, never guessed at.
 */
function headerMismatch(req: IncomingMessage, body: unknown): string | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined
  const message = body as { method?: unknown; params?: { name?: unknown; uri?: unknown } }
  const method = req.headers['mcp-method']
  if (typeof method === 'string' && typeof message.method === 'string' && method !== message.method)
    return `the Mcp-Method header says "${method}" but the body's method is "${message.method}"`
  const name = req.headers['mcp-name']
  const named = message.params?.name ?? message.params?.uri
  if (typeof name === 'string' && typeof named === 'string' && name !== named)
    return `the Mcp-Name header says "${name}" but the body names "${named}"`
  return undefined
}

/** The body as text, or 'too large' (from Content-Length before reading, or once it passes the limit). */
function readBody(req: IncomingMessage, max: number): Promise<string | 'too large'> {
  const declared = Number(req.headers['content-length'])
  if (declared > max) {
    req.resume() // drained, not kept; the connection closes after the answer
    return Promise.resolve('too large')
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > max) {
        req.removeAllListeners('data')
        req.resume()
        resolve('too large')
      } else chunks.push(chunk)
    })
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.once('error', reject)
  })
}

function reply(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers })
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }))
}
