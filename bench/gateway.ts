/**
 * yoke as an MCP gateway, side by side with its baseline in the same run: an SDK client calls
 * server-everything's `echo` through yoke's Streamable HTTP endpoint (mcp-server; the upstream is
 * an mcp-client instance over stdio, and every call runs the whole pipeline) and, directly, on
 * server-everything's own Streamable HTTP endpoint. Both sides speak the same protocol over the
 * same kind of connection to the client; yoke's side adds the pipeline and the upstream hop.
 * Latency: the sides interleave call by call in rotating order, so drift hits both alike.
 * Throughput: calls/s at 32 concurrent, alternating rounds.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createServer, type Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import mcpServer, { type McpServerApi } from '../plugins/mcp-server/index.ts'
import { toPlugin, validateConfig, type Plugin } from '../src/index.ts'
import { EVERYTHING, freePort, everything, mcpHarness } from '../test/helpers/mcp.ts'
import { median, percentile, row, sleep, throughput, timed, type Call } from './stats.ts'

const SEQUENTIAL = 2000
const CONCURRENT_CALLS = 5000
const WIDTH = 32
const TOKEN = 'bench-token-0123456789abcdef'

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

/** A bare SDK server with one tool, echo: stateful sessions, as the SDK's own examples do it. */
async function floorServer(): Promise<{ http: HttpServer; url: string }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const http = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined
    const id = req.headers['mcp-session-id'] as string | undefined
    let transport = id ? sessions.get(id) : undefined
    if (!transport && isInitializeRequest(body)) {
      const t = (transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sid) => void sessions.set(sid, t),
      }))
      const server = new Server({ name: 'floor', version: '1' }, { capabilities: { tools: {} } })
      server.setRequestHandler(CallToolRequestSchema, (r) => ({
        content: [{ type: 'text', text: `Echo: ${r.params.arguments?.message}` }],
      }))
      await server.connect(transport)
    }
    if (!transport) return void res.writeHead(404).end()
    await transport.handleRequest(req, res, body)
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  return { http, url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp` }
}

/**
 * The SDK's HTTP client passes one transport-wide AbortSignal to every fetch, and undici drops each
 * request's listener on it only when the Request is garbage collected: thousands of calls warn
 * about a listener leak. The signal only serves close(), so both sides' clients go without it.
 */
const fetchWithoutSignal: typeof fetch = (url, init) => fetch(url, { ...init, signal: undefined })

async function httpClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers },
      fetch: fetchWithoutSignal,
    }),
  )
  return client
}

export async function gatewayBench() {
  const direct = await everythingHttp()
  // the runtime's default cap is 16 calls in flight; 32 concurrent calls need a cap above 32
  const h = await mcpHarness(undefined, { maxConcurrent: 64 })
  await h.add('everything', everything())
  const plugin = toPlugin(mcpServer) as Plugin
  const checked = validateConfig(plugin, { token: TOKEN })
  if (!('value' in checked)) throw new Error(JSON.stringify(checked))
  await h.kernel.whenSettled(h.kernel.spawn(plugin, checked.value, { key: 'gateway' }), 10_000)
  const gateway = h.kernel.services.get('mcpServer')!.value as McpServerApi

  const floor = await floorServer()

  const rawClient = await httpClient(direct.url)
  const floorClient = await httpClient(floor.url)
  const yokeClient = await httpClient(gateway.url!, { Authorization: `Bearer ${TOKEN}` })
  const viaDirect: Call = () => rawClient.callTool({ name: 'echo', arguments: { message: 'hi' } })
  const viaFloor: Call = () => floorClient.callTool({ name: 'echo', arguments: { message: 'hi' } })
  const viaYoke: Call = async () => {
    const r = await yokeClient.callTool({
      name: 'mcp__everything__echo',
      arguments: { message: 'hi' },
    })
    if (r.isError) throw new Error(JSON.stringify(r.content))
  }
  const sides = [viaDirect, viaYoke, viaFloor]
  for (let i = 0; i < 300; i++) await Promise.all(sides.map((s) => s())) // warm-up
  const times: number[][] = [[], [], []]
  for (let i = 0; i < SEQUENTIAL; i++)
    for (let j = 0; j < 3; j++) times[(i + j) % 3]!.push(await timed(sides[(i + j) % 3]!)) // rotating order
  const rates: number[][] = [[], [], []]
  for (let round = 0; round < 5; round++)
    for (let j = 0; j < 3; j++)
      rates[j]!.push(await throughput(sides[j]!, CONCURRENT_CALLS / 5, WIDTH))
  const [sdk, yoke, bare] = times as [number[], number[], number[]]
  const [sdkRate, yokeRate, bareRate] = rates.map(median) as [number, number, number]
  console.log(
    `\nMCP gateway: echo over Streamable HTTP, through yoke (mcp-server → pipeline → mcp-client → server-everything over stdio) vs server-everything's own endpoint; ${SEQUENTIAL} sequential calls each (interleaved), ${CONCURRENT_CALLS} at ${WIDTH} concurrent`,
  )
  console.log(row(['', 'direct', 'yoke', 'SDK floor', 'yoke / direct', 'yoke / floor', 'goal']))
  for (const p of [50, 99]) {
    const [a, b, c] = [percentile(sdk, p), percentile(yoke, p), percentile(bare, p)]
    console.log(
      row([
        `p${p} µs`,
        a,
        b,
        c,
        (b / a).toFixed(2),
        (b / c).toFixed(2),
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
      (yokeRate / sdkRate).toFixed(2),
      (yokeRate / bareRate).toFixed(2),
      '',
    ]),
  )
  await Promise.all([rawClient.close(), floorClient.close(), yokeClient.close()])
  floor.http.closeAllConnections()
  floor.http.close()
  await h.close()
  direct.child.kill()
}

if (import.meta.url === `file://${process.argv[1]}`)
  await gatewayBench().then(() => process.exit(0))
