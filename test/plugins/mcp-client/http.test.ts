// mcp-client over HTTP: server-everything in Streamable HTTP and SSE mode as real processes,
// session expiry, server restarts, headers, and the SSRF guard for URLs from packages.
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { randomUUID } from 'node:crypto'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { checkUrl, guardedFetch, isPrivateAddress } from '../../../plugins/mcp-client/http.ts'
import {
  everythingHttp,
  freePort,
  mcpHarness,
  stop,
  text,
  type McpHarness,
} from '../../helpers/mcp.ts'

describe('mcp-client over HTTP (server-everything)', () => {
  let h: McpHarness
  let port: number
  let server: ChildProcess
  let sse: ChildProcess
  before(async () => {
    h = await mcpHarness()
    port = await freePort()
    server = await everythingHttp('streamableHttp', port)
  })
  after(async () => {
    await h.close()
    await stop(server)
    if (sse) await stop(sse)
  })

  it('Streamable HTTP: lists, calls echo and get-sum, relays progress', async () => {
    await h.add('web', {
      serverName: 'web',
      url: `http://127.0.0.1:${port}/mcp`,
      reconnect: { initialDelayMs: 50 },
    })
    const status = h.status('web')
    assert.equal(status.state, 'connected', status.detail)
    assert.equal(status.transport, 'http')
    assert.ok(status.sessionId)
    assert.equal(
      text(await h.rt.call('mcp__web__echo', { message: 'over http' })),
      'Echo: over http',
    )
    assert.equal(
      text(await h.rt.call('mcp__web__get-sum', { a: 1, b: 2 })),
      'The sum of 1 and 2 is 3.',
    )
    const events: unknown[] = []
    const long = await h.rt.call(
      'mcp__web__trigger-long-running-operation',
      { duration: 0.3, steps: 3 },
      { onProgress: (e) => events.push(e) },
    )
    assert.equal(long.status, 'ok')
    assert.ok(events.length >= 2)
    assert.match(
      text(
        await h.rt.call('read_mcp_resource', {
          server: 'web',
          uri: 'demo://resource/dynamic/text/1',
        }),
      ),
      /Resource 1/,
    )
    assert.match(
      text(await h.rt.call('get_mcp_prompt', { server: 'web', name: 'simple-prompt' })),
      /user: /,
    )
    assert.equal(
      (await h.rt.call('mcp__web__get-structured-content', { location: 'Chicago' })).status,
      'ok',
    )
  })

  it('a timeout over HTTP ends the call and leaves the session working', async () => {
    await h.add('webslow', {
      serverName: 'webslow',
      url: `http://127.0.0.1:${port}/mcp`,
      // 1 s, not less: the echo after it must fit too on a loaded machine
      callMs: 1000,
    })
    const started = Date.now()
    const result = await h.rt.call('mcp__webslow__trigger-long-running-operation', {
      duration: 10,
      steps: 1,
    })
    assert.equal(result.status, 'TIMEOUT')
    assert.ok(Date.now() - started < 8000, 'ended by the timeout, not by the 10 s operation')
    assert.equal(text(await h.rt.call('mcp__webslow__echo', { message: 'after' })), 'Echo: after')
    await h.remove('webslow')
  })

  it('a session the server ended is re-established at once, outside the backoff', async () => {
    const before = h.status('web').sessionId!
    const ended = await fetch(`http://127.0.0.1:${port}/mcp`, {
      method: 'DELETE',
      headers: { 'mcp-session-id': before, 'mcp-protocol-version': '2025-06-18' },
    })
    assert.ok(ended.status < 300, `DELETE answered ${ended.status}`)
    // the server closes the session's event stream; a ping finds the session gone, and a new one opens
    await h.until(
      'a new session',
      () => h.status('web').state === 'connected' && h.status('web').sessionId !== before,
      5000,
    )
    assert.equal(h.status('web').attempt, 0, 'not counted as an outage')
    const result = await h.rt.call('mcp__web__echo', { message: 'after expiry' })
    assert.equal(result.status, 'ok', text(result))
    assert.equal(text(result), 'Echo: after expiry')
    assert.notEqual(h.status('web').sessionId, before, 'a new session')
  })

  it('a server that goes away: calls end with SERVER_UNAVAILABLE, and it reconnects when the server is back', async () => {
    await stop(server)
    const down = await h.rt.call('mcp__web__echo', { message: 'x' })
    assert.equal(down.status, 'SERVER_UNAVAILABLE', text(down))
    server = await everythingHttp('streamableHttp', port)
    await h.until('reconnected', () => h.status('web').state === 'connected', 20_000)
    assert.equal(text(await h.rt.call('mcp__web__echo', { message: 'back' })), 'Echo: back')
  })

  it('SSE: a server that answers 4xx to Streamable HTTP is reached over SSE', async () => {
    const ssePort = await freePort()
    sse = await everythingHttp('sse', ssePort)
    await h.add('old', { serverName: 'old', url: `http://127.0.0.1:${ssePort}/sse` })
    assert.equal(h.status('old').state, 'connected', h.status('old').detail)
    assert.equal(h.status('old').transport, 'sse')
    assert.equal(text(await h.rt.call('mcp__old__echo', { message: 'over sse' })), 'Echo: over sse')
    assert.equal(
      (await h.rt.call('mcp__old__get-structured-content', { location: 'New York' })).status,
      'ok',
    )
  })
})

