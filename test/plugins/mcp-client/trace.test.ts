// The bridge sends the call's W3C trace context (issue 30): a real v2 server in each era and a v1
// server see `_meta.traceparent` (and `tracestate`) of tools/call equal to the call's trace (a
// trace tap's answer, or the caller's), next to the SDK's progressToken; a call with no trace
// sends no trace keys. The server (trace-server.mjs) answers with the `_meta` its handler saw.
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { traceMeta } from '../../../plugins/mcp-client/trace.ts'
import type { TraceContext } from '../../../src/index.ts'
import { mcpHarness, text, type McpHarness } from '../../helpers/mcp.ts'

const SERVER = fileURLToPath(new URL('./trace-server.mjs', import.meta.url))
const SPAN: TraceContext = {
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  tracestate: 'yoke=t61rcWkgMzE',
}
const CALLER: TraceContext = {
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
}

const SERVERS = {
  modern: { args: [SERVER], protocol: '2026-07-28' },
  legacy: { args: [SERVER], protocol: 'legacy' },
  v1: { args: [SERVER, '--v1'], protocol: 'auto' },
} as const

describe('mcp-client: the call’s trace context in tools/call `_meta`', () => {
  let h: McpHarness
  before(async () => {
    h = await mcpHarness()
    for (const [name, { args, protocol }] of Object.entries(SERVERS)) {
      const fiber = await h.add(name, {
        serverName: name,
        command: process.execPath,
        args,
        protocol,
        failOnStartupError: true,
      })
      assert.equal(fiber.state, 'active', String(fiber.error))
    }
    assert.equal(h.status('modern').protocol?.era, 'modern')
    assert.equal(h.status('legacy').protocol?.era, 'legacy')
    assert.equal(h.status('v1').protocol?.era, 'legacy')
  })
  after(() => h.close())

  const seen = async (server: string, options: Parameters<McpHarness['rt']['call']>[2] = {}) => {
    const result = await h.rt.call(`mcp__${server}__meta`, {}, options)
    assert.equal(result.status, 'ok', text(result))
    return JSON.parse(text(result)) as Record<string, unknown> | null
  }

  it('untapped, the caller’s context goes as it is (no tracestate when it has none)', async () => {
    for (const server of Object.keys(SERVERS)) {
      const meta = await seen(server, { trace: CALLER })
      assert.equal(meta?.traceparent, CALLER.traceparent, server)
      assert.equal('tracestate' in (meta ?? {}), false, server)
    }
  })

  it('a call without a trace sends no trace keys, and builds no `_meta` for them', async () => {
    for (const server of Object.keys(SERVERS)) {
      const meta = await seen(server)
      assert.equal(meta?.traceparent, undefined, server)
      assert.equal(meta?.tracestate, undefined, server)
    }
    assert.equal(traceMeta(undefined), undefined)
  })

  it('each server sees the trace tap’s context, merged with the progressToken', async () => {
    const from: Array<TraceContext | undefined> = []
    // tapped last: the tests above run untapped
    h.rt.hooks.trace.tap('tracer', (caller) => (from.push(caller), SPAN))
    for (const server of Object.keys(SERVERS)) {
      const meta = await seen(server, { trace: CALLER, onProgress: () => {} })
      assert.equal(meta?.traceparent, SPAN.traceparent, server)
      assert.equal(meta?.tracestate, SPAN.tracestate, server)
      assert.notEqual(meta?.progressToken, undefined, `${server}: the SDK's own key is kept`)
    }
    assert.deepEqual(from, [CALLER, CALLER, CALLER])
  })
})
