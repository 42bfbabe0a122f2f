/**
 * MCP bridge overhead, side by side with a bare SDK client in the same run: server-everything's
 * `echo` called through yoke (mcp-client + the whole pipeline) and through the SDK alone, each on
 * its own server process. Latency: the two alternate call by call, so the machine's drift hits
 * both alike. Throughput: calls/s at 32 concurrent, alternating rounds. Then five stdio servers
 * started together against the slowest started alone, for yoke and for the bare SDK (on a machine
 * with fewer cores than servers, the servers' own startup competes for CPU: the SDK row shows that
 * bound).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { EVERYTHING, everything, mcpHarness } from '../test/helpers/mcp.ts'
import { percentile, row } from './stats.ts'

const SEQUENTIAL = 3000
const CONCURRENT_CALLS = 6000
const WIDTH = 32

type Call = () => Promise<unknown>
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!

async function timed(call: Call): Promise<number> {
  const t0 = performance.now()
  await call()
  return (performance.now() - t0) * 1000
}

async function throughput(call: Call, calls: number, width: number): Promise<number> {
  let next = 0
  const t0 = performance.now()
  await Promise.all(Array.from({ length: width }, async () => {
    while (next++ < calls) await call()
  })) // prettier-ignore
  return calls / ((performance.now() - t0) / 1000)
}

async function rawClient(): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1' })
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'ignore' }))
  return client
}

export async function mcpBench() {
  const raw = await rawClient()
  // the runtime's default cap is 16 calls in flight; 32 concurrent calls need a cap above 32
  const h = await mcpHarness(undefined, { maxConcurrent: 64 })
  await h.add('everything', everything())
  const viaSdk: Call = () => raw.callTool({ name: 'echo', arguments: { message: 'hi' } })
  const viaYoke: Call = async () => {
    const r = await h.rt.call('mcp__everything__echo', { message: 'hi' })
    if (!r.ok) throw new Error(r.error?.message)
  }
  for (let i = 0; i < 300; i++) await Promise.all([viaSdk(), viaYoke()]) // warm-up
  const sdk: number[] = []
  const yoke: number[] = []
  for (let i = 0; i < SEQUENTIAL; i++) {
    sdk.push(await timed(viaSdk))
    yoke.push(await timed(viaYoke))
  }
  const sdkRate: number[] = []
  const yokeRate: number[] = []
  for (let round = 0; round < 5; round++) {
    sdkRate.push(await throughput(viaSdk, CONCURRENT_CALLS / 5, WIDTH))
    yokeRate.push(await throughput(viaYoke, CONCURRENT_CALLS / 5, WIDTH))
  }
  console.log(`\nMCP echo (server-everything, stdio), through yoke vs a bare SDK client; ${SEQUENTIAL} sequential calls each (alternating), ${CONCURRENT_CALLS} at ${WIDTH} concurrent (runtime.maxConcurrent 64)`)
  console.log(row(['', 'bare SDK', 'yoke', 'ratio', 'goal']))
  console.log(row(['p50 µs', percentile(sdk, 50), percentile(yoke, 50), (percentile(yoke, 50) / percentile(sdk, 50)).toFixed(2), '≤ 1.05']))
  console.log(row(['p99 µs', percentile(sdk, 99), percentile(yoke, 99), (percentile(yoke, 99) / percentile(sdk, 99)).toFixed(2), '']))
  console.log(row([`calls/s @${WIDTH}`, median(sdkRate), median(yokeRate), (median(yokeRate) / median(sdkRate)).toFixed(2), '≥ 0.95']))
  await raw.close()
  await h.close()

  const alone = { sdk: [] as number[], yoke: [] as number[] }
  for (let i = 0; i < 5; i++) {
    const one = await mcpHarness()
    alone.yoke.push(await timed(() => one.add(`s${i}`, everything(`s${i}`))) / 1000)
    await one.close()
    let client: Client | undefined
    alone.sdk.push(await timed(async () => (client = await rawClient())) / 1000)
    await client!.close()
  }
  const many = await mcpHarness()
  const yokeAll = (await timed(() => Promise.all(Array.from({ length: 5 }, (_, i) => many.add(`s${i}`, everything(`s${i}`)))))) / 1000
  if (!many.hub.list().every((s) => s.state === 'connected')) throw new Error('not every server connected')
  await many.close()
  let clients: Client[] = []
  const sdkAll = (await timed(async () => (clients = await Promise.all(Array.from({ length: 5 }, rawClient))))) / 1000
  await Promise.all(clients.map((c) => c.close()))
  console.log('\nfive stdio servers (server-everything) started together vs the slowest alone (yoke includes tools/list and registration)')
  console.log(row(['', 'slowest alone ms', 'together ms', 'ratio', 'goal']))
  console.log(row(['yoke', Math.max(...alone.yoke), yokeAll, (yokeAll / Math.max(...alone.yoke)).toFixed(2), '≤ 1.2']))
  console.log(row(['bare SDK', Math.max(...alone.sdk), sdkAll, (sdkAll / Math.max(...alone.sdk)).toFixed(2), '(the machine)']))
}
