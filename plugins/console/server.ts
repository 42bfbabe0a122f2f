/**
 * The console's HTTP server: every request passes the guard (guard.ts) first, then goes to the API
 * (JSON), the event stream, or the page's static files. It knows nothing of the composition: the
 * plugin hands it `Routes`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { check, type GuardOptions } from './guard.ts'
import type { ErrorBody } from './protocol.ts'
import { staticFile } from './static.ts'

/** An API answer: its status and JSON body. */
export interface Answer {
  status: number
  body: unknown
}

export interface Routes {
  snapshot(): Promise<unknown>
  events(res: ServerResponse): void
  callTool(name: string, body: unknown): Promise<Answer>
  answer(id: string, body: unknown): Answer
  /** `GET /api/runs/:id` */
  run(id: string): Promise<Answer>
  /** `POST /api/runs/:id/(replay|fork|cancel)` */
  runAction(id: string, verb: string, body: unknown): Promise<Answer>
}

/** Bodies larger than this are refused (a tool's arguments, an approval's answer). */
const MAX_BODY = 4 * 1024 * 1024

export class ConsoleServer {
  readonly server: Server
  routes?: Routes
  #guard?: GuardOptions

  constructor(
    readonly host: string,
    readonly token: string,
    public uiDir: string,
  ) {
    this.server = createServer((req, res) => {
      this.#handle(req, res).catch((err) => {
        if (!res.headersSent)
          send(res, 500, errorBody('INTERNAL', (err as Error).message ?? String(err)))
        else res.destroy()
      })
    })
    // an idle keep-alive socket does not hold the dev's exit
    this.server.keepAliveTimeout = 5000
  }

  /** Listens on `port` (0: any free one); resolves with the port. */
  listen(port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const failed = (err: Error) => reject(err)
      this.server.once('error', failed)
      this.server.listen(port, this.host, () => {
        this.server.off('error', failed)
        const bound = (this.server.address() as AddressInfo).port
        this.#guard = {
          token: this.token,
          port: bound,
          host: this.host,
          cookie: `yoke_console_${bound}`,
        }
        resolve(bound)
      })
    })
  }

  get port(): number | undefined {
    return this.#guard?.port
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve())
      this.server.closeAllConnections()
    })
  }

  async #handle(req: IncomingMessage, res: ServerResponse) {
    const guard = this.#guard!
    const url = new URL(req.url ?? '/', 'http://console.invalid')
    const refused = check(req, url, guard)
    if (refused)
      return send(res, refused.status, errorBody(refused.code, refused.message, refused.hint))
    const routes = this.routes
    if (!routes) return send(res, 503, errorBody('UNAVAILABLE', 'the console is restarting'))
    const path = url.pathname
    if (path.startsWith('/api/')) return this.#api(req, res, path, routes)
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(res, 405, errorBody('METHOD_NOT_ALLOWED', `${req.method} ${path}`))
    const file = await staticFile(this.uiDir, path)
    if (file.status !== 200)
      return send(
        res,
        file.status,
        errorBody(file.status === 400 ? 'BAD_REQUEST' : 'NOT_FOUND', file.message),
      )
    const headers: Record<string, string> = {
      'Content-Type': file.type,
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Content-Security-Policy':
        "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    }
    // the page's own scripts and styles come without the token: a cookie set when it was opened
    // with ?token= carries it (HttpOnly, this site only)
    if (url.searchParams.has('token'))
      headers['Set-Cookie'] = `${guard.cookie}=${guard.token}; HttpOnly; SameSite=Strict; Path=/`
    res.writeHead(200, headers)
    res.end(req.method === 'HEAD' ? undefined : file.body)
  }

  async #api(req: IncomingMessage, res: ServerResponse, path: string, routes: Routes) {
    if (req.method === 'GET' && path === '/api/snapshot')
      return send(res, 200, await routes.snapshot())
    if (req.method === 'GET' && path === '/api/events') return routes.events(res)
    const run = /^\/api\/runs\/([^/]+)$/.exec(path)
    if (req.method === 'GET' && run) {
      const id = decoded(run[1]!)
      if (id === undefined)
        return send(res, 400, errorBody('BAD_REQUEST', `not percent-encoding: ${path}`))
      const answer = await routes.run(id)
      return send(res, answer.status, answer.body)
    }
    const tool = /^\/api\/tools\/([^/]+)\/call$/.exec(path)
    const approval = /^\/api\/approvals\/([^/]+)$/.exec(path)
    const runAction = /^\/api\/runs\/([^/]+)\/(replay|fork|cancel)$/.exec(path)
    if (req.method !== 'POST' || (!tool && !approval && !runAction))
      return send(res, 404, errorBody('NOT_FOUND', `no route ${req.method} ${path}`))
    if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? ''))
      return send(
        res,
        415,
        errorBody('UNSUPPORTED_MEDIA_TYPE', 'a POST takes Content-Type: application/json'),
      )
    const body = await readJson(req)
    if (body instanceof Error) return send(res, 400, errorBody('BAD_REQUEST', body.message))
    const id = decoded((tool ?? approval ?? runAction)![1]!)
    if (id === undefined)
      return send(
        res,
        400,
        errorBody('BAD_REQUEST', `the path is not valid percent-encoding: ${path}`),
      )
    const answer = tool
      ? await routes.callTool(id, body)
      : runAction
        ? await routes.runAction(id, runAction[2]!, body)
        : routes.answer(id, body)
    return send(res, answer.status, answer.body)
  }
}

function decoded(part: string): string | undefined {
  try {
    return decodeURIComponent(part)
  } catch {
    return undefined
  }
}

export function errorBody(code: string, message: string, hint?: string): ErrorBody {
  return { error: { code, message, ...(hint && { hint }) } }
}

function send(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  })
  res.end(text)
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > MAX_BODY) return new Error(`the body is over ${MAX_BODY} bytes`)
    chunks.push(chunk as Buffer)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')
  } catch (err) {
    return new Error(`the body is not JSON: ${(err as Error).message}`)
  }
}
