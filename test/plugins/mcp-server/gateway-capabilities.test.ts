// The gateway's tools/list answers counted as offers, per capability id + version: a composition
// with capabilities and mcp-server listening on 127.0.0.1, real SDK clients of both eras over
// HTTP, and the capabilities service read afterwards. Every answer counts each tool it sent (a
// deferred view: the direct tools and tool_search), and a failing tap on mcpServer.hooks.listed
// costs the client nothing.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpV2,
} from '@modelcontextprotocol/client'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CapabilitiesApi } from '../../../plugins/capabilities/api.ts'
import type { McpServerApi } from '../../../plugins/mcp-server/api.ts'
import { createYoke, type LogRecord, type Yoke } from '../../../src/index.ts'
import { ROOT, tempProject, type Project } from '../../helpers/project.ts'

const TOKEN = 'gateway-capabilities-test-token'
// a tap that fails on every answer, after the others (a tapable sync hook stops at a throw)
const FAILING_TAP = `export default {
  name: 'failing-tap',
  inject: ['mcpServer'],
  apply(ctx) {
    ctx.tap(ctx.mcpServer.hooks.listed, 'failing-tap', () => { throw new Error('the tap fails on purpose') }, { stage: 1000 })
  },
}
`
const CONFIG = {
  plugins: {
    tools: {
      use: `${ROOT}test/fixtures/capabilities/tools.mjs`,
      config: { tools: [{ name: 'alpha' }, { name: 'beta' }, { name: 'gamma' }] },
    },
    'tool-search': { use: 'tool-search', config: { default: 'deferred', pinned: ['alpha'] } },
    capabilities: { use: 'capabilities', config: { audit: false } },
    gateway: {
      use: 'mcp-server',
      config: {
        token: TOKEN,
        http: { port: 0 },
        views: { default: { allow: ['alpha', 'beta', 'gamma'] }, lean: { toolSearch: true } },
      },
    },
    'failing-tap': { use: './failing-tap.mjs' },
  },
}
const headers = { Authorization: `Bearer ${TOKEN}` }
const names = (tools: Array<{ name: string }>) => tools.map((t) => t.name).sort()

describe('the gateway counts what tools/list offers', () => {
  let project: Project
  let yoke: Yoke
  const logs: LogRecord[] = []
  const closers: Array<() => Promise<unknown>> = []
  before(async () => {
    project = tempProject({
      'yoke.config.yaml': JSON.stringify(CONFIG, null, 2),
      'failing-tap.mjs': FAILING_TAP,
    })
    const env = { ...process.env, YOKE_TRUST: '1' } // the project's local plugins run
    yoke = createYoke({ cwd: project.dir, home: project.home, env, onLog: (r) => logs.push(r) })
    const event = await yoke.ready
    assert.deepEqual(event.failed, [], 'every instance applied')
  })
  after(async () => {
    await Promise.all(closers.map((close) => close().catch(() => {})))
    await yoke?.close()
    project?.cleanup()
  })
  const gateway = () => yoke.get('mcpServer') as McpServerApi
  /** each tool's offered count, summed over its rows */
  const offered = () => {
    const counts: Record<string, number> = {}
    for (const row of (yoke.get('capabilities') as CapabilitiesApi).stats())
      counts[row.id] = (counts[row.id] ?? 0) + row.offered
    return counts
  }

  it('counts each tool of a 2025-era session’s two answers, and of a 2026-07-28 client’s in a deferred view', async () => {
    const v1 = new ClientV1({ name: 'v1', version: '1' })
    await v1.connect(new HttpV1(new URL(gateway().urlOf('default')!), { requestInit: { headers } }))
    closers.push(() => v1.close())
    assert.deepEqual(offered(), {}, 'nothing is offered before a tools/list')
    for (let i = 0; i < 2; i++)
      assert.deepEqual(names((await v1.listTools()).tools), ['alpha', 'beta', 'gamma'])
    assert.deepEqual(offered(), { alpha: 2, beta: 2, gamma: 2 })

    const v2 = new ClientV2(
      { name: 'v2', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' as const } } },
    )
    await v2.connect(new HttpV2(new URL(gateway().urlOf('lean')!), { requestInit: { headers } }))
    closers.push(() => v2.close())
    const before = offered()
    for (let i = 0; i < 2; i++)
      assert.deepEqual(names((await v2.listTools()).tools), ['alpha', 'tool_search'])
    const now = offered()
    // the deferred view sent the pinned tool and tool_search, twice; the deferred ones not at all
    assert.equal(now.alpha! - before.alpha!, 2)
    assert.equal(now.tool_search! - (before.tool_search ?? 0), 2)
    assert.equal(now.beta, 2)
    assert.equal(now.gamma, 2)
  })

  it('a tap on mcpServer.hooks.listed that fails is a warning; the client gets its list', () => {
    const warned = logs.filter((r) => r.level === 'warn' && /mcpServer\.listed/.test(r.message))
    assert.ok(
      warned.length >= 4,
      `one warning per answer: ${warned.map((r) => r.message).join('\n')}`,
    )
    assert.match(
      warned[0]!.message,
      /^MCP view default: tools\/list was answered, but tap "failing-tap" on hook mcpServer\.listed threw: the tap fails on purpose/,
    )
  })
})
