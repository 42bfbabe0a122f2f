/**
 * MCP bridge overhead, side by side with a bare SDK client in the same run: server-everything's
 * `echo` called through yoke (mcp-client + the whole pipeline), through the SDK alone, and through
 * the SDK with the options yoke passes on every call (a signal, progress, timeouts), each on its
 * own server process. Latency: the three interleave call by call, so drift hits all alike. Throughput: calls/s at 32 concurrent, alternating rounds. Then five stdio servers
 * started together against the slowest started alone, for yoke and for the bare SDK (on a machine
 * with fewer cores than servers, the servers' own startup competes for CPU: the SDK row shows that
 * bound).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { EVERYTHING, everything, mcpHarness } from '../test/helpers/mcp.ts'
import { median, percentile, row, throughput, timed, type Call } from './stats.ts'

const SEQUENTIAL = 3000
const CONCURRENT_CALLS = 6000
const WIDTH = 32

async function rawClient(): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1' })
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [EVERYTHING, 'stdio'],
      stderr: 'ignore',
    }),
  )
  return client
}

export async function mcpBench() {
  const raw = await rawClient()
  const rawWithOptions = await rawClient()
  // the runtime's default cap is 16 calls in flight; 32 concurrent calls need a cap above 32
  const h = await mcpHarness(undefined, { maxConcurrent: 64 })
  await h.add('everything', everything())
  const viaSdk: Call = () => raw.callTool({ name: 'echo', arguments: { message: 'hi' } })
  // what yoke asks of every call: cancellation (a signal), progress (which makes a progressToken), timeouts
  const viaSdkWithOptions: Call = () =>
    rawWithOptions.callTool({ name: 'echo', arguments: { message: 'hi' } }, undefined, {
      signal: new AbortController().signal,
      onprogress: () => {},
      resetTimeoutOnProgress: true,
      timeout: 60_000,
      maxTotalTimeout: 600_000,
    })
  const viaYoke: Call = async () => {
    const r = await h.rt.call('mcp__everything__echo', { message: 'hi' })
    if (!r.ok) throw new Error(r.error?.message)
  }
  for (let i = 0; i < 300; i++) await Promise.all([viaSdk(), viaSdkWithOptions(), viaYoke()]) // warm-up
  const sides = [viaSdk, viaSdkWithOptions, viaYoke]
  const times: number[][] = [[], [], []]
  for (let i = 0; i < SEQUENTIAL; i++)
    for (let j = 0; j < 3; j++) times[(i + j) % 3]!.push(await timed(sides[(i + j) % 3]!)) // rotating order
  const rates: number[][] = [[], [], []]
  for (let round = 0; round < 5; round++)
    for (let j = 0; j < 3; j++)
      rates[j]!.push(await throughput(sides[j]!, CONCURRENT_CALLS / 5, WIDTH))
  const [sdk, withOptions, yoke] = times as [number[], number[], number[]]
  const [sdkRate, optionsRate, yokeRate] = rates.map(median) as [number, number, number]
  console.log(
    `\nMCP echo (server-everything, stdio), through yoke vs a bare SDK client; ${SEQUENTIAL} sequential calls each (interleaved), ${CONCURRENT_CALLS} at ${WIDTH} concurrent (runtime.maxConcurrent 64)`,
  )
  console.log(row(['', 'bare SDK', 'SDK + options', 'yoke', 'yoke / SDK', 'yoke / +opts', 'goal']))
  for (const p of [50, 99]) {
    const [a, b, c] = [percentile(sdk, p), percentile(withOptions, p), percentile(yoke, p)]
    console.log(
      row([`p${p} µs`, a, b, c, (c / a).toFixed(2), (c / b).toFixed(2), p === 50 ? '≤ 1.05' : '']),
    )
  }
  console.log(
    row([
      `calls/s @${WIDTH}`,
      sdkRate,
      optionsRate,
      yokeRate,
      (yokeRate / sdkRate).toFixed(2),
      (yokeRate / optionsRate).toFixed(2),
      '≥ 0.95',
    ]),
  )
  await raw.close()
  await rawWithOptions.close()
  await h.close()

  const alone = { sdk: [] as number[], yoke: [] as number[] }
  for (let i = 0; i < 5; i++) {
    const one = await mcpHarness()
    alone.yoke.push((await timed(() => one.add(`s${i}`, everything(`s${i}`)))) / 1000)
    await one.close()
    let client: Client | undefined
    alone.sdk.push((await timed(async () => (client = await rawClient()))) / 1000)
    await client!.close()
  }
  const many = await mcpHarness()
  const yokeAll =
    (await timed(() =>
      Promise.all(Array.from({ length: 5 }, (_, i) => many.add(`s${i}`, everything(`s${i}`)))),
    )) / 1000
  if (!many.hub.list().every((s) => s.state === 'connected'))
    throw new Error('not every server connected')
  await many.close()
  let clients: Client[] = []
  const sdkAll =
    (await timed(async () => (clients = await Promise.all(Array.from({ length: 5 }, rawClient))))) /
    1000
  await Promise.all(clients.map((c) => c.close()))
  console.log(
    '\nfive stdio servers (server-everything) started together vs the slowest alone (yoke includes tools/list and registration)',
  )
  console.log(row(['', 'slowest alone ms', 'together ms', 'ratio', 'goal']))
  console.log(
    row([
      'yoke',
      Math.max(...alone.yoke),
      yokeAll,
      (yokeAll / Math.max(...alone.yoke)).toFixed(2),
      '≤ 1.2',
    ]),
  )
  console.log(
    row([
      'bare SDK',
      Math.max(...alone.sdk),
      sdkAll,
      (sdkAll / Math.max(...alone.sdk)).toFixed(2),
      '(the machine)',
    ]),
  )
}
