/**
 * MCP echo over stdio, yoke against every client we measure, in one interleaved run: yoke
 * (mcp-client + the whole pipeline, `protocol: auto`), the bare SDK clients (v1:
 * `@modelcontextprotocol/sdk`; v2: `@modelcontextprotocol/client`), LangChain's MCP adapters and
 * Mastra's MCPClient (both on the v1 SDK; installed into bench/peers on first use, never
 * dependencies of yoke: bench/peers/package.json pins them). Each side has its own
 * server-everything process (2025-11-25) and calls its `echo`. Rounds: each side makes
 * `PER_ROUND` sequential calls, the sides in rotating order, then `CONCURRENT_PER_ROUND` calls at
 * 32 concurrent; a ratio is taken per round (its median is the figure, its range the spread).
 * CPU per call: `process.cpuUsage()` of this process around each side's sequential calls (the
 * servers are other processes). A peer that cannot be installed or loaded is said on stderr and
 * left out. Then yoke against the bare v2 client on the 2026-07-28 era (the modern fixture), and
 * five stdio servers started together against the slowest started alone.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { EVERYTHING, everything, mcpHarness, MODERN } from '../test/helpers/mcp.ts'
import {
  figure,
  median,
  percentile,
  ratioSpread,
  row,
  throughput,
  timed,
  type Call,
} from './stats.ts'

const ROUNDS = 6
const PER_ROUND = 1000
const CONCURRENT_PER_ROUND = 3000 // a burst long enough that a load spike on a shared machine is not the whole measure
const WIDTH = 32

type Era = 'legacy' | 'modern'
const SERVERS: Record<Era, { args: string[]; tool: string; arg: Record<string, string> }> = {
  legacy: { args: [EVERYTHING, 'stdio'], tool: 'echo', arg: { message: 'hi' } },
  modern: { args: [MODERN], tool: 'echo', arg: { text: 'hi' } },
}

interface Side {
  name: string
  call: Call
  close(): Promise<unknown>
}

/** One side's figures, per round. */
interface Measured {
  side: Side
  times: number[]
  p50: number[]
  cpu: number[]
  rate: number[]
}

/** The bare v2 Client on one era's server (the 2025 era negotiated, or 2026-07-28 pinned). */
async function rawV2(era: Era): Promise<Side> {
  const { args, tool, arg } = SERVERS[era]
  const client = new Client(
    { name: 'bench', version: '1' },
    era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  )
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args, stderr: 'ignore' }),
  )
  if (client.getProtocolEra() !== era) throw new Error(`the bare client is not on the ${era} era`)
  return {
    name: 'raw v2',
    call: () => client.callTool({ name: tool, arguments: arg }),
    close: () => client.close(),
  }
}

async function rawV1(): Promise<Side> {
  const { args, tool, arg } = SERVERS.legacy
  const client = new V1Client({ name: 'bench', version: '1' })
  await client.connect(
    new V1StdioClientTransport({ command: process.execPath, args, stderr: 'ignore' }),
  )
  return {
    name: 'raw v1',
    call: () => client.callTool({ name: tool, arguments: arg }),
    close: () => client.close(),
  }
}

async function yoke(era: Era): Promise<Side> {
  const { args, tool, arg } = SERVERS[era]
  // the runtime's default cap is 16 calls in flight; 32 concurrent calls need a cap above 32
  const h = await mcpHarness(undefined, { maxConcurrent: 64 })
  await h.add('bench', { serverName: 'bench', command: process.execPath, args })
  if (h.status('bench').protocol?.era !== era) throw new Error(`yoke is not on the ${era} era`)
  const name = `mcp__bench__${tool}`
  return {
    name: 'yoke',
    call: async () => {
      const r = await h.rt.call(name, arg)
      if (!r.ok) throw new Error(r.error?.message)
    },
    close: () => h.close(),
  }
}

const PEERS_DIR = fileURLToPath(new URL('./peers/', import.meta.url))
const PEERS = [
  { name: 'LangChain', module: 'langchain.mjs', pkg: '@langchain/mcp-adapters' },
  { name: 'Mastra', module: 'mastra.mjs', pkg: '@mastra/mcp' },
]

