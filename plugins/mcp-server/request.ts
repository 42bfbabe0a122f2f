/**
 * What the HTTP endpoint checks of a request before any MCP machinery sees it, and how it refuses:
 * the Host and Origin of a loopback endpoint (DNS rebinding, browser pages), the body's size and
 * nesting, the Mcp-Method / Mcp-Name headers against the body. Plain functions over a request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { isIP } from 'node:net'
import { classifyInboundRequest, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server'

/**
 * The deepest nesting of arrays and objects a body may have: the SDK re-serialises a body on its
 * way in, and a deeper one would overflow the stack there (a 500) instead of being refused.
 */
export const MAX_DEPTH = 512

export function isLoopback(host: string): boolean {
  return (
    host === 'localhost' ||
    host === '::1' ||
    host === '[::1]' ||
    (isIP(host) === 4 && host.startsWith('127.'))
  )
}

/** The client a request comes from, for the per-client cap: its remote address (IPv4-mapped folded). */
export function clientOf(req: IncomingMessage): string {
  return (req.socket.remoteAddress ?? 'unknown').replace(/^::ffff:(?=\d+\.)/i, '')
}

/**
 * DNS rebinding and browser pages (the MCP spec's advice for local servers): a loopback endpoint
 * answers only requests addressed to a loopback name, and only from no origin or a loopback one.
 */
export function foreignRequest(req: IncomingMessage): string | undefined {
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

/** A request's path, without its query. */
export function pathOf(url: string | undefined): string {
  return (url ?? '/').split('?')[0]!
}

/**
 * Whether the SDK reads the request as 2025-era traffic: its own classification
 * (classifyInboundRequest, what isLegacyRequest runs) over the headers it reads and the body we
 * hold, without building a web Request for it. A POST with no JSON body is legacy, as there.
 */
export function isLegacy(req: IncomingMessage, body: unknown): boolean {
  const httpMethod = (req.method ?? 'GET').toUpperCase()
  if (httpMethod === 'POST' && body === undefined) return true
  if (httpMethod === 'POST' && claimsEnvelope(body)) return false
  return (
    classifyInboundRequest({
      httpMethod,
      protocolVersionHeader: header(req, 'mcp-protocol-version'),
      mcpMethodHeader: header(req, 'mcp-method'),
      mcpNameHeader: header(req, 'mcp-name'),
      ...(body !== undefined && { body }),
    }).kind === 'legacy'
  )
}

/**
 * A POSTed message (not initialize, not a response) whose `params._meta` makes the 2026-07-28
 * envelope claim: whatever else is true of it, the SDK's classification is never `legacy` (it is
 * modern, or a rejection the modern handler answers), so every 2026-07-28 request skips the
 * classifier's schema checks here (two failed response parses and the envelope's), which the
 * modern handler runs again anyway. decisions.test.ts holds the two to the same answers.
 */
function claimsEnvelope(body: unknown): boolean {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false
  const message = body as Record<string, unknown>
  if (typeof message.method !== 'string' || message.method === 'initialize') return false
  if ('result' in message || 'error' in message) return false
  const params = message.params
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return false
  const meta = (params as Record<string, unknown>)._meta
  return meta !== null && typeof meta === 'object' && !Array.isArray(meta) && ENVELOPE_CLAIM in meta
}
const ENVELOPE_CLAIM = PROTOCOL_VERSION_META_KEY

/** A header's value as a web Headers object gives it (repeated values joined with ", "). */
function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}

/**
 * Whether a body of `text` nests arrays and objects more than `max` deep: a text of `max` characters
 * or fewer cannot (each level opens with a character of its own), so only a longer one is walked.
 */
export function nestsDeeper(text: string, value: unknown, max: number): boolean {
  return text.length > max && deeperThan(value, max)
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
export function headerMismatch(req: IncomingMessage, body: unknown): string | undefined {
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
export function readBody(req: IncomingMessage, max: number): Promise<string | 'too large'> {
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

/** A JSON-RPC error answer with the HTTP status that goes with it. */
export function reply(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers })
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }))
}
