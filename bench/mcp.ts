/**
 * MCP bridge overhead, side by side with a bare SDK (v2) client in the same run, per era: the
 * 2025 era on server-everything's `echo`, and 2026-07-28 on the modern fixture's `echo`
 * (test/fixtures/mcp/modern.mjs), each over stdio, called through yoke (mcp-client + the whole
 * pipeline, `protocol: auto`), through the v2 Client alone (legacy mode against server-everything,
 * pinned to 2026-07-28 against the fixture), and through that Client with what yoke adds to every
 * call (a signal, progress, timeouts, and the capabilities it declares, which a 2026-07-28 request
 * carries in its envelope), each on its own server process. Latency: the
 * three interleave call by call, so drift hits all alike. Throughput: calls/s at 32 concurrent,
 * alternating rounds. Then five stdio servers started together against the slowest started
 * alone, for yoke and for the bare SDK (on a machine with fewer cores than servers, the servers'
 * own startup competes for CPU: the SDK row shows that bound).
 */
import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { EVERYTHING, everything, mcpHarness, MODERN } from '../test/helpers/mcp.ts'
import { median, percentile, row, throughput, timed, type Call } from './stats.ts'

const SEQUENTIAL = 3000
const CONCURRENT_CALLS = 6000
const WIDTH = 32

type Era = 'legacy' | 'modern'
const SERVERS: Record<Era, { args: string[]; tool: string; arg: Record<string, string> }> = {
  legacy: { args: [EVERYTHING, 'stdio'], tool: 'echo', arg: { message: 'hi' } },
  modern: { args: [MODERN], tool: 'echo', arg: { text: 'hi' } },
}

/** `declared`: the capabilities yoke declares (questions, and 2026-07-28 tasks), which every 2026 request carries */
async function rawClient(era: Era = 'legacy', declared = false): Promise<Client> {
  const client = new Client(
    { name: 'bench', version: '1' },
    {
      ...(era === 'modern' && { versionNegotiation: { mode: { pin: '2026-07-28' } } }),
      ...(declared && {
        capabilities: {
          elicitation: { form: {}, url: {} },
          extensions: { 'io.modelcontextprotocol/tasks': {} },
        },
      }),
    },
  )
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: SERVERS[era].args,
      stderr: 'ignore',
    }),
  )
  if (client.getProtocolEra() !== era) throw new Error(`the bare client is not on the ${era} era`)
  return client
}

/** yoke vs the bare v2 Client on one era's server: p50/p99 and throughput at 32 concurrent. */
async function compare(era: Era) {
  const { tool, arg } = SERVERS[era]
  const raw = await rawClient(era)
  const rawWithOptions = await rawClient(era, true)
  // the runtime's default cap is 16 calls in flight; 32 concurrent calls need a cap above 32
  const h = await mcpHarness(undefined, { maxConcurrent: 64 })
  await h.add('bench', {
    serverName: 'bench',
    command: process.execPath,
    args: SERVERS[era].args,
  })
  if (h.status('bench').protocol?.era !== era) throw new Error(`yoke is not on the ${era} era`)
  const viaSdk: Call = () => raw.callTool({ name: tool, arguments: arg })
  // what yoke asks of every call: cancellation (a signal), progress (which makes a progressToken), timeouts
  const viaSdkWithOptions: Call = () =>
    rawWithOptions.callTool(
      { name: tool, arguments: arg },
      {
        signal: new AbortController().signal,
        onprogress: () => {},
        resetTimeoutOnProgress: true,
        timeout: 60_000,
        maxTotalTimeout: 600_000,
      },
    )
  const viaYoke: Call = async () => {
    const r = await h.rt.call(`mcp__bench__${tool}`, arg)
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
  const server = era === 'legacy' ? 'server-everything, 2025-11-25' : 'modern fixture, 2026-07-28'
  console.log(
    `\nMCP echo (${server}, stdio), through yoke vs a bare v2 SDK client; ${SEQUENTIAL} sequential calls each (interleaved), ${CONCURRENT_CALLS} at ${WIDTH} concurrent (runtime.maxConcurrent 64)`,
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
}

export async function mcpBench() {
  await compare('legacy')
  await compare('modern')

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
    (await timed(
      async () => (clients = await Promise.all(Array.from({ length: 5 }, () => rawClient()))),
    )) / 1000
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