/** Installs the peers into bench/peers/node_modules once (npm's progress on stderr); false when that failed. */
function installPeers(): boolean {
  if (PEERS.every((p) => existsSync(`${PEERS_DIR}node_modules/${p.pkg}/package.json`))) return true
  console.error(
    'bench: installing the peer MCP clients into bench/peers (once; not yoke dependencies)…',
  )
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  const args = ['install', '--prefix', PEERS_DIR, '--no-audit', '--no-fund', '--no-package-lock']
  const done = spawnSync(npm, args, { stdio: ['ignore', process.stderr, process.stderr] })
  if (done.status === 0) return true
  console.error(
    `bench: npm install in bench/peers failed (${done.error?.message ?? `exit ${done.status}`}); the peers are left out`,
  )
  return false
}

/** LangChain's adapters and Mastra's MCPClient, each on its own server; one that fails is left out. */
async function peers(): Promise<Side[]> {
  if (!installPeers()) return []
  const { args, tool, arg } = SERVERS.legacy
  const sides: Side[] = []
  for (const peer of PEERS)
    try {
      // a path, not a package name: the peers resolve from bench/peers/node_modules, not yoke's
      const module = (await import(new URL(`./peers/${peer.module}`, import.meta.url).href)) as {
        connect(
          o: object,
        ): Promise<{ call(input: object): Promise<unknown>; close(): Promise<unknown> }>
      }
      const side = await module.connect({ command: process.execPath, args, tool })
      sides.push({ name: peer.name, call: () => side.call(arg), close: () => side.close() })
    } catch (err) {
      console.error(
        `bench: ${peer.name} could not be loaded or connected, left out: ${(err as Error).message}`,
      )
    }
  return sides
}

/** Rounds of sequential calls (rotating order, CPU per call each) and of calls at 32 concurrent. */
async function measure(sides: Side[]): Promise<Measured[]> {
  const all = sides.map((side) => ({ side, times: [], p50: [], cpu: [], rate: [] }) as Measured)
  for (const m of all) for (let i = 0; i < 300; i++) await m.side.call() // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (let j = 0; j < all.length; j++) {
      const m = all[(round + j) % all.length]!
      const times: number[] = []
      const cpu = process.cpuUsage()
      for (let i = 0; i < PER_ROUND; i++) times.push(await timed(m.side.call))
      const used = process.cpuUsage(cpu)
      m.cpu.push((used.user + used.system) / PER_ROUND)
      m.p50.push(percentile(times, 50))
      m.times.push(...times)
    }
    for (let j = 0; j < all.length; j++) {
      const m = all[(round + j) % all.length]!
      m.rate.push(await throughput(m.side.call, CONCURRENT_PER_ROUND, WIDTH))
    }
  }
  return all
}

/** The median of per-round ratios a[r] / b[r]. */
const ratio = (a: number[], b: number[]) => median(a.map((x, r) => x / b[r]!))

function print(all: Measured[]) {
  const v1 = all.find((m) => m.side.name === 'raw v1')!
  const v2 = all.find((m) => m.side.name === 'raw v2')!
  console.log(
    `\nMCP echo (server-everything, 2025-11-25, stdio), each client on its own server; ${ROUNDS} rounds of ${PER_ROUND} sequential calls per side (rotating order), ${CONCURRENT_PER_ROUND} at ${WIDTH} concurrent per round; ratios: median of the rounds' (min–max)`,
  )
  console.log(
    row([
      '',
      'p50 µs',
      'p99 µs',
      `calls/s @${WIDTH}`,
      'CPU µs/call',
      'p50 ÷ v1',
      'p50 ÷ v2',
      `@${WIDTH} ÷ v2`,
      'CPU ÷ v2',
    ]),
  )
  for (const m of all)
    console.log(
      row([
        m.side.name,
        percentile(m.times, 50),
        percentile(m.times, 99),
        median(m.rate),
        median(m.cpu).toFixed(1),
        `${ratio(m.p50, v1.p50).toFixed(2)} (${ratioSpread(m.p50, v1.p50)})`,
        `${ratio(m.p50, v2.p50).toFixed(2)} (${ratioSpread(m.p50, v2.p50)})`,
        `${ratio(m.rate, v2.rate).toFixed(2)} (${ratioSpread(m.rate, v2.rate)})`,
        `${ratio(m.cpu, v2.cpu).toFixed(2)} (${ratioSpread(m.cpu, v2.cpu)})`,
      ]),
    )
}

