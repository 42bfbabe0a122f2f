// The gateway's deferred mode, with real SDK clients of both eras over HTTP: a view with
// `toolSearch: true` lists tool_search and the direct tools; a 2025-era session that searches gets
// the found tools listed from then on, told by tools/list_changed; a stateless 2026-07-28 client
// gets the found tools' names and schemas in the answer and calls them by name. Other views never
// list tool_search.
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpV2,
  type CallToolResult as ResultV2,
} from '@modelcontextprotocol/client'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { tempProject, type Project } from '../../helpers/project.ts'
import { serveHttp } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'

const TOOLS = `export default {
  name: 'math',
  inject: ['runtime'],
  apply(ctx) {
    const pair = { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] }
    ctx.runtime.register({ name: 'add', description: 'Add two numbers', inputSchema: pair, execute: ({ a, b }) => String(a + b) })
    ctx.runtime.register({ name: 'multiply', description: 'Multiply two numbers: their product', inputSchema: pair, execute: ({ a, b }) => String(a * b) })
    ctx.runtime.register({ name: 'reverse', description: 'Reverse the letters of a word', inputSchema: { type: 'object', properties: { word: { type: 'string' } } }, execute: ({ word }) => [...word].reverse().join('') })
  },
}
`
const CONFIG = `preset: base
plugins:
  math:
    use: ./tools.mjs
  tool-search:
    use: tool-search
    config: { default: deferred, pinned: [add] }
  gateway:
    use: mcp-server
    config: { views: { lean: { toolSearch: true, allow: [add, multiply, reverse, tool_search] } } }
`
const names = (tools: Array<{ name: string }>) => tools.map((t) => t.name).sort()
const textOf = (r: unknown) =>
  ((r as ResultV2).content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('\n')

describe('the gateway in deferred mode', () => {
  let project: Project
  let child: ChildProcess
  let views: Record<string, string>
  let url: string
  const closers: Array<() => Promise<unknown>> = []
  before(async () => {
    project = tempProject({ 'tools.mjs': TOOLS, 'yoke.config.yaml': CONFIG })
    const served = await serveHttp(project)
    child = served.child
    views = served.info.views
    url = served.info.url
  })
  after(async () => {
    await Promise.all(closers.map((close) => close().catch(() => {})))
    if (child.exitCode === null) child.kill('SIGKILL')
    project.cleanup()
  })
  const auth = () => ({
    Authorization: `Bearer ${readFileSync(join(project.home, 'mcp-token'), 'utf8').trim()}`,
  })

  it('a 2025-era session lists tool_search and the pinned tool, then what it found, told by list_changed', async () => {
    let changed = 0
    const client = new ClientV1({ name: 'v1', version: '1' })
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++)
    await client.connect(new HttpV1(new URL(views.lean!), { requestInit: { headers: auth() } }))
    closers.push(() => client.close())
    assert.deepEqual(names((await client.listTools()).tools), ['add', 'tool_search'])
    const found = await client.callTool({
      name: 'tool_search',
      arguments: { query: 'product of two numbers' },
    })
    assert.match(textOf(found), /- multiply \(native, low risk;/)
    await until('tools/list_changed', () => changed > 0, { ms: 5000, every: 20 })
    assert.deepEqual(names((await client.listTools()).tools), ['add', 'multiply', 'tool_search'])
    assert.equal(
      textOf(await client.callTool({ name: 'multiply', arguments: { a: 6, b: 7 } })),
      '42',
    )
    // another session has found nothing
    const other = new ClientV1({ name: 'v1-other', version: '1' })
    await other.connect(new HttpV1(new URL(views.lean!), { requestInit: { headers: auth() } }))
    closers.push(() => other.close())
    assert.deepEqual(names((await other.listTools()).tools), ['add', 'tool_search'])
  })

  it('a stateless 2026-07-28 client gets the found tools with their schemas and calls them by name', async () => {
    const client = new ClientV2(
      { name: 'v2', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' as const } } },
    )
    await client.connect(new HttpV2(new URL(views.lean!), { requestInit: { headers: auth() } }))
    closers.push(() => client.close())
    assert.deepEqual(names((await client.listTools()).tools), ['add', 'tool_search'])
    const found = (await client.callTool({
      name: 'tool_search',
      arguments: { query: 'reverse a word' },
    })) as ResultV2
    const tools = (found.structuredContent as { tools: any[] }).tools
    assert.equal(tools[0].name, 'reverse')
    assert.deepEqual(tools[0].inputSchema.properties, { word: { type: 'string' } })
    assert.equal(
      textOf(await client.callTool({ name: 'reverse', arguments: { word: 'yoke' } })),
      'ekoy',
    )
    const none = (await client.callTool({
      name: 'tool_search',
      arguments: { query: 'book a flight to Paris' },
    })) as ResultV2
    assert.match(textOf(none), /^No tool matches "book a flight to Paris"/)
  })

  it('a view without deferred mode lists every tool and no tool_search', async () => {
    const client = new ClientV1({ name: 'v1-all', version: '1' })
    await client.connect(new HttpV1(new URL(url), { requestInit: { headers: auth() } }))
    closers.push(() => client.close())
    const listed = names((await client.listTools()).tools)
    for (const name of ['add', 'multiply', 'reverse']) assert.ok(listed.includes(name), name)
    assert.ok(!listed.includes('tool_search'))
  })
})
