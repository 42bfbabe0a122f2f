// Reproduction for @modelcontextprotocol/client 2.4.0 (the same code is in @modelcontextprotocol/server
// 2.4.0): every spec-method request() builds a ZodError and formats its message before anything is
// sent. Run from a checkout that has the SDK's v2 packages and zod installed:
//
//   node bench/sdk-repro/result-probe.mjs
//
// It connects a v2 Client to a v2 Server over the SDK's InMemoryTransport (no process, no I/O),
// makes N tools/call requests for each era, and counts zod issues finalized (through zod's
// global customError hook, which finalizeIssue consults for every issue without a message of
// its own) and ZodError messages built. Every result in this script is valid, so both counts
// should be 0; they are N (one per call). Then the same with the one change the README proposes
// (the probe keyed by method, no failed parse) applied from outside: both counts drop to 0.
import * as z from 'zod/v4'
import { Client, InMemoryTransport } from '@modelcontextprotocol/client'
import { Server } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'

const N = 2000
let finalized = 0
z.config({ customError: () => void finalized++ })

async function connect(mode) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  // serveStdio serves both eras on one channel (as a stdio server does); here on the in-memory pair
  serveStdio(build, { transport: serverSide })
  const client = new Client({ name: 'repro', version: '1' }, { versionNegotiation: { mode } })
  await client.connect(clientSide)
  return client
}

function build() {
  const server = new Server({ name: 'echo', version: '1' }, { capabilities: { tools: {} } })
  server.setRequestHandler('tools/list', async () => ({
    tools: [
      { name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
    ],
  }))
  server.setRequestHandler('tools/call', async (r) => ({
    content: [{ type: 'text', text: String(r.params.arguments?.text) }],
  }))
  return server
}

/** The proposed fix, applied from outside: the method's result validator, probed once per codec and method. */
function probeOnce(client) {
  const request = client.request
  const cache = new Map()
  client.request = function (req, schemaOrOptions, maybeOptions) {
    if (schemaOrOptions?.['~standard'] || req.method !== 'tools/call')
      return request.call(this, req, schemaOrOptions, maybeOptions)
    const codec = this._wireCodec()
    let validate = cache.get(codec)
    if (!validate) {
      validate = {
        '~standard': {
          version: 1,
          vendor: 'mcp-wire-codec',
          validate(value) {
            const outcome = codec.validateResult(req.method, value)
            return outcome.ok
              ? { value: outcome.value }
              : { issues: [{ message: outcome.message }] }
          },
        },
      }
      cache.set(codec, validate)
    }
    return request.call(this, req, validate, schemaOrOptions)
  }
}

const ROUNDS = 6
const echo = (client) => client.callTool({ name: 'echo', arguments: { text: 'hi' } })

for (const [era, mode] of [
  ['2025-11-25', 'legacy'],
  ['2026-07-28', { pin: '2026-07-28' }],
]) {
  const sides = [
    { name: 'as shipped', client: await connect(mode), issues: 0, cpu: 0 },
    { name: 'probe once', client: await connect(mode), issues: 0, cpu: 0 },
  ]
  probeOnce(sides[1].client)
  for (const side of sides) for (let i = 0; i < N; i++) await echo(side.client) // warm-up
  // rounds alternate between the two, so the JIT and the machine's load treat them alike
  for (let round = 0; round < ROUNDS; round++)
    for (const side of round % 2 ? sides : [...sides].reverse()) {
      finalized = 0
      const cpu = process.cpuUsage()
      for (let i = 0; i < N; i++) await echo(side.client)
      const used = process.cpuUsage(cpu)
      side.cpu += used.user + used.system
      side.issues += finalized
    }
  for (const side of sides) {
    const calls = N * ROUNDS
    console.log(
      `${era}, ${side.name}: ${calls} valid tools/call results, ${side.issues} zod issues finalized (${(side.issues / calls).toFixed(2)} per call), ${(side.cpu / calls).toFixed(1)} µs CPU per call (client and server in one process)`,
    )
    await side.client.close()
  }
}
