/**
 * What the move to the MCP SDK's v2 packages costs by itself, without yoke: the same tiny echo
 * server (the low-level Server, one tool, a raw JSON Schema) on each SDK, called by that SDK's
 * client — v1 (`@modelcontextprotocol/sdk` 1.32) client+server, v2 client pinned to the 2025 era
 * against the v2 server, and v2 on the 2026-07-28 revision — over stdio (v1: a StdioServerTransport;
 * v2: serveStdio, which serves both eras) and over Streamable HTTP, each SDK in its stateless
 * shape (v1: a Server and transport per request, the SDK's stateless idiom; v2: createMcpHandler,
 * whose legacy leg is that same idiom and whose modern leg is per request by design).
 * Latency: rounds of calls in rotating order, so drift hits all sides alike; each round's medians
 * give a ratio per round (the spread). Throughput: calls/s at 32 concurrent, sides alternating by
 * round. Then the cost of connecting over stdio: spawn, negotiation and a first tools/list (the
 * SDK's own StdioClientTransport probes a 2026-07-28 server on a sibling process, so a v2 modern
 * connect spawns twice; a subclass of it probes in place, on the one process).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { Client as V2Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport as V1StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ROOT } from '../test/helpers/project.ts'
import { median, percentile, row, throughput, timed, type Call } from './stats.ts'

const ROUNDS = 5
const PER_ROUND = { stdio: 600, http: 300 } // sequential calls per side and round
const CONCURRENT_PER_ROUND = { stdio: 2000, http: 400 }
const WIDTH = 32
const CONNECTS = 6

// the two servers, run with `node --input-type=module -e` from the repository root (so the SDK
// packages resolve from its node_modules); argv[1] is `stdio` or `http`
const TOOLS = `[{ name: 'echo', description: 'echoes text', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } }]`
const V1_SERVER = `
import { createServer } from 'node:http'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
function build() {
  const server = new Server({ name: 'echo', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: ${TOOLS} }))
  server.setRequestHandler(CallToolRequestSchema, async (r) => ({ content: [{ type: 'text', text: String(r.params.arguments?.text) }] }))
  return server
}
if (process.argv[1] === 'http') {
  const http = createServer(async (req, res) => {
    const server = build()
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    res.on('close', () => { transport.close(); server.close() })
    await server.connect(transport)
    await transport.handleRequest(req, res)
  })
  http.listen(0, '127.0.0.1', () => console.log('LISTENING ' + http.address().port))
} else await build().connect(new StdioServerTransport())
`
const V2_SERVER = `
import { createServer } from 'node:http'
import { Server, createMcpHandler } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { toNodeHandler } from '@modelcontextprotocol/node'
function build() {
  const server = new Server({ name: 'echo', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler('tools/list', async () => ({ tools: ${TOOLS} }))
  server.setRequestHandler('tools/call', async (r) => ({ content: [{ type: 'text', text: String(r.params.arguments?.text) }] }))
  return server
}
if (process.argv[1] === 'http') {
  const node = toNodeHandler(createMcpHandler(build))
  const http = createServer((req, res) => node(req, res))
  http.listen(0, '127.0.0.1', () => console.log('LISTENING ' + http.address().port))
} else serveStdio(build)
`

type Sdk = 'v1' | 'v2 legacy' | 'v2 modern'
const SIDES: Sdk[] = ['v1', 'v2 legacy', 'v2 modern']
const serverOf = (sdk: Sdk) => (sdk === 'v1' ? V1_SERVER : V2_SERVER)
const stdioCommand = (sdk: Sdk) => ({
  command: process.execPath,
  args: ['--input-type=module', '-e', serverOf(sdk), 'stdio'],
  cwd: ROOT,
  stderr: 'ignore' as const,
})

interface Side {
  call: Call
  close(): Promise<void>
}

async function connect(sdk: Sdk, http?: URL): Promise<Side> {
  const args = { name: 'echo', arguments: { text: 'hi' } }
  if (sdk === 'v1') {
    const client = new V1Client({ name: 'bench', version: '1' })
    await client.connect(
      http
        ? new V1StreamableHTTPClientTransport(http)
        : new V1StdioClientTransport(stdioCommand(sdk)),
    )
    return { call: () => client.callTool(args), close: () => client.close() }
  }
  const mode = sdk === 'v2 legacy' ? 'legacy' : { pin: '2026-07-28' as const }
  const client = new V2Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode } })
  await client.connect(
    http ? new StreamableHTTPClientTransport(http) : new StdioClientTransport(stdioCommand(sdk)),
  )
  const want = sdk === 'v2 legacy' ? 'legacy' : 'modern'
  if (client.getProtocolEra() !== want)
    throw new Error(`${sdk}: negotiated ${client.getProtocolEra()}, not ${want}`)
  return { call: () => client.callTool(args), close: () => client.close() }
}

/** An HTTP echo server process; resolves with its URL once it listens. */
async function httpServer(sdk: Sdk, children: ChildProcess[]): Promise<URL> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', serverOf(sdk), 'http'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  const port = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${sdk} HTTP server: no LISTENING`)), 10_000)
    child.stdout!.on('data', (d) => {
      const m = /LISTENING (\d+)/.exec(String(d))
      if (m) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    })
    child.on('exit', (code) => reject(new Error(`${sdk} HTTP server exited (${code})`)))
  })
  return new URL(`http://127.0.0.1:${port}/mcp`)
}

