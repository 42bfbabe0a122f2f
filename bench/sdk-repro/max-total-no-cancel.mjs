// Reproduction for @modelcontextprotocol/client 2.4.0 (the Protocol is shared with /server): a
// request whose maxTotalTimeout passes while the server reports progress is rejected without a
// notifications/cancelled, so the server works on for nobody; an abort of the caller's signal
// afterwards sends nothing either. Run from a checkout that has the SDK's v2 packages:
//
//   node bench/sdk-repro/max-total-no-cancel.mjs
//
// The server's `work` tool reports progress every 10 ms for 600 ms and records whether it was
// cancelled. The client calls it with `timeout` 1000 and `resetTimeoutOnProgress`, once with
// `maxTotalTimeout` 200 (noticed on a progress notification: no cancel reaches the server), and
// once with only its own signal aborted after 200 ms (the cancel reaches the server).
import { Client, InMemoryTransport } from '@modelcontextprotocol/client'
import { Server } from '@modelcontextprotocol/server'

const cancelled = []
const server = new Server({ name: 'work', version: '1' }, { capabilities: { tools: {} } })
server.setRequestHandler('tools/list', async () => ({
  tools: [{ name: 'work', inputSchema: { type: 'object' } }],
}))
server.setRequestHandler('tools/call', async (request, ctx) => {
  const token = request.params._meta?.progressToken
  for (let i = 1; i <= 60; i++) {
    if (ctx.mcpReq.signal.aborted) {
      cancelled.push(ctx.mcpReq.id)
      return { content: [] }
    }
    if (token !== undefined)
      await ctx.mcpReq.notify({
        method: 'notifications/progress',
        params: { progressToken: token, progress: i, total: 60 },
      })
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return { content: [{ type: 'text', text: 'done' }] }
})
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
await server.connect(serverSide)
const client = new Client(
  { name: 'repro', version: '1' },
  { versionNegotiation: { mode: 'legacy' } },
)
await client.connect(clientSide)

async function attempt(label, options, abortAfterMs) {
  const controller = new AbortController()
  if (abortAfterMs) setTimeout(() => controller.abort(new Error('gave up')), abortAfterMs)
  const before = cancelled.length
  const started = Date.now()
  let outcome
  try {
    await client.callTool(
      { name: 'work', arguments: {} },
      {
        timeout: 1000,
        resetTimeoutOnProgress: true,
        onprogress: () => {},
        signal: controller.signal,
        ...options,
      },
    )
    outcome = 'resolved'
  } catch (err) {
    outcome = `rejected after ${Date.now() - started} ms: ${err.message}`
  }
  // the caller gives up too (as a host's own deadline would): does a cancel go out now?
  controller.abort(new Error('caller gave up'))
  await new Promise((resolve) => setTimeout(resolve, 800)) // the server's work is over by now
  const told =
    cancelled.length > before
      ? 'the server was cancelled'
      : 'the server was NEVER told (it ran to its end)'
  console.log(`${label}: ${outcome}; ${told}`)
}

await attempt('maxTotalTimeout 200 ms', { maxTotalTimeout: 200 })
await attempt('signal aborted at 200 ms', {}, 200)
await client.close()
