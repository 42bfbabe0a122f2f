/**
 * What an MCP server's protocol transcript costs a call: yoke with `transcript: true` (the
 * default) against `transcript: false`, beside the bare v2 client, each on its own
 * server-everything over stdio, in rounds of sequential echo calls (the sides in rotating order).
 * CPU per call is `process.cpuUsage()` of this process around each side's calls (the servers are
 * other processes); a ratio is taken per round, its median is the figure, its quartiles and range
 * the spread. Then the transcript alone: what recording one message costs, and one read of it.
 */
import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { ENTRIES, Transcript } from '../plugins/mcp-client/transcript.ts'
import { EVERYTHING, mcpHarness } from '../test/helpers/mcp.ts'
import { median, row } from './stats.ts'

const ROUNDS = 30
const PER_ROUND = 1000
const ARGS = [EVERYTHING, 'stdio']

interface Side {
  name: string
  call(): Promise<unknown>
  close(): Promise<unknown>
}

async function yoke(name: string, transcript: boolean): Promise<Side> {
  const h = await mcpHarness(undefined, { maxConcurrent: 64 })
  await h.add('bench', { serverName: 'bench', command: process.execPath, args: ARGS, transcript })
  return {
    name,
    call: async () => {
      const r = await h.rt.call('mcp__bench__echo', { message: 'hi' })
      if (!r.ok) throw new Error(r.error?.message)
    },
    close: () => h.close(),
  }
}

async function rawV2(): Promise<Side> {
  const client = new Client({ name: 'bench', version: '1' })
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: ARGS, stderr: 'ignore' }),
  )
  return {
    name: 'raw v2',
    call: () => client.callTool({ name: 'echo', arguments: { message: 'hi' } }),
    close: () => client.close(),
  }
}

/** CPU µs per call of each side, per round. */
async function measure(sides: Side[]): Promise<number[][]> {
  const cpu = sides.map(() => [] as number[])
  for (const side of sides) for (let i = 0; i < 300; i++) await side.call() // warm-up
  for (let round = 0; round < ROUNDS; round++)
    for (let j = 0; j < sides.length; j++) {
      const k = (round + j) % sides.length
      const start = process.cpuUsage()
      for (let i = 0; i < PER_ROUND; i++) await sides[k]!.call()
      const used = process.cpuUsage(start)
      cpu[k]!.push((used.user + used.system) / PER_ROUND)
    }
  return cpu
}

/** The median of per-round ratios a[r] / b[r], with its quartiles and range. */
function ratio(a: number[], b: number[]): string {
  const rs = a.map((x, r) => x / b[r]!).sort((x, y) => x - y)
  const at = (f: number) => rs[Math.round(f * (rs.length - 1))]!.toFixed(2)
  return `${median(rs).toFixed(3)} (quartiles ${at(0.25)}–${at(0.75)}, ${at(0)}–${at(1)})`
}

/** Recording alone: ns per message (with its size, as over stdio; measured, as over HTTP); a read. */
function alone(): { sized: number; measured: number; readMs: number } {
  const transcript = new Transcript(() => ['a-secret-value'])
  const recorder = transcript.connection()
  const messages = Array.from({ length: 1000 }, (_, i) => ({
    jsonrpc: '2.0',
    id: i,
    method: 'tools/call',
    params: { name: 'echo', arguments: { message: 'hi' } },
  }))
  const ns = (n: number, record: (m: object) => void) => {
    const start = process.cpuUsage()
    for (let i = 0; i < n; i++) record(messages[i % 1000]!)
    const used = process.cpuUsage(start)
    return ((used.user + used.system) * 1000) / n
  }
  ns(200_000, (m) => recorder.sent(m, 90)) // warm-up
  const sized = ns(2_000_000, (m) => recorder.sent(m, 90))
  const measured = ns(200_000, (m) => recorder.received(m))
  const start = process.cpuUsage()
  for (let i = 0; i < 20; i++) transcript.entries()
  const used = process.cpuUsage(start)
  return { sized, measured, readMs: (used.user + used.system) / 20 / 1000 }
}

export async function mcpTranscriptBench() {
  const sides = [
    await rawV2(),
    await yoke('transcript on', true),
    await yoke('transcript off', false),
  ]
  const [v2, on, off] = await measure(sides)
  console.log(
    `\nMCP server transcript: yoke echo over stdio with transcript on (the default) and off, ${ROUNDS} rounds of ${PER_ROUND} sequential calls per side (rotating order); CPU per call, ratios: median of the rounds' (quartiles, range)`,
  )
  console.log(row(['', 'CPU µs/call', '÷ raw v2', '÷ transcript off']))
  console.log(row(['raw v2', median(v2!).toFixed(1), '1', '']))
  console.log(row(['transcript on', median(on!).toFixed(1), ratio(on!, v2!), ratio(on!, off!)]))
  console.log(row(['transcript off', median(off!).toFixed(1), ratio(off!, v2!), '1']))
  await Promise.all(sides.map((s) => s.close()))
  const { sized, measured, readMs } = alone()
  console.log(
    `recording one message: ${sized.toFixed(0)} ns with its size (stdio), ${measured.toFixed(0)} ns measured (HTTP); reading ${ENTRIES} exchanges: ${readMs.toFixed(2)} ms`,
  )
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await mcpTranscriptBench()
  process.exit(0)
}
