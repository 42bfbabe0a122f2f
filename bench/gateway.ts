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
 * side adds the pipeline and the upstream hop. The issue's baseline is a hand-written SDK proxy: a
 * v2 Server whose tools/call handler forwards with a v2 Client over stdio to the same kind of
 * upstream as yoke's (the 'SDK proxy' column; its figure is yoke's p50 ÷ the proxy's). Latency: the
 * sides interleave call by call in rotating order, so drift hits all alike. Throughput: calls/s at
 * 32 concurrent, alternating rounds.
 *
 * Over stdio (stdioBench): a v2 client drives `yoke serve --stdio` (a real process, from source,
 * its config one mcp-client upstream over stdio: the modern fixture) and, interleaved round by
 * round, the same hand-written SDK proxy as a process over stdio forwarding to the same fixture.
 * The figure is the CPU per call of the gateway and the proxy processes (each reports its
 * process.cpuUsage() on SIGUSR2, before and after each round's calls). GATEWAY_PROF=<dir> runs both
 * processes with --cpu-prof into that directory.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createServer, type Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInterface } from 'node:readline'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node'
import { createMcpHandler, isInitializeRequest, Server } from '@modelcontextprotocol/server'
import mcpServer, { type McpServerApi } from '../plugins/mcp-server/index.ts'
import { toPlugin, validateConfig, type Plugin } from '../src/index.ts'
import { EVERYTHING, freePort, everything, mcpHarness } from '../test/helpers/mcp.ts'
import { ROOT } from '../test/helpers/project.ts'
import {
  figure,
  median,
  percentile,
  ratioSpread,
  row,
  sleep,
  throughput,
  timed,
  buildOnce,
  type Call,
} from './stats.ts'

const SEQUENTIAL = 2000
/** the sequential calls are read in this many rounds, for the figures' spread */
const ROUNDS = 5
const CONCURRENT_CALLS = 5000
const WIDTH = 32
const TOKEN = 'bench-token-0123456789abcdef'
const MODERN_FIXTURE = `${ROOT}test/fixtures/mcp/modern.mjs`

export type Era = 'legacy' | 'modern'

/** The SDK client's options for an upstream of that era (auto would open the fixture in the 2025 era). */
const UPSTREAM_ERA = {
  legacy: {},
  modern: { versionNegotiation: { mode: { pin: '2026-07-28' as const } } },
}

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

/**
 * The hand-written SDK proxy: a bare v2 server whose tools/list and tools/call forward to an
 * upstream through a v2 client (the call's cancellation with it), as one would write it by hand.
 */
function proxyServer(upstream: Client): Server {
  const server = new Server({ name: 'proxy', version: '1' }, { capabilities: { tools: {} } })
  server.setRequestHandler('tools/list', () => upstream.listTools())
  server.setRequestHandler(
    'tools/call',
    (r, ctx) =>
      upstream.callTool(
        { name: r.params.name, arguments: r.params.arguments },
        { signal: ctx.mcpReq.signal },
      ) as never,
  )
  return server
}

/**
 * A v2 client of an upstream over stdio (the proxy's upstream, the same kind as yoke's), in the era
 * yoke's mcp-client negotiates with it: the SDK's Client alone would open a 2026-07-28 server with
 * the 2025 handshake, and every call would then skip the per-request envelope yoke's side carries.
 */
async function stdioUpstream(command: string, args: string[], era: Era): Promise<Client> {
  const client = new Client({ name: 'proxy', version: '1' }, UPSTREAM_ERA[era])
  await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }))
  return client
}

