// Parentage across the gateway and the bridge with real SDK clients: a v2 SDK client calls yoke's
// MCP endpoint with `_meta.traceparent`; the call's execute_tool span continues the client's trace
// (its parent the client's span), carries the MCP attributes (one span, not two), and the upstream
// server (a real v2 SDK server over stdio, behind mcp-client) sees that span as its parent in its
// own `_meta`. The server's connect is a span of its own.
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpV2,
} from '@modelcontextprotocol/client'
import telemetryPlugin from '../../../plugins/telemetry/index.ts'
import type { SpanRecord, TelemetryApi } from '../../../plugins/telemetry/api.ts'
import { toPlugin, validateConfig, type Plugin } from '../../../src/index.ts'
import { gatewayOver, mcpHarness, type McpHarness } from '../../helpers/mcp.ts'
import { tempProject, type Project } from '../../helpers/project.ts'

const UPSTREAM = fileURLToPath(new URL('../mcp-client/trace-server.mjs', import.meta.url))
const TOKEN = 'test-token-telemetry-0123456789abcdef'
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CLIENT_SPAN = '00f067aa0ba902b7'

describe('telemetry across the gateway and the bridge', () => {
  let h: McpHarness
  let project: Project
  let telemetry: TelemetryApi
  let client: ClientV2
  let stop: () => void
  before(async () => {
    project = tempProject()
    h = await mcpHarness(project.dir)
    const plugin = toPlugin(telemetryPlugin) as Plugin
    const fiber = h.kernel.spawn(plugin, (validateConfig(plugin, {}) as { value: unknown }).value, {
      key: 'telemetry',
    })
    await h.kernel.whenSettled(fiber, 10_000)
    telemetry = h.kernel.services.get('telemetry')!.value as TelemetryApi
    stop = telemetry.record()
    const url = await gatewayOver(h, UPSTREAM, TOKEN)
    client = new ClientV2({ name: 'telemetry-test', version: '1' })
    await client.connect(
      new HttpV2(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }),
    )
  })
  after(async () => {
    stop?.()
    await client?.close().catch(() => {})
    await h?.close()
    project?.cleanup()
  })

  it('one execute_tool span continues the client’s trace, has the MCP attributes, and is the upstream call’s parent', async () => {
    const result = (await client.callTool({
      name: 'mcp__up__meta',
      arguments: {},
      _meta: { traceparent: `00-${TRACE}-${CLIENT_SPAN}-01` },
    } as never)) as { content: Array<{ text: string }> }
    const upstream = JSON.parse(result.content[0]!.text) as { traceparent: string }
    const spans = telemetry.recent().filter((s) => s.name === 'execute_tool mcp__up__meta')
    assert.equal(spans.length, 1, 'one span per call: the MCP attributes are on it')
    const [span] = spans as [SpanRecord]
    assert.equal(span.traceId, TRACE)
    assert.equal(span.parentSpanId, CLIENT_SPAN)
    assert.equal(upstream.traceparent, `00-${TRACE}-${span.spanId}-01`)
    assert.equal(span.attributes['mcp.method.name'], 'tools/call')
    assert.equal(span.attributes['yoke.mcp.server'], 'up')
    assert.equal(span.attributes['gen_ai.tool.type'], 'extension')
    assert.match(String(span.attributes['mcp.protocol.version']), /^\d{4}-\d{2}-\d{2}$/)
    assert.equal(span.attributes['network.transport'], 'pipe')
  })

  it('the upstream server’s connect is a span that ends ok when its instance is active', () => {
    const connect = telemetry.recent().find((s) => s.name === 'mcp.connect up')
    assert.ok(
      connect,
      telemetry
        .recent()
        .map((s) => s.name)
        .join(', '),
    )
    assert.equal(connect.status, 'ok')
    assert.equal(connect.kind, 'client')
    assert.equal(connect.attributes['yoke.instance'], 'up')
    assert.match(String(connect.attributes['mcp.protocol.version']), /^\d{4}-\d{2}-\d{2}$/)
  })
})
