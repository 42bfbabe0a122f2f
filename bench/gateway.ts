/**
 * yoke as an MCP gateway, side by side with its baseline in the same run, once per protocol era.
 * A v2 SDK client calls `echo` through yoke's Streamable HTTP endpoint (mcp-server; the upstream
 * is an mcp-client instance over stdio, and every call runs the whole pipeline) and, directly, on
 * the upstream server's own Streamable HTTP endpoint; a bare SDK server with one tool is the floor,
 * and yoke's endpoint with a native tool (no upstream hop) shows what the gateway alone costs.
 *
 * - 2025 era: the client speaks the legacy protocol (initialize, a session); the upstream is
 *   server-everything (built on the v1 SDK).
 * - 2026-07-28: the client is pinned to it (no session: every request stands alone, and yoke's
 *   endpoint builds a Server per request); the upstream is the modern test fixture.
 *
 * Both sides of a row speak the same era over the same kind of connection to the client; yoke's
 * side adds the pipeline and the upstream hop. Latency: the sides interleave call by call in
 * rotating order, so drift hits all alike. Throughput: calls/s at 32 concurrent, alternating rounds.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createServer, type Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInterface } from 'node:readline'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node'
import { createMcpHandler, isInitializeRequest, Server } from '@modelcontextprotocol/server'
import mcpServer, { type McpServerApi } from '../plugins/mcp-server/index.ts'
import { toPlugin, validateConfig, type Plugin } from '../src/index.ts'
import { EVERYTHING, freePort, everything, mcpHarness } from '../test/helpers/mcp.ts'
import { ROOT } from '../test/helpers/project.ts'
import { median, percentile, row, sleep, throughput, timed, type Call } from './stats.ts'

const SEQUENTIAL = 2000
const CONCURRENT_CALLS = 5000
const WIDTH = 32
const TOKEN = 'bench-token-0123456789abcdef'
const MODERN_FIXTURE = `${ROOT}test/fixtures/mcp/modern.mjs`

type Era = 'legacy' | 'modern'

/** server-everything's own Streamable HTTP endpoint, once it answers. */
async function everythingHttp(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort()
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: 'ignore',
  })
  for (let i = 0; i < 300; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) })
      return { child, url: `http://127.0.0.1:${port}/mcp` }
    } catch {
      await sleep(50)
    }
  }
  child.kill()
  throw new Error('server-everything (streamableHttp) did not start')
}

/** The modern fixture's own Streamable HTTP endpoint (it prints `LISTENING <port>`). */
async function fixtureHttp(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [MODERN_FIXTURE, '--http'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  const port = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the modern fixture did not start')), 10_000)
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /^LISTENING (\d+)/.exec(line)
      if (m) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    })
  })
  return { child, url: `http://127.0.0.1:${port}/mcp` }
}

/** A bare v2 server with one tool, echo, as the SDK's own examples serve each era. */
function echoServer(): Server {
  const server = new Server({ name: 'floor', version: '1' }, { capabilities: { tools: {} } })
  server.setRequestHandler('tools/list', () => ({
    tools: [{ name: 'echo', inputSchema: { type: 'object' } }],
  }))
  server.setRequestHandler('tools/call', (r) => ({
    content: [{ type: 'text', text: `Echo: ${String(r.params.arguments?.message)}` }],
  }))
  return server
}