async function sdkServer(
  era: Era,
  factory: () => Server = echoServer,
): Promise<{ http: HttpServer; url: string }> {
  let handle: (
    req: import('node:http').IncomingMessage,
    res: import('node:http').ServerResponse,
    body: unknown,
  ) => Promise<void>
  if (era === 'modern') {
    const node = toNodeHandler(createMcpHandler(factory, { legacy: 'reject' }))
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
        await factory().connect(transport)
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

export async function eraBench(era: Era) {
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
  const floor = await sdkServer(era)
  const upstreamCommand =
    era === 'legacy'
      ? everything('upstream')
      : { command: process.execPath, args: [MODERN_FIXTURE] }
  const proxyUpstream = await stdioUpstream(upstreamCommand.command, upstreamCommand.args, era)
  const proxy = await sdkServer(era, () => proxyServer(proxyUpstream))

  const args = era === 'legacy' ? { message: 'hi' } : { text: 'hi' }
  const rawClient = await httpClient(era, direct.url)
  const floorClient = await httpClient(era, floor.url)
  const proxyClient = await httpClient(era, proxy.url)
  const yokeClient = await httpClient(era, gateway.url!, { Authorization: `Bearer ${TOKEN}` })
  const check = (r: { isError?: boolean; content?: unknown }) => {
    if (r.isError) throw new Error(JSON.stringify(r.content))
  }
  const viaDirect: Call = async () =>
    check(await rawClient.callTool({ name: 'echo', arguments: args }))
  const viaFloor: Call = async () =>
    check(await floorClient.callTool({ name: 'echo', arguments: { message: 'hi' } }))
  const viaProxy: Call = async () =>
    check(await proxyClient.callTool({ name: 'echo', arguments: args }))
  const viaYoke: Call = async () =>
    check(await yokeClient.callTool({ name: 'mcp__upstream__echo', arguments: args }))
  // the gateway alone: the same endpoint, a native tool (no upstream hop)
  const viaNative: Call = async () =>
    check(await yokeClient.callTool({ name: 'native_echo', arguments: { message: 'hi' } }))
  const sides = [viaDirect, viaYoke, viaProxy, viaFloor, viaNative]
  const n = sides.length
  for (let i = 0; i < 300; i++) await Promise.all(sides.map((s) => s())) // warm-up
  // times[side][round]: each round's calls, rotating order within it
  const times: number[][][] = sides.map(() => Array.from({ length: ROUNDS }, () => []))
  for (let i = 0; i < SEQUENTIAL; i++) {
    const round = Math.floor((i * ROUNDS) / SEQUENTIAL)
    for (let j = 0; j < n; j++) {
      const side = (i + j) % n
      times[side]![round]!.push(await timed(sides[side]!))
    }
  }
  const rates: number[][] = sides.map(() => [])
  for (let round = 0; round < 5; round++)
    for (let j = 0; j < n; j++)
      rates[j]!.push(await throughput(sides[j]!, CONCURRENT_CALLS / 5, WIDTH))
  const all = times.map((rounds) => rounds.flat())
  const [sdk, yoke, byProxy, bare, native] = all as [
    number[],
    number[],
    number[],
    number[],
    number[],
  ]
  const [sdkRate, yokeRate, proxyRate, bareRate, nativeRate] = rates.map(median) as [
    number,
    number,
    number,
    number,
    number,
  ]
  const p50s = (side: number) => times[side]!.map((round) => percentile(round, 50))
  const vsProxy = figure({
    name: `gateway HTTP p50 ÷ SDK proxy (${era === 'legacy' ? '2025 era' : '2026-07-28'})`,
    value: percentile(yoke, 50) / percentile(byProxy, 50),
    goal: 1.15,
    better: 'lower',
    unit: '×',
    spread: ratioSpread(p50s(1), p50s(2)),
    baseline: 'a hand-written v2 SDK proxy over HTTP (Server + Client to the same upstream)',
  })
  const upstream = era === 'legacy' ? 'server-everything' : 'the modern fixture'
  console.log(
    `\nMCP gateway, ${era === 'legacy' ? '2025 era (sessions)' : '2026-07-28 (stateless)'}: echo over Streamable HTTP, through yoke (mcp-server → pipeline → mcp-client → ${upstream} over stdio) vs a hand-written SDK proxy (v2 Server → v2 Client → ${upstream} over stdio) vs ${upstream}'s own endpoint; ${SEQUENTIAL} sequential calls each (interleaved), ${CONCURRENT_CALLS} at ${WIDTH} concurrent`,
  )
  console.log(
    row([
      '',
      'direct',
      'yoke',
      'SDK proxy',
      'SDK floor',
      'yoke native',
      'yoke / proxy',
      'yoke / direct',
      'native / floor',
      'goal',
    ]),
  )
  for (const p of [50, 99]) {
    const [a, b, c, d, e] = [sdk, yoke, byProxy, bare, native].map((t) => percentile(t, p)) as [
      number,
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
        e,
        p === 50 ? `${vsProxy.toFixed(2)} (${ratioSpread(p50s(1), p50s(2))})` : (b / c).toFixed(2),
        (b / a).toFixed(2),
        (e / d).toFixed(2),
        p === 50 ? '≤ 1.15 (proxy)' : '',
      ]),
    )
  }
  console.log(
    row([
      `calls/s @${WIDTH}`,
      sdkRate,
      yokeRate,
      proxyRate,
      bareRate,
      nativeRate,
      (yokeRate / proxyRate).toFixed(2),
      (yokeRate / sdkRate).toFixed(2),
      (nativeRate / bareRate).toFixed(2),
      '',
    ]),
  )
  await Promise.all([
    rawClient.close(),
    floorClient.close(),
    proxyClient.close(),
    yokeClient.close(),
    proxyUpstream.close(),
  ])
  for (const server of [floor.http, proxy.http]) {
    server.closeAllConnections()
    server.close()
  }
  await h.close()
  direct.child.kill()
}

