// mcp-server: fair sessions. One token holder cannot lock the others out: sessions are capped per
// client (remote address) and a full table makes room by closing an idle session, never one with a
// request in flight. Real HTTP, the SDK's real client, each client from its own loopback address
// (127.0.0.N, bound with undici's localAddress).
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Agent, fetch as undiciFetch } from 'undici'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import mcpServer, { type McpServerApi } from '../../../plugins/mcp-server/index.ts'
import { toPlugin, validateConfig, type Fiber, type Plugin } from '../../../src/index.ts'
import { mcpHarness } from '../../helpers/mcp.ts'
import { tempProject } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const TOKEN = 'test-token-0123456789abcdef'

interface Peer {
  address: string
  client: Client
  /** ends the client (a session already closed by the server included) */
  close(): Promise<void>
}

/** A gateway with a `ping` tool and a `hold` tool whose calls wait until `release()`. */
async function gateway(config: Record<string, unknown>) {
  const project = tempProject()
  const h = await mcpHarness(project.dir)
  let open = 0
  let release!: () => void
  let gate = new Promise<void>((resolve) => (release = resolve))
  const spawn = async (plugin: unknown, cfg: unknown, key: string): Promise<Fiber> => {
    const p = toPlugin(plugin) as Plugin
    const checked = validateConfig(p, cfg)
    assert.ok('value' in checked, JSON.stringify(checked))
    const fiber = h.kernel.spawn(p, checked.value, { key })
    await h.kernel.whenSettled(fiber, 20_000)
    assert.equal(fiber.state, 'active', String(fiber.error?.stack ?? fiber.error))
    return fiber
  }
  await spawn(
    {
      name: 'tools',
      inject: ['runtime'],
      apply: (ctx: any) => {
        ctx.runtime.register({ name: 'ping', concurrency: 'safe', execute: () => 'pong' })
        ctx.runtime.register({
          name: 'hold',
          concurrency: 'safe',
          execute: async () => {
            open++
            try {
              await gate
            } finally {
              open--
            }
            return 'released'
          },
        })
      },
    },
    {},
    'tools',
  )
  await spawn(mcpServer, { token: TOKEN, ...config }, 'gateway')
  const url = (h.kernel.services.get('mcpServer')!.value as McpServerApi).url!
  const peers: Peer[] = []
  return {
    h,
    project,
    /** calls of `hold` running now */
    held: () => open,
    release() {
      release()
      gate = new Promise<void>((resolve) => (release = resolve))
    },
    /** an SDK client that connects from `address` (127.0.0.N) */
    async connect(address: string): Promise<Peer> {
      const dispatcher = new Agent({ localAddress: address })
      const fetch: FetchLike = (input, init) =>
        undiciFetch(input, { ...(init as object), dispatcher }) as unknown as Promise<Response>
      const client = new Client({ name: `client ${address}`, version: '1' })
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
        fetch,
        reconnectionOptions: {
          initialReconnectionDelay: 1000,
          maxReconnectionDelay: 1000,
          reconnectionDelayGrowFactor: 1,
          maxRetries: 0,
        },
      })
      const peer: Peer = {
        address,
        client,
        async close() {
          await client.close().catch(() => {})
          await dispatcher.close().catch(() => {})
        },
      }
      try {
        await client.connect(transport)
      } catch (err) {
        await peer.close()
        throw err
      }
      peers.push(peer)
      return peer
    },
    async close() {
      release()
      await Promise.all(peers.map((p) => p.close()))
      await h.close()
      project.cleanup()
    },
  }
}

type Gateway = Awaited<ReturnType<typeof gateway>>

const works = async (peer: Peer) => {
  const result = (await peer.client.callTool({ name: 'ping', arguments: {} })) as CallToolResult
  assert.deepEqual(result.content, [{ type: 'text', text: 'pong' }], peer.address)
}
const gone = (peer: Peer) => assert.rejects(peer.client.listTools(), /Session not found/)

describe('mcp-server: sessions per client (http.maxSessionsPerClient)', () => {
  let g: Gateway
  before(async () => {
    g = await gateway({ maxSessions: 8, http: { maxSessionsPerClient: 2 } })
  })
  after(() => g.close())

  it("a client past its cap gives up its own idlest session; other clients' sessions are untouched", async () => {
    const b1 = await g.connect('127.0.0.3')
    const a1 = await g.connect('127.0.0.2')
    const a2 = await g.connect('127.0.0.2')
    await works(b1)
    await works(a2) // a2 was used last: a1 is the idlest of 127.0.0.2
    const a3 = await g.connect('127.0.0.2')
    await gone(a1)
    await works(a2)
    await works(a3)
    await works(b1)
    // the 127.0.0.2 client's cap is its own: 127.0.0.3 still opens its second
    await works(await g.connect('127.0.0.3'))
  })

  it('a client whose sessions all have a request in flight gets 429 naming the cap; once they end it gets in', async () => {
    const c1 = await g.connect('127.0.0.4')
    const c2 = await g.connect('127.0.0.4')
    const calls = [c1, c2].map((c) => c.client.callTool({ name: 'hold', arguments: {} }))
    await until('both calls running', () => g.held() === 2)
    await assert.rejects(g.connect('127.0.0.4'), (err: Error & { code?: number }) => {
      assert.equal(err.code, 429)
      assert.match(
        err.message,
        /Too many sessions from 127\.0\.0\.4: 2 \(http\.maxSessionsPerClient 2\), each with a request in flight/,
      )
      return true
    })
    g.release()
    for (const result of await Promise.all(calls))
      assert.deepEqual((result as CallToolResult).content, [{ type: 'text', text: 'released' }])
    await works(await g.connect('127.0.0.4'))
  })
})

describe('mcp-server: a full table (maxSessions) makes room instead of locking clients out', () => {
  let g: Gateway
  before(async () => {
    g = await gateway({ maxSessions: 3, http: { maxSessionsPerClient: 3 } })
  })
  after(() => g.close())

  it('one client holding every session cannot keep another out: its idlest session gives way', async () => {
    const hog = [
      await g.connect('127.0.0.2'),
      await g.connect('127.0.0.2'),
      await g.connect('127.0.0.2'),
    ]
    // each hog session keeps its GET stream open and was just used: neither protects it
    for (const s of hog.slice(1)) await works(s)
    const victim = await g.connect('127.0.0.3')
    await works(victim)
    await gone(hog[0]!)
    // the table is full again: the client holding the most (the hog, 2) gives way, not the victim
    await works(victim)
    await works(hog[2]!)
    const other = await g.connect('127.0.0.4')
    await works(other)
    await gone(hog[1]!)
    await works(victim)
    await works(hog[2]!)
  })

  it('only when every session has a request in flight is a new one refused (503); it gets in once one ends', async () => {
    // three new clients take the places of the three idle sessions of the test before, then each runs a call
    const clients = await Promise.all(
      ['127.0.0.5', '127.0.0.6', '127.0.0.7'].map((address) => g.connect(address)),
    )
    const calls = clients.map((c) => c.client.callTool({ name: 'hold', arguments: {} }))
    await until('three calls running', () => g.held() === 3)
    await assert.rejects(g.connect('127.0.0.8'), (err: Error & { code?: number }) => {
      assert.equal(err.code, 503)
      assert.match(
        err.message,
        /Too many sessions \(maxSessions 3\), each with a request in flight/,
      )
      return true
    })
    g.release()
    await Promise.all(calls)
    await works(await g.connect('127.0.0.8'))
  })
})