async function floorServer(era: Era): Promise<{ http: HttpServer; url: string }> {
  let handle: (
    req: import('node:http').IncomingMessage,
    res: import('node:http').ServerResponse,
    body: unknown,
  ) => Promise<void>
  if (era === 'modern') {
    const node = toNodeHandler(createMcpHandler(echoServer, { legacy: 'reject' }))
    handle = (req, res, body) => node(req, res, body)
  } else {
    const sessions = new Map<string, NodeStreamableHTTPServerTransport>()
    handle = async (req, res, body) => {
      const id = req.headers['mcp-session-id'] as string | undefined
      let transport = id ? sessions.get(id) : undefined
      if (!transport && isInitializeRequest(body)) {
        const t = (transport = new NodeStreamableHTTPServerTransport({
          sessionIdGenerator: randomUUID,
          onsessioninitialized: (sid) => void sessions.set(sid, t),
        }))
        await echoServer().connect(transport)
      }
      if (!transport) return void res.writeHead(404).end()
      await transport.handleRequest(req, res, body)
    }
  }
  const http = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    await handle(req, res, chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined)
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  return { http, url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp` }
}

/**
 * The SDK's HTTP client passes one transport-wide AbortSignal to every fetch, and undici drops each
 * request's listener on it only when the Request is garbage collected: thousands of calls warn
 * about a listener leak. The signal only serves close(), so every client here goes without it.
 */
const fetchWithoutSignal: typeof fetch = (url, init) => fetch(url, { ...init, signal: undefined })

async function httpClient(era: Era, url: string, headers: Record<string, string> = {}) {
  const client = new Client(
    { name: 'bench', version: '1' },
    era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  )
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers },
      fetch: fetchWithoutSignal,
    }),
  )
  if (client.getProtocolEra() !== era)
    throw new Error(`the bench client for ${era} negotiated ${client.getProtocolEra()}`)
  return client
}

async function eraBench(era: Era) {
  const direct = era === 'legacy' ? await everythingHttp() : await fixtureHttp()
  // the runtime's default cap is 16 calls in flight; 32 concurrent calls need a cap above 32
  const h = await mcpHarness(undefined, { maxConcurrent: 64 })
  await h.add(
    'upstream',
    era === 'legacy'
      ? everything('upstream')
      : { serverName: 'upstream', command: process.execPath, args: [MODERN_FIXTURE] },
  )
  h.kernel.spawn(
    toPlugin({
      name: 'native',
      inject: ['runtime'],
      apply: (ctx: any) =>
        void ctx.runtime.register({
          name: 'native_echo',
          concurrency: 'safe',
          risk: 'low',
          execute: ({ message }: { message: string }) => `Echo: ${message}`,
        }),
    }) as Plugin,
    {},
    { key: 'native' },
  )
  const plugin = toPlugin(mcpServer) as Plugin
  const checked = validateConfig(plugin, { token: TOKEN })
  if (!('value' in checked)) throw new Error(JSON.stringify(checked))
  await h.kernel.whenSettled(h.kernel.spawn(plugin, checked.value, { key: 'gateway' }), 10_000)
  const gateway = h.kernel.services.get('mcpServer')!.value as McpServerApi
  const floor = await floorServer(era)

  const args = era === 'legacy' ? { message: 'hi' } : { text: 'hi' }
  const rawClient = await httpClient(era, direct.url)
  const floorClient = await httpClient(era, floor.url)
  const yokeClient = await httpClient(era, gateway.url!, { Authorization: `Bearer ${TOKEN}` })
  const check = (r: { isError?: boolean; content?: unknown }) => {
    if (r.isError) throw new Error(JSON.stringify(r.content))
  }
  const viaDirect: Call = async () =>
    check(await rawClient.callTool({ name: 'echo', arguments: args }))
  const viaFloor: Call = async () =>
    check(await floorClient.callTool({ name: 'echo', arguments: { message: 'hi' } }))
  const viaYoke: Call = async () =>
    check(await yokeClient.callTool({ name: 'mcp__upstream__echo', arguments: args }))
  // the gateway alone: the same endpoint, a native tool (no upstream hop)
  const viaNative: Call = async () =>
    check(await yokeClient.callTool({ name: 'native_echo', arguments: { message: 'hi' } }))
  const sides = [viaDirect, viaYoke, viaFloor, viaNative]
  const n = sides.length
  for (let i = 0; i < 300; i++) await Promise.all(sides.map((s) => s())) // warm-up
  const times: number[][] = sides.map(() => [])
  for (let i = 0; i < SEQUENTIAL; i++)
    for (let j = 0; j < n; j++) times[(i + j) % n]!.push(await timed(sides[(i + j) % n]!)) // rotating order
  const rates: number[][] = sides.map(() => [])
  for (let round = 0; round < 5; round++)
    for (let j = 0; j < n; j++)
      rates[j]!.push(await throughput(sides[j]!, CONCURRENT_CALLS / 5, WIDTH))
  const [sdk, yoke, bare, native] = times as [number[], number[], number[], number[]]
  const [sdkRate, yokeRate, bareRate, nativeRate] = rates.map(median) as [
    number,
    number,
    number,
    number,
  ]
  const upstream = era === 'legacy' ? 'server-everything' : 'the modern fixture'
  console.log(
    `\nMCP gateway, ${era === 'legacy' ? '2025 era (sessions)' : '2026-07-28 (stateless)'}: echo over Streamable HTTP, through yoke (mcp-server → pipeline → mcp-client → ${upstream} over stdio) vs ${upstream}'s own endpoint; ${SEQUENTIAL} sequential calls each (interleaved), ${CONCURRENT_CALLS} at ${WIDTH} concurrent`,
  )
  console.log(
    row([
      '',
      'direct',
      'yoke',
      'SDK floor',
      'yoke native',
      'yoke / direct',
      'native / floor',
      'goal',
    ]),
  )
  for (const p of [50, 99]) {
    const [a, b, c, d] = [sdk, yoke, bare, native].map((t) => percentile(t, p)) as [
      number,
      number,
      number,
      number,
    ]
    console.log(
      row([
        `p${p} µs`,
        a,
        b,
        c,
        d,
        (b / a).toFixed(2),
        (d / c).toFixed(2),
        p === 50 ? '≤ 1.15 (direct)' : '',
      ]),
    )
  }
  console.log(
    row([
      `calls/s @${WIDTH}`,
      sdkRate,
      yokeRate,
      bareRate,
      nativeRate,
      (yokeRate / sdkRate).toFixed(2),
      (nativeRate / bareRate).toFixed(2),
      '',
    ]),
  )
  await Promise.all([rawClient.close(), floorClient.close(), yokeClient.close()])
  floor.http.closeAllConnections()
  floor.http.close()
  await h.close()
  direct.child.kill()
}

export async function gatewayBench() {
  await eraBench('legacy')
  await eraBench('modern')
}

if (import.meta.url === `file://${process.argv[1]}`)
  await gatewayBench().then(() => process.exit(0))