/** Prepended to each stdio process: SIGUSR2 makes it write its CPU time so far (µs) to stderr. */
const CPU_REPORT = `process.on('SIGUSR2', () => { const u = process.cpuUsage(); process.stderr.write('CPU ' + (u.user + u.system) + '\\n') });`

/** The hand-written SDK proxy as a process over stdio: argv[1] is its upstream's command line. */
export const PROXY_STDIO = `${CPU_REPORT}
import { Server } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
const [command, ...args] = JSON.parse(process.argv[1])
// the upstream is the 2026-07-28 fixture: pinned, as yoke's mcp-client negotiates it
const upstream = new Client({ name: 'proxy', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
await upstream.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }))
serveStdio(() => {
  const server = new Server({ name: 'proxy', version: '1' }, { capabilities: { tools: {} } })
  server.setRequestHandler('tools/list', () => upstream.listTools())
  server.setRequestHandler('tools/call', (r, ctx) =>
    upstream.callTool({ name: r.params.name, arguments: r.params.arguments }, { signal: ctx.mcpReq.signal }))
  return server
})
process.stdin.once('end', () => process.exit(0))
`

/** \`yoke serve ...argv\` as bin/yoke.js runs it: the package as built (`dist`, or another build's directory). */
export const yokeStdio = (dist = `${ROOT}dist`) => `${CPU_REPORT}
const { main, drained } = await import(${JSON.stringify(pathToFileURL(`${dist}/src/cli/main.js`).href)})
const code = await main(process.argv.slice(1))
await drained()
process.exit(code)
`

/** A process a v2 client drives over stdio, and its CPU time (µs) on demand. */
export interface StdioSide {
  client: Client
  cpu(): Promise<number>
  /** what it wrote to stderr besides its CPU readings */
  stderr(): string
}

export async function stdioSide(era: Era, script: string, argv: string[], cwd: string, env = {}) {
  const prof = process.env.GATEWAY_PROF
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []),
      // plain JavaScript on both sides, no tsx loader in the process: yoke as built, the proxy as written
      '--input-type=module',
      '-e',
      script,
      ...argv,
    ],
    cwd,
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: 'pipe',
  })
  const readings: Array<(us: number) => void> = []
  let seen = ''
  createInterface({ input: transport.stderr as import('node:stream').Readable }).on(
    'line',
    (line) => {
      const m = /^CPU (\d+)$/.exec(line)
      if (m) readings.shift()?.(Number(m[1]))
      else seen += `${line}\n`
    },
  )
  const client = new Client(
    { name: 'bench', version: '1' },
    era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  )
  try {
    await client.connect(transport)
  } catch (err) {
    throw new Error(`${messageOfErr(err)}\n${seen}`, { cause: err })
  }
  const side: StdioSide = {
    client,
    cpu: () =>
      new Promise<number>((resolve) => {
        readings.push(resolve)
        process.kill(transport.pid!, 'SIGUSR2')
      }),
    stderr: () => seen,
  }
  return side
}

const messageOfErr = (err: unknown) => (err instanceof Error ? err.message : String(err))

/** short rounds, many of them: under load, alternating often keeps drift out of the ratio */
const STDIO_ROUNDS = 20
const STDIO_CALLS = 200

/**
 * `yoke serve --stdio` (its config: one mcp-client upstream, the modern fixture over stdio) against
 * the hand-written SDK proxy process forwarding to the same fixture: CPU per call of each process,
 * measured round by round in alternating order, and each call's latency seen from the client.
 */