describe('HTTP headers and the SSRF guard', () => {
  let h: McpHarness
  let seen: IncomingMessage[]
  let web: ReturnType<typeof createServer>
  let port: number
  before(async () => {
    h = await mcpHarness()
    seen = []
    web = createServer((req, res) => {
      seen.push(req)
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end()
        return
      }
      res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve))
    port = (web.address() as AddressInfo).port
  })
  after(async () => {
    await h.close()
    await new Promise((resolve) => web.close(resolve))
  })

  it('refuses private, loopback, link-local, metadata and reserved addresses in every spelling', async () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::127.0.0.1',
      '224.0.0.1',
    ]) {
      assert.ok(isPrivateAddress(address), address)
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111'])
      assert.ok(!isPrivateAddress(address), address)
    for (const url of [
      'http://127.0.0.1/',
      'http://localhost:8080/',
      'http://LOCALHOST./',
      'http://app.localhost/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://017700000001/',
      'http://169.254.169.254/latest',
    ]) {
      await assert.rejects(
        checkUrl(url),
        (err: Error & { code?: string }) => err.code === 'URL_REFUSED',
        url,
      )
    }
    const fakeDns = (async () => [{ address: '10.0.0.7', family: 4 }]) as unknown as Parameters<
      typeof checkUrl
    >[1]
    await assert.rejects(checkUrl('http://internal.example/', fakeDns), /resolves to 10\.0\.0\.7/)
    const noDns = (async () => {
      throw new Error('ENOTFOUND')
    }) as unknown as Parameters<typeof checkUrl>[1]
    await assert.rejects(checkUrl('http://nowhere.example/', noDns), /does not resolve/)
    await checkUrl('http://8.8.8.8/') // a public literal needs no lookup
  })

  it('the guarded fetch refuses loopback before connecting, and redirects', async () => {
    const count = seen.length
    await assert.rejects(guardedFetch()(`http://127.0.0.1:${port}/`), /loopback/)
    assert.equal(seen.length, count, 'no request reached the server')
    // with the address check passed (as for a public host), a redirect is still refused
    await assert.rejects(
      guardedFetch(async () => {})(`http://127.0.0.1:${port}/redirect`),
      /it redirects \(HTTP 302\) and redirects are refused/,
    )
    assert.equal(seen.length, count + 1)
  })

  it('DNS rebinding: a name that passes the check but connects to loopback is refused at the socket', async () => {
    const count = seen.length
    const rebinding = ((
      _host: string,
      _options: unknown,
      callback: (err: null, addresses: Array<{ address: string; family: number }>) => void,
    ) => callback(null, [{ address: '127.0.0.1', family: 4 }])) as never
    await assert.rejects(
      guardedFetch(async () => {}, rebinding)(`http://rebind.example:${port}/`),
      (err: Error) => /resolves to 127\.0\.0\.1/.test(String(err.cause ?? err) + err.message),
    )
    assert.equal(seen.length, count, 'nothing reached the loopback server')
  })

  it("an mcp-client with ssrfGuard cannot reach loopback; without it (the user's own config) it can, and sends its headers", async () => {
    const count = seen.length
    await h.add('guarded', {
      serverName: 'guarded',
      url: `http://127.0.0.1:${port}/mcp`,
      ssrfGuard: true,
      reconnect: { maxAttempts: 0 },
    })
    assert.match(
      h.status('guarded').lastError!,
      /refused to connect to http:\/\/127\.0\.0\.1:\d+\/mcp: 127\.0\.0\.1 is a private, loopback or reserved address/,
    )
    assert.equal(h.status('guarded').state, 'gave-up', 'maxAttempts 0: no retries')
    assert.equal(seen.length, count, 'no request left')
    await h.add('mine', {
      serverName: 'mine',
      url: `http://127.0.0.1:${port}/mcp`,
      headers: { Authorization: 'Bearer s3cret' },
      reconnect: { maxAttempts: 0 },
    })
    const request = seen.find((r) => r.url === '/mcp')
    assert.ok(request, 'the user-configured server was reached')
    assert.equal(request.headers.authorization, 'Bearer s3cret')
    assert.notEqual(h.status('mine').state, 'connected', 'a 404 server is not an MCP server')
  })
})

