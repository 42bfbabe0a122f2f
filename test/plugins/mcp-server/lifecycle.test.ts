// mcp-server behind a load balancer: /healthz and /readyz without the token, the replica id in
// every answer, and the drain — /readyz turns 503, new requests get 503 with Retry-After, a call in
// flight still gets its result, and one that never ends is cut off after the bound. Then
// `yoke serve --http` on SIGTERM with a call in flight: it drains, the call's result arrives, and it
// exits 0 saying what it did; its log lines name the replica.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Client } from '@modelcontextprotocol/client'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import mcpServer, { type McpServerApi } from '../../../plugins/mcp-server/index.ts'
import { replicaId } from '../../../plugins/mcp-server/lifecycle.ts'
import { toPlugin, validateConfig, type Plugin } from '../../../src/index.ts'
import { mcpHarness, type McpHarness } from '../../helpers/mcp.ts'
import { tempProject, type Project } from '../../helpers/project.ts'
import { serveHttp } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'

const TOKEN = 'lifecycle-token-0123456789abcdef'
const auth = { Authorization: `Bearer ${TOKEN}` }

/** A gateway over one native tool, `hold`, whose calls wait until the test lets them go. */
async function gateway(h: McpHarness) {
  const held: Array<() => void> = []
  h.kernel.spawn(
    toPlugin({
      name: 'holder',
      inject: ['runtime'],
      apply: (ctx: any) =>
        void ctx.runtime.register({
          name: 'hold',
          concurrency: 'safe',
          risk: 'low',
          inputSchema: { type: 'object' },
          execute: () => new Promise<string>((resolve) => held.push(() => resolve('released'))),
        }),
    }) as Plugin,
    {},
    { key: 'holder' },
  )
  const plugin = toPlugin(mcpServer) as Plugin
  const checked = validateConfig(plugin, { token: TOKEN })
  assert.ok('value' in checked, JSON.stringify(checked))
  const fiber = h.kernel.spawn(plugin, checked.value, { key: 'gateway' })
  await h.kernel.whenSettled(fiber, 20_000)
  assert.equal(fiber.state, 'active', String(fiber.error))
  const service = h.kernel.services.get('mcpServer')!.value as McpServerApi
  const base = new URL(service.url!).origin
  return { service, held, base }
}

async function client(url: string) {
  const c = new Client(
    { name: 'lifecycle', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  )
  await c.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }),
  )
  return c
}

