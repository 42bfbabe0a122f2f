// The MCP servers view is live for the protocol transcript too: with a page's event stream open,
// a call through an MCP server pushes that server's row, its transcript holding the call paired
// with its answer (no page reload, no state change of the server needed).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { FIXTURE } from '../../helpers/mcp.ts'
import { CONFIG, launcher, sse } from './helpers.ts'

const launch = launcher()
const SERVER = `  mcp:
    use: mcp
  fx:
    use: mcp-client
    config: { serverName: fx, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(FIXTURE)}] }
`

describe("the console pushes an MCP server's transcript as it grows", () => {
  it('a call through the server arrives as a server event, paired with its answer', async () => {
    const { composition, port, token } = await launch(`${CONFIG()}${SERVER}`)
    const events = await sse(port, token)
    try {
      const rt = composition.runtime!
      const result = await rt.call('mcp__fx__echo', { text: 'live transcript' })
      assert.ok(result.ok, JSON.stringify(result.error))
      const row = await events.next(
        'server',
        (s) =>
          s.name === 'fx' &&
          s.transcript.some(
            (e: any) =>
              e.method === 'tools/call' &&
              e.request?.arguments?.text === 'live transcript' &&
              e.response !== undefined,
          ),
      )
      const call = row.transcript.find((e: any) => e.method === 'tools/call')
      assert.equal(call.from, 'yoke')
      assert.ok(call.durationMs >= 0)
    } finally {
      events.close()
    }
  })
})