/**
 * A stateful Streamable HTTP MCP server in the test (the SDK's own server transport), whose
 * sessions can be forgotten without closing their streams, as a restarted server does. It counts
 * runs of each call and the DELETEs that end sessions.
 */
async function sessionServer() {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const runs: string[] = []
  const deletes: string[] = []
  const http = createServer(async (req, res) => {
    const id = req.headers['mcp-session-id'] as string | undefined
    if (req.method === 'DELETE' && id) deletes.push(id)
    let transport = id ? sessions.get(id) : undefined
    if (id && !transport) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          jsonrpc: '2.0',
          error: { code: -32001, message: 'Session not found' },
          id: null,
        }),
      )
      return
    }
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sid) => void sessions.set(sid, transport!),
      })
      const server = new Server(
        { name: 'sessions', version: '1.0.0' },
        { capabilities: { tools: {} } },
      )
      server.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: [
          {
            name: 'run',
            inputSchema: {
              type: 'object',
              properties: { tag: { type: 'string' }, ms: { type: 'number' } },
            },
          },
        ],
      }))
      server.setRequestHandler(CallToolRequestSchema, async (request) => {
        const args = request.params.arguments as { tag: string; ms?: number }
        runs.push(args.tag)
        await new Promise((resolve) => setTimeout(resolve, args.ms ?? 0))
        return { content: [{ type: 'text', text: `ran ${args.tag}` }] }
      })
      await server.connect(transport)
    }
    await transport.handleRequest(req, res)
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    runs,
    deletes,
    /** the server restarted: it knows no session any more, and the old streams stay open */
    forget: () => sessions.clear(),
    close: () => new Promise((resolve) => http.close(resolve)),
  }
}

describe('HTTP sessions', () => {
  it('a call refused for a forgotten session is sent again on a new one; a call in flight is not resent', async () => {
    const server = await sessionServer()
    const h = await mcpHarness()
    try {
      await h.add('sess', {
        serverName: 'sess',
        url: server.url,
        reconnect: { initialDelayMs: 5000 },
      })
      const first = h.status('sess').sessionId
      assert.equal(text(await h.rt.call('mcp__sess__run', { tag: 'warm' })), 'ran warm')
      const inFlight = h.rt.call('mcp__sess__run', { tag: 'slow', ms: 400 })
      await new Promise((resolve) => setTimeout(resolve, 100))
      server.forget()
      const retried = await h.rt.call('mcp__sess__run', { tag: 'after' })
      assert.equal(retried.status, 'ok', text(retried))
      assert.equal(text(retried), 'ran after')
      assert.notEqual(h.status('sess').sessionId, first)
      await inFlight // it ends one way or another, and is never run twice
      assert.deepEqual(
        server.runs.filter((r) => r === 'slow'),
        ['slow'],
      )
      assert.deepEqual(
        server.runs.filter((r) => r === 'after'),
        ['after'],
      )
      const live = h.status('sess').sessionId!
      await h.remove('sess')
      assert.ok(server.deletes.includes(live), 'closing ends the session on the server (DELETE)')
    } finally {
      await h.close()
      await server.close()
    }
  })
})