describe('health, readiness and the drain', () => {
  let h: McpHarness
  let g: Awaited<ReturnType<typeof gateway>>
  before(async () => {
    h = await mcpHarness()
    g = await gateway(h)
  })
  after(() => h.close())

  it('answers /healthz and /readyz without the token, with the replica id', async () => {
    const health = await fetch(`${g.base}/healthz`)
    assert.equal(health.status, 200)
    assert.deepEqual(await health.json(), { status: 'ok', replica: g.service.replica })
    assert.equal(health.headers.get('yoke-replica'), g.service.replica)
    const ready = await fetch(`${g.base}/readyz`)
    assert.equal(ready.status, 200)
    assert.deepEqual(await ready.json(), { ready: true, replica: g.service.replica })
    const head = await fetch(`${g.base}/readyz`, { method: 'HEAD' })
    assert.equal(head.status, 200)
    const post = await fetch(`${g.base}/healthz`, { method: 'POST' })
    assert.equal(post.status, 405)
    assert.equal(post.headers.get('allow'), 'GET, HEAD')
    // an MCP answer carries the replica too, and the token is still required there
    const refused = await fetch(g.service.url!, { method: 'POST', body: '{}' })
    assert.equal(refused.status, 401)
    assert.equal(refused.headers.get('yoke-replica'), g.service.replica)
  })

  it('a drain fails readiness, refuses new requests with 503 and Retry-After, and lets a call in flight finish', async () => {
    const c = await client(g.service.url!)
    const inFlight = c.callTool({ name: 'hold', arguments: {} })
    await until('the call to reach the tool', () => g.held.length === 1)
    const drained = g.service.drain(60_000)
    const ready = await fetch(`${g.base}/readyz`)
    assert.equal(ready.status, 503)
    assert.deepEqual(await ready.json(), {
      ready: false,
      replica: g.service.replica,
      reason: 'draining',
    })
    assert.equal((await fetch(`${g.base}/healthz`)).status, 200, 'still alive while it drains')
    const refused = await fetch(g.service.url!, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
    assert.equal(refused.status, 503)
    assert.equal(refused.headers.get('retry-after'), '1')
    const body = (await refused.json()) as { error: { message: string } }
    assert.match(body.error.message, /is shutting down; retry, and another replica answers/)
    g.held.shift()!()
    const result = (await inFlight) as { content: Array<{ text: string }> }
    assert.equal(result.content[0]!.text, 'released')
    const report = await drained
    assert.equal(report.cut, 0)
    assert.ok(report.finished >= 1, JSON.stringify(report))
    await c.close().catch(() => {})
  })
})

describe('a drain with a call that never ends', () => {
  it('stops waiting after the bound and says it cut the call off', async () => {
    const h = await mcpHarness()
    let never: Promise<unknown> | undefined
    try {
      const g = await gateway(h)
      const c = await client(g.service.url!)
      never = c.callTool({ name: 'hold', arguments: {} }).catch((err: unknown) => err)
      await until('the call to reach the tool', () => g.held.length === 1)
      const report = await g.service.drain(50)
      assert.equal(report.cut, 1)
      assert.equal(report.finished, 0)
    } finally {
      await h.close()
    }
    assert.ok(await never, 'the cut-off call ends (with an error) when the endpoint closes')
  })
})

describe('the replica id', () => {
  it('is YOKE_REPLICA_ID when set, else the host and process id', () => {
    assert.equal(replicaId({ YOKE_REPLICA_ID: ' replica-a ' }), 'replica-a')
    assert.match(replicaId({}), new RegExp(`-${process.pid}$`))
  })
})

const SLOW = `export default {
  name: 'slow',
  inject: ['runtime'],
  apply(ctx) {
    ctx.logger.info('slow is ready')
    ctx.runtime.register({
      name: 'slow', concurrency: 'safe', risk: 'low', inputSchema: { type: 'object' },
      execute: async () => {
        (await import('node:fs')).writeFileSync(${JSON.stringify('STARTED')}, '')
        await new Promise((r) => setTimeout(r, 400))
        return 'slow done'
      },
    })
  },
}
`

describe('yoke serve --http on SIGTERM', () => {
  let project: Project
  after(() => project?.cleanup())

  it('drains: the call in flight gets its result, then it exits 0 and says what it did', async () => {
    project = tempProject({
      'slow.mjs': SLOW,
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n  slow: { use: ./slow.mjs }\n  gateway: { use: mcp-server }\n',
    })
    const served = await serveHttp(project, 30_000, { YOKE_REPLICA_ID: 'replica-a' })
    const { child } = served
    try {
      assert.match(served.stderr(), /replica replica-a: GET \/healthz, \/readyz/)
      assert.match(
        served.stderr(),
        /^\[replica-a\] info slow: slow is ready$/m,
        'log lines name the replica',
      )
      const token = readFileSync(join(project.home, 'mcp-token'), 'utf8').trim()
      const c = new Client(
        { name: 'sigterm', version: '1' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      )
      await c.connect(
        new StreamableHTTPClientTransport(new URL(served.info.url), {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
        }),
      )
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
      const call = c.callTool({ name: 'slow', arguments: {} })
      await until('the call to start', () => existsSync(join(project.dir, 'STARTED')))
      child.kill('SIGTERM')
      const result = (await call) as { content: Array<{ text: string }> }
      assert.equal(result.content[0]!.text, 'slow done')
      assert.equal(await exited, 0, served.stderr())
      assert.match(served.stderr(), /yoke serve: SIGTERM: draining/)
      assert.match(served.stderr(), /yoke serve: drained in \d+ ms: 1 finished\n/)
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL')
    }
  })
})
