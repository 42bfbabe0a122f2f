/**
 * 2025-era session ids that any replica can resume (issue 31), after agentgateway's design: with a
 * secret the replicas share (`http.sessionKeyEnv`, default `YOKE_SESSION_KEY`), a session id is the
 * session's opening facts — its view, who opened it, and its initialize request's protocol version,
 * capabilities and client info — sealed with AES-256-GCM. A replica that does not hold the session
 * (another replica opened it, or this one restarted) unseals the id, checks that it belongs to the
 * request's view and caller and is not too old, and opens the session again: a fresh transport
 * with that id, fed the sealed initialize (and `notifications/initialized`) as if the client had
 * sent them, so the client goes on with no new handshake. What the session held in memory (its
 * "allow for this session" grants, a call waiting on an answer) stays behind; the shared store
 * will carry those. Without the secret, ids are random and a session lives where it was opened.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import type { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node'

/** the least secret length taken (bytes of the env value) */
export const MIN_SESSION_SECRET = 32
/** how long a sealed id can be resumed after it was issued */
export const SEALED_MAX_AGE_MS = 24 * 60 * 60_000
/** an id longer than this (a client that declares huge capabilities) is not sealed: random instead */
const MAX_SEALED_CHARS = 4096

export interface SessionFacts {
  v: 1
  view: string
  who: string
  /** the initialize request's params: protocolVersion, capabilities, clientInfo */
  init: Record<string, unknown>
  /** issued at (epoch ms) */
  iat: number
}

export class SessionSeal {
  readonly #key: Buffer

  constructor(secret: string) {
    this.#key = Buffer.from(hkdfSync('sha256', secret, 'yoke mcp-server', 'mcp-session-id v1', 32))
  }

  /** The sealed id (base64url of iv, tag and ciphertext), or undefined when it would be too long. */
  seal(facts: SessionFacts): string | undefined {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv)
    const body = Buffer.concat([cipher.update(JSON.stringify(facts), 'utf8'), cipher.final()])
    const id = Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')
    return id.length <= MAX_SEALED_CHARS ? id : undefined
  }

  /** The facts of an id this secret sealed and that is not too old, else undefined. */
  open(id: string, now = Date.now()): SessionFacts | undefined {
    if (id.length > MAX_SEALED_CHARS || !/^[A-Za-z0-9_-]{40,}$/.test(id)) return undefined
    const raw = Buffer.from(id, 'base64url')
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12))
      decipher.setAuthTag(raw.subarray(12, 28))
      const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()])
      const facts = JSON.parse(text.toString('utf8')) as SessionFacts
      if (facts.v !== 1 || typeof facts.iat !== 'number') return undefined
      return now - facts.iat <= SEALED_MAX_AGE_MS && facts.iat <= now + 60_000 ? facts : undefined
    } catch {
      return undefined // not sealed by this secret, or tampered with
    }
  }
}

/**
 * Gives `transport` one JSON-RPC message as if a client had POSTed it to the session, and drops
 * the answer: how a resumed session is initialized without its client. Resolves to the status.
 */
export async function feed(
  transport: NodeStreamableHTTPServerTransport,
  message: unknown,
  headers: Record<string, string>,
): Promise<number> {
  const req = new IncomingMessage(new Socket())
  req.method = 'POST'
  req.url = '/'
  req.headers = {
    host: '127.0.0.1',
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...headers,
  }
  req.rawHeaders = Object.entries(req.headers).flatMap(([k, v]) => [k, String(v)])
  req.push(null)
  const res = new ServerResponse(req)
  // the answer goes nowhere (no socket is behind this response); its end is what is waited for
  let ended!: () => void
  const done = new Promise<void>((resolve) => (ended = resolve))
  const end = res.end.bind(res)
  res.write = () => true
  res.end = ((..._: unknown[]) => {
    ended()
    return end()
  }) as typeof res.end
  await transport.handleRequest(req, res, message)
  let bound: NodeJS.Timeout | undefined
  await Promise.race([done, new Promise((resolve) => (bound = setTimeout(resolve, FEED_MS)))])
  clearTimeout(bound)
  return res.statusCode
}

/** how long a fed message's answer may take (the SDK answers an initialize at once) */
const FEED_MS = 5000
