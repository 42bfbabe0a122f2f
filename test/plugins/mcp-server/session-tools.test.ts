// A 2025-era session's tools/list shows what its scope sees beyond the view: the tools of a dynamic
// plugin it defined and ran (approved through the client's elicitation) are listed to it, and to
// no other session of the view, which cannot call them either.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import mcpServer, { type McpServerApi } from '../../../plugins/mcp-server/index.ts'
import policy from '../../../plugins/policy/index.ts'
import repository from '../../../plugins/repository/index.ts'
import { spawnActive } from '../../helpers/kernel.ts'
import { mcpHarness, type McpHarness } from '../../helpers/mcp.ts'

const TOKEN = 'session-tools-token-0123456789abcdef'
const SOURCE = `export default {
  name: 'weather',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({ name: 'session_weather', description: 'The weather', inputSchema: { type: 'object', properties: {} }, execute: () => 'sunny' })
  },
}
`

async function session(url: string) {
  const client = new V1Client(
    { name: 'session-tools', version: '1' },
    { capabilities: { elicitation: {} } },
  )
  client.setRequestHandler(ElicitRequestSchema, async () => ({
    action: 'accept',
    content: { decision: 'allow-once' },
  }))
  await client.connect(
    new V1Transport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    }),
  )
  return client
}

const names = async (client: V1Client) => (await client.listTools()).tools.map((t) => t.name)

describe("a session's own tools", () => {
  let h: McpHarness
  let url: string
  before(async () => {
    h = await mcpHarness()
    await spawnActive(h.kernel, policy, {}, 'policy')
    await spawnActive(h.kernel, repository, {}, 'repository')
    await spawnActive(h.kernel, mcpServer, { token: TOKEN }, 'gateway')
    url = (h.kernel.services.get('mcpServer')!.value as McpServerApi).url!
  })
  after(() => h.close())

  it("lists a dynamic plugin's tools to the session that runs it, and to no other", async () => {
    const mine = await session(url)
    const theirs = await session(url)
    try {
      await mine.callTool({
        name: 'repository_define',
        arguments: { name: 'weather', purpose: 'the weather', source: SOURCE },
      })
      const ran = await mine.callTool({ name: 'repository_run', arguments: { plugin: 'weather' } })
      assert.match(JSON.stringify(ran.content), /repo:weather@1 is running/)
      assert.ok((await names(mine)).includes('session_weather'), 'listed to its session')
      assert.ok(!(await names(theirs)).includes('session_weather'), 'not to another session')
      assert.deepEqual((await mine.callTool({ name: 'session_weather', arguments: {} })).content, [
        { type: 'text', text: 'sunny' },
      ])
      const refused = await theirs.callTool({ name: 'session_weather', arguments: {} })
      assert.equal(refused.isError, true)
    } finally {
      await Promise.all([mine.close(), theirs.close()])
    }
  })
})