export async function stdioBench(era: Era) {
  buildOnce()
  const dir = mkdtempSync(join(tmpdir(), 'yoke-bench-gateway-'))
  const upstream = [process.execPath, MODERN_FIXTURE]
  writeFileSync(
    join(dir, 'yoke.config.yaml'),
    `plugins:\n  upstream:\n    use: mcp-client\n    config: { serverName: upstream, command: ${JSON.stringify(upstream[0])}, args: [${JSON.stringify(upstream[1])}] }\n`,
  )
  const home = join(dir, '.home')
  const yoke = await stdioSide(era, yokeStdio(), ['serve', '--stdio', '--cwd', dir], ROOT, {
    YOKE_HOME: home,
    YOKE_TRUST: '1', // the bench's own project
    NO_COLOR: '1',
  })
  const proxy = await stdioSide(era, PROXY_STDIO, [JSON.stringify(upstream)], ROOT)
  try {
    for (const side of [yoke, proxy])
      if (side.client.getProtocolEra() !== era)
        throw new Error(`a stdio side negotiated ${side.client.getProtocolEra()}, not ${era}`)
    // the upstream joins after yoke serve answers: wait until its tool is listed
    for (let i = 0; ; i++) {
      const { tools } = await yoke.client.listTools()
      if (tools.some((t) => t.name === 'mcp__upstream__echo')) break
      if (i > 200)
        throw new Error(`yoke serve --stdio never listed mcp__upstream__echo:\n${yoke.stderr()}`)
      await sleep(50)
    }
    const sides: Array<[StdioSide, Call]> = [
      [
        yoke,
        () => yoke.client.callTool({ name: 'mcp__upstream__echo', arguments: { text: 'hi' } }),
      ],
      [proxy, () => proxy.client.callTool({ name: 'echo', arguments: { text: 'hi' } })],
    ]
    for (const [, call] of sides) for (let i = 0; i < 300; i++) await call() // warm-up
    const cpu: number[][] = [[], []]
    const wall: number[][] = [[], []]
    for (let round = 0; round < STDIO_ROUNDS; round++)
      for (let k = 0; k < 2; k++) {
        const j = (round + k) % 2
        const [side, call] = sides[j]!
        const before = await side.cpu()
        for (let i = 0; i < STDIO_CALLS; i++) wall[j]!.push(await timed(call))
        cpu[j]!.push(((await side.cpu()) - before) / STDIO_CALLS)
      }
    const [yokeCpu, proxyCpu] = cpu.map(median) as [number, number]
    const spread = ratioSpread(cpu[0]!, cpu[1]!)
    const ratio = figure({
      name: `gateway stdio CPU/call ÷ SDK proxy (${era === 'legacy' ? '2025 era' : '2026-07-28'})`,
      value: yokeCpu / proxyCpu,
      goal: 1.5,
      better: 'lower',
      unit: '×',
      spread,
      baseline:
        'a hand-written v2 SDK proxy process over stdio (Server + Client to the same upstream)',
    })
    console.log(
      `\nMCP gateway over stdio (${era === 'modern' ? '2026-07-28' : '2025 era'}): echo through \`yoke serve --stdio\` (→ pipeline → mcp-client → the modern fixture over stdio) vs a hand-written SDK proxy process (v2 Server → v2 Client → the same fixture); ${STDIO_ROUNDS} rounds of ${STDIO_CALLS} sequential calls each, alternating; CPU of the serving process`,
    )
    console.log(row(['', 'yoke serve', 'SDK proxy', 'yoke / proxy', 'spread', 'goal']))
    console.log(row(['CPU µs/call', yokeCpu, proxyCpu, ratio.toFixed(2), spread, '≤ 1.5']))
    const [a, b] = wall.map((t) => percentile(t, 50)) as [number, number]
    console.log(row(['p50 µs', a, b, (a / b).toFixed(2), '', '']))
  } finally {
    await Promise.all([yoke.client.close(), proxy.client.close()])
    rmSync(dir, { recursive: true, force: true })
  }
}

export async function gatewayBench() {
  await stdioBench('legacy')
  await stdioBench('modern')
  await eraBench('legacy')
  await eraBench('modern')
}

if (import.meta.url === `file://${process.argv[1]}`)
  await gatewayBench().then(() => process.exit(0))
