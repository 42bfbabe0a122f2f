// Issue 27, Deliver 2: on the gateway, one session's unanswered approval and one session's
// exclusive call leave another session's calls running — exclusive means exclusive within a
// session's scope, and a call that waits for a person holds no gate. Real HTTP, the SDK's client.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import mcpServer, { type McpServerApi } from '../../../plugins/mcp-server/index.ts'
import { toPlugin, validateConfig, type Plugin } from '../../../src/index.ts'
import { mcpHarness, type McpHarness } from '../../helpers/mcp.ts'
import { tempProject, type Project } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const TOKEN = 'test-token-0123456789abcdef'

describe('gateway sessions do not stall each other', () => {
  let h: McpHarness
  let project: Project
  let url: string
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const inside = new Set<string>()
  let asked = 0
  const clients: Client[] = []

  before(async () => {
    project = tempProject()
    h = await mcpHarness(project.dir)
    const spawn = async (plugin: unknown, cfg: unknown, key: string) => {
      const p = toPlugin(plugin) as Plugin
      const checked = validateConfig(p, cfg)
      assert.ok('value' in checked, JSON.stringify(checked))
      const fiber = h.kernel.spawn(p, checked.value, { key })
      await h.kernel.whenSettled(fiber, 20_000)
      assert.equal(fiber.state, 'active', String(fiber.error?.stack ?? fiber.error))
    }
    await spawn(
      {
        name: 'tools',
        inject: ['runtime'],
        apply: (ctx: any) => {
          ctx.runtime.register({ name: 'ping', concurrency: 'safe', execute: () => 'pong' })
          // exclusive and slow: it holds its session's scope until released
          ctx.runtime.register({
            name: 'hold',
            concurrency: 'exclusive',
            execute: async (_args: unknown, c: any) => {
              inside.add(c.call.scope)
              await released
              return 'released'
            },
          })
          ctx.runtime.register({ name: 'risky', concurrency: 'exclusive', execute: () => 'ran' })
          ctx.tap(ctx.runtime.hooks.preExecute, 'ask-for-risky', async (d: any, call: any) =>
            call.name === 'risky' ? { kind: 'ask', reason: 'it is risky' } : d,
          )
        },
      },
      {},
      'tools',
    )
    await spawn(mcpServer, { token: TOKEN }, 'gateway')
    url = (h.kernel.services.get('mcpServer')!.value as McpServerApi).url!
  })
  after(async () => {
    release()
    await Promise.all(clients.map((c) => c.close().catch(() => {})))
    await h.close()
    project.cleanup()
  })

  async function connect(name: string, onElicit?: () => Promise<never>) {
    const client = new Client(
      { name, version: '1' },
      { capabilities: onElicit ? { elicitation: {} } : {} },
    )
    if (onElicit) client.setRequestHandler(ElicitRequestSchema, onElicit)
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
      }),
    )
    clients.push(client)
    return client
  }
  const text = (r: unknown) => (r as CallToolResult).content.map((c: any) => c.text).join('')

  it("one session's unanswered approval and running exclusive call leave another session's calls running", async () => {
    // a person who never answers, behind session A
    const a = await connect('a', () => {
      asked++
      return new Promise<never>(() => {})
    })
    const b = await connect('b')
    const aRisky = a.callTool({ name: 'risky', arguments: {} }).catch(() => undefined)
    await until('A was asked', () => asked === 1)
    const aHold = a.callTool({ name: 'hold', arguments: {} })
    await until("A's exclusive call runs", () => inside.size === 1)
    // B: a safe call and an exclusive call of its own both run meanwhile
    assert.equal(text(await b.callTool({ name: 'ping', arguments: {} })), 'pong')
    const bHold = b.callTool({ name: 'hold', arguments: {} })
    await until("B's exclusive call runs beside A's", () => inside.size === 2)
    release()
    assert.equal(text(await aHold), 'released')
    assert.equal(text(await bHold), 'released')
    void aRisky
  })
})
