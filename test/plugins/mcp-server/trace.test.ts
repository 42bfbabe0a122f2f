// The gateway continues a client's trace (issue 30): real SDK clients (v1, v2 in the 2025 era, v2
// pinned to 2026-07-28) call yoke's MCP endpoint over Streamable HTTP with `_meta.traceparent`
// (and `tracestate`) on tools/call. A native tool's ctx.call.trace is that context (untapped),
// the trace hook's `from` is that context (tapped), and through mcp-client an upstream v2 server
// sees it in its own `_meta`. A malformed one is ignored (the call runs, untraced) and said at
// debug. The upstream server is test/plugins/mcp-client/trace-server.mjs.
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpV2,
} from '@modelcontextprotocol/client'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { traceOf, traceparentProblem } from '../../../plugins/mcp-server/trace.ts'
import type { TraceContext } from '../../../src/index.ts'
import { gatewayOver, mcpHarness, type McpHarness } from '../../helpers/mcp.ts'
import { tempProject, type Project } from '../../helpers/project.ts'

const UPSTREAM = fileURLToPath(new URL('../mcp-client/trace-server.mjs', import.meta.url))
const TOKEN = 'test-token-trace-0123456789abcdef'
const CLIENT: TraceContext = {
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  tracestate: 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7',
}
const MALFORMED = [
  '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01', // uppercase
  '00-00000000000000000000000000000000-00f067aa0ba902b7-01', // trace id all zeros
  '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', // parent id all zeros
  'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', // version ff
  '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7', // three fields
  '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra', // version 00 with more
]

type Caller = (name: string, meta?: Record<string, unknown>) => Promise<string>
const textOf = (r: any) => (r.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('')

describe('mcp-server: a client’s W3C trace context continues through the gateway', () => {
  let h: McpHarness
  let project: Project
  let url: string
  const clients: Record<string, Caller> = {}
  const closers: Array<() => Promise<unknown>> = []
  before(async () => {
    project = tempProject()
    h = await mcpHarness(project.dir)
    h.rt.register({
      name: 'seen',
      risk: 'low',
      execute: (_args, call) => JSON.stringify(call.call.trace ?? null),
    })
    url = await gatewayOver(h, UPSTREAM, TOKEN)
    const headers = { Authorization: `Bearer ${TOKEN}` }
    const v1 = new ClientV1({ name: 'v1', version: '1' })
    await v1.connect(new HttpV1(new URL(url), { requestInit: { headers } }))
    clients.v1 = async (name, _meta) => textOf(await v1.callTool({ name, arguments: {}, _meta }))
    for (const [era, options] of [
      ['v2 legacy', {}],
      ['v2 modern', { versionNegotiation: { mode: { pin: '2026-07-28' as const } } }],
    ] as const) {
      const v2 = new ClientV2({ name: era, version: '1' }, options)
      await v2.connect(new HttpV2(new URL(url), { requestInit: { headers } }))
      closers.push(() => v2.close())
      clients[era] = async (name, _meta) =>
        textOf(await v2.callTool({ name, arguments: {}, ...(_meta && { _meta }) } as never))
    }
    closers.push(() => v1.close())
  })
  after(async () => {
    await Promise.all(closers.map((close) => close().catch(() => {})))
    await h.close()
    project.cleanup()
  })

  it('a native tool runs under the client’s context; without one, under none', async () => {
    for (const [who, call] of Object.entries(clients)) {
      assert.deepEqual(JSON.parse(await call('seen', { ...CLIENT })), CLIENT, who)
      const bare = { traceparent: CLIENT.traceparent }
      assert.deepEqual(JSON.parse(await call('seen', bare)), bare, who)
      assert.equal(JSON.parse(await call('seen')), null, who)
    }
  })

  it('through mcp-client, the upstream server sees the client’s context in its `_meta`', async () => {
    for (const [who, call] of Object.entries(clients)) {
      const meta = JSON.parse(await call('mcp__up__meta', { ...CLIENT }))
      assert.equal(meta.traceparent, CLIENT.traceparent, who)
      assert.equal(meta.tracestate, CLIENT.tracestate, who)
    }
  })

  it('a malformed traceparent is ignored, counted and said at debug; the call still runs', async () => {
    const before = h.logs.length
    for (const [who, call] of Object.entries(clients))
      for (const traceparent of MALFORMED)
        assert.equal(
          JSON.parse(await call('seen', { traceparent })),
          null,
          `${who}: ${traceparent}`,
        )
    const said = h.logs
      .slice(before)
      .filter((r) => r.level === 'debug' && /malformed trace context/.test(r.message))
    assert.equal(said.length, MALFORMED.length * Object.keys(clients).length)
    assert.match(said.at(-1)!.message, /\(18 so far\)/)
    // a bad tracestate alone is dropped; the traceparent is kept
    const kept = { traceparent: CLIENT.traceparent, tracestate: 'bad\nstate' }
    assert.deepEqual(JSON.parse(await clients.v1!('seen', kept)), {
      traceparent: CLIENT.traceparent,
    })
  })

  it('tapped, the trace hook’s `from` is the client’s context and the body runs under its answer', async () => {
    const span: TraceContext = {
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01',
    }
    const from: Array<TraceContext | undefined> = []
    h.rt.hooks.trace.tap('tracer', (caller) => (from.push(caller), span)) // last: the tests above run untapped
    for (const [who, call] of Object.entries(clients)) {
      assert.deepEqual(JSON.parse(await call('seen', { ...CLIENT })), span, who)
      assert.equal(
        JSON.parse(await call('mcp__up__meta', { ...CLIENT })).traceparent,
        span.traceparent,
        who,
      )
    }
    assert.deepEqual(from, Array(6).fill(CLIENT))
  })

  it('the W3C rules, one by one', () => {
    assert.equal(traceparentProblem(CLIENT.traceparent), undefined)
    assert.equal(
      traceparentProblem('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more'),
      undefined,
    )
    for (const bad of [...MALFORMED, 42, '']) assert.ok(traceparentProblem(bad), String(bad))
    const why: string[] = []
    const told = { malformedTrace: (w: string) => void why.push(w) }
    assert.equal(traceOf(undefined, told), undefined)
    assert.equal(traceOf({ progressToken: 1 }, told), undefined)
    assert.deepEqual(traceOf({ traceparent: 'nope', tracestate: 'a=1' }, told), undefined)
    assert.equal(why.length, 1)
    why.length = 0
    assert.deepEqual(why, [])
  })
})