/** The issue's figures: yoke against the bare v2 client, and against the best peer. */
function record(all: Measured[]) {
  const of = (name: string) => all.find((m) => m.side.name === name)
  const [y, v2] = [of('yoke')!, of('raw v2')!]
  const baseline = 'raw SDK v2 client, same run'
  figure({
    name: 'mcp stdio p50 yoke ÷ raw v2',
    value: ratio(y.p50, v2.p50),
    goal: 1.1,
    better: 'lower',
    spread: ratioSpread(y.p50, v2.p50),
    baseline,
  })
  figure({
    name: 'mcp @32 throughput yoke ÷ raw v2',
    value: ratio(y.rate, v2.rate),
    goal: 1.0,
    better: 'higher',
    spread: ratioSpread(y.rate, v2.rate),
    baseline,
  })
  figure({
    name: 'mcp client CPU/call yoke ÷ raw v2',
    value: ratio(y.cpu, v2.cpu),
    goal: 1.3,
    better: 'lower',
    spread: ratioSpread(y.cpu, v2.cpu),
    baseline,
  })
  const peers = ['LangChain', 'Mastra'].map(of).filter((m) => m !== undefined)
  if (!peers.length)
    return console.error('bench: no peer ran; "mcp stdio p50 yoke ÷ best peer" is not recorded')
  // each round's best peer (both ÷ the same round's raw v1, so the v1 cancels out)
  const best = y.p50.map((_, r) => Math.min(...peers.map((m) => m.p50[r]!)))
  figure({
    name: 'mcp stdio p50 yoke ÷ best peer',
    value: ratio(y.p50, best),
    goal: 1.0,
    better: 'lower',
    spread: ratioSpread(y.p50, best),
    baseline: `the faster of ${peers.map((m) => m.side.name).join(' and ')} each round (÷ raw v1 alike)`,
  })
}

/** yoke against the bare v2 client on the 2026-07-28 era (printed, no figure of the issue). */
async function modern() {
  const sides = [await rawV2('modern'), await yoke('modern')]
  const [v2, y] = await measure(sides)
  console.log(
    `\nMCP echo (modern fixture, 2026-07-28, stdio): yoke ÷ raw v2, median of ${ROUNDS} rounds (min–max)`,
  )
  console.log(row(['', 'raw v2', 'yoke', 'yoke ÷ v2']))
  const line = (what: string, a: number[], b: number[]) =>
    console.log(
      row([
        what,
        median(a).toFixed(1),
        median(b).toFixed(1),
        `${ratio(b, a).toFixed(2)} (${ratioSpread(b, a)})`,
      ]),
    )
  line('p50 µs', v2!.p50, y!.p50)
  line(`calls/s @${WIDTH}`, v2!.rate, y!.rate)
  line('CPU µs/call', v2!.cpu, y!.cpu)
  await Promise.all(sides.map((s) => s.close()))
}

export async function mcpBench() {
  const sides = [await yoke('legacy'), await rawV1(), await rawV2('legacy'), ...(await peers())]
  const all = await measure(sides)
  print(all)
  record(all)
  await Promise.all(sides.map((s) => s.close()))
  await modern()
  await startup()
}

/** Five stdio servers started together against the slowest started alone, yoke and the bare SDK. */
async function startup() {
  const alone = { sdk: [] as number[], yoke: [] as number[] }
  for (let i = 0; i < 5; i++) {
    const one = await mcpHarness()
    alone.yoke.push((await timed(() => one.add(`s${i}`, everything(`s${i}`)))) / 1000)
    await one.close()
    let side: Side | undefined
    alone.sdk.push((await timed(async () => (side = await rawV2('legacy')))) / 1000)
    await side!.close()
  }
  const many = await mcpHarness()
  const yokeAll =
    (await timed(() =>
      Promise.all(Array.from({ length: 5 }, (_, i) => many.add(`s${i}`, everything(`s${i}`)))),
    )) / 1000
  if (!many.hub.list().every((s) => s.state === 'connected'))
    throw new Error('not every server connected')
  await many.close()
  let clients: Side[] = []
  const sdkAll =
    (await timed(
      async () => (clients = await Promise.all(Array.from({ length: 5 }, () => rawV2('legacy')))),
    )) / 1000
  await Promise.all(clients.map((c) => c.close()))
  console.log(
    '\nfive stdio servers (server-everything) started together vs the slowest alone (yoke includes tools/list and registration)',
  )
  console.log(row(['', 'slowest alone ms', 'together ms', 'ratio', 'goal']))
  const line = (who: string, times: number[], all: number, goal: string) =>
    console.log(row([who, Math.max(...times), all, (all / Math.max(...times)).toFixed(2), goal]))
  line('yoke', alone.yoke, yokeAll, '≤ 1.2')
  line('bare SDK', alone.sdk, sdkAll, '(the machine)')
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await mcpBench()
  process.exit(0)
}