const spread = (rounds: number[][], k: number) => {
  const ratios = rounds[k]!.map((m, r) => m / rounds[0]![r]!)
  return `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`
}

async function measure(kind: 'stdio' | 'http') {
  const children: ChildProcess[] = []
  try {
    // v2 legacy and v2 modern share one v2 server process (it serves both eras), as in real use
    const urls =
      kind === 'http'
        ? await (async () => {
            const v1 = await httpServer('v1', children)
            const v2 = await httpServer('v2 modern', children)
            return { v1, 'v2 legacy': v2, 'v2 modern': v2 } as Record<Sdk, URL>
          })()
        : undefined
    const sides = await Promise.all(SIDES.map((sdk) => connect(sdk, urls?.[sdk])))
    for (let i = 0; i < 200; i++) for (const side of sides) await side.call() // warm-up

    const all: number[][] = SIDES.map(() => [])
    const p50s: number[][] = SIDES.map(() => [])
    const rates: number[][] = SIDES.map(() => [])
    for (let round = 0; round < ROUNDS; round++) {
      const times: number[][] = SIDES.map(() => [])
      for (let i = 0; i < PER_ROUND[kind]; i++)
        for (let j = 0; j < sides.length; j++) {
          const k = (i + j) % sides.length // rotating order
          times[k]!.push(await timed(sides[k]!.call))
        }
      times.forEach((t, k) => {
        all[k]!.push(...t)
        p50s[k]!.push(median(t))
      })
      for (let j = 0; j < sides.length; j++) {
        const k = (round + j) % sides.length // who goes first alternates by round
        rates[k]!.push(await throughput(sides[k]!.call, CONCURRENT_PER_ROUND[kind], WIDTH))
      }
    }
    await Promise.all(sides.map((s) => s.close()))

    console.log(
      `\nraw MCP SDK, v1 vs v2, tiny echo server over ${kind}; ${ROUNDS} rounds of ${PER_ROUND[kind]} sequential calls per side (interleaved), ${CONCURRENT_PER_ROUND[kind]} at ${WIDTH} concurrent per round`,
    )
    console.log(row(['', ...SIDES]))
    for (const p of [50, 99]) console.log(row([`p${p} µs`, ...all.map((t) => percentile(t, p))]))
    console.log(
      row([
        'p50 / v1',
        ...all.map((t) => (percentile(t, 50) / percentile(all[0]!, 50)).toFixed(2)),
      ]),
    )
    console.log(row(['  rounds', ...SIDES.map((_, k) => spread(p50s, k))]))
    console.log(row([`calls/s @${WIDTH}`, ...rates.map(median)]))
    console.log(
      row(['calls/s / v1', ...rates.map((r) => (median(r) / median(rates[0]!)).toFixed(2))]),
    )
    console.log(row(['  rounds', ...SIDES.map((_, k) => spread(rates, k))]))
  } finally {
    for (const child of children) child.kill()
  }
}

/** Exactly StdioClientTransport probes on a sibling process; any subclass probes in place. */
class InPlaceStdioClientTransport extends StdioClientTransport {}

/** stdio: spawn + negotiation + the first tools/list, sides interleaved. */
async function measureConnect() {
  const sides = [...SIDES, 'v2 modern, in place'] as const
  const times: number[][] = sides.map(() => [])
  const once = async (side: (typeof sides)[number]) => {
    if (side === 'v1') {
      const client = new V1Client({ name: 'bench', version: '1' })
      await client.connect(new V1StdioClientTransport(stdioCommand(side)))
      await client.listTools()
      return client.close()
    }
    const mode = side === 'v2 legacy' ? 'legacy' : { pin: '2026-07-28' as const }
    const client = new V2Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode } })
    const params = stdioCommand(side === 'v2 legacy' ? side : 'v2 modern')
    await client.connect(
      side === 'v2 modern, in place'
        ? new InPlaceStdioClientTransport(params)
        : new StdioClientTransport(params),
    )
    await client.listTools()
    await client.close()
  }
  for (let i = 0; i < CONNECTS; i++)
    for (let j = 0; j < sides.length; j++) {
      const k = (i + j) % sides.length
      times[k]!.push((await timed(() => once(sides[k]!))) / 1000)
    }
  console.log(
    `\nstdio connect: spawn, negotiation and a first tools/list, ${CONNECTS} each (interleaved); a v2 modern connect on StdioClientTransport itself probes on a sibling process`,
  )
  console.log(row(['', ...sides]))
  console.log(row(['median ms', ...times.map(median)]))
  console.log(row(['median / v1', ...times.map((t) => (median(t) / median(times[0]!)).toFixed(2))]))
}

export async function mcpSdkBench() {
  await measure('stdio')
  await measure('http')
  await measureConnect()
}

if (import.meta.url === `file://${process.argv[1]}`) await mcpSdkBench().then(() => process.exit(0))
