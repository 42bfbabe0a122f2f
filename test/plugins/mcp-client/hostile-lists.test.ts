// mcp-client against tool lists built to break a parser, each a real process writing raw JSON-RPC
// (test/fixtures/mcp/raw.mjs): a tool whose inputSchema nests 10 MB deep (a recursive parse of it
// overflows the stack) and a name listed twice. A bad tool costs that tool, never the server.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { mcpHarness, raw, text, type McpHarness } from '../../helpers/mcp.ts'

describe('tool lists that would break a parser', () => {
  let h: McpHarness
  before(async () => {
    h = await mcpHarness()
  })
  after(() => h.close())
  const tools = (server: string) =>
    h.rt
      .list()
      .map((t) => t.name)
      .filter((n) => n.startsWith(`mcp__${server}__`))
      .sort()

  it('a tool whose inputSchema nests 10 MB deep is skipped by name; the others register and run', async () => {
    // 5,000,000 nested arrays: reading them with a recursive parse overflows the stack
    await h.add('deep', raw('deep', 'deep', { startupMs: 300_000 }))
    const status = h.status('deep')
    assert.equal(status.state, 'connected', status.lastError)
    assert.deepEqual(tools('deep'), ['mcp__deep__echo', 'mcp__deep__nest', 'mcp__deep__pid'])
    assert.match(status.problems.join('\n'), /skipped tool "deep": .*nested deeper than \d+ levels/)
    assert.match(
      status.problems.join('\n'),
      /skipped tool #4 of tools\/list \(name an array\): .*nested deeper than \d+ levels/,
    )
    assert.ok(
      h.logs.some(
        (l) => l.level === 'warn' && /MCP server "deep": skipped tool "deep"/.test(l.message),
      ),
    )
    assert.equal(text(await h.rt.call('mcp__deep__echo', { text: 'alive' })), 'alive')
    // an answer as deep fails that call, named; the connection and the process stay
    const pid = text(await h.rt.call('mcp__deep__pid', {}))
    const nested = await h.rt.call('mcp__deep__nest', {})
    assert.notEqual(nested.status, 'ok')
    assert.match(nested.error!.message, /nests deeper than 256 levels/)
    // the notification before it was dropped, with a warning
    assert.ok(
      h.logs.some(
        (l) =>
          l.level === 'warn' &&
          /"deep": the server sent a notifications\/message that nests deeper than 256/.test(
            l.message,
          ),
      ),
    )
    assert.equal(h.status('deep').state, 'connected')
    assert.equal(text(await h.rt.call('mcp__deep__pid', {})), pid)
    await h.remove('deep')
  })

  it('an initialize answer nested 100,000 deep (capabilities.experimental) fails that connection, named; the process lives', async () => {
    // the SDK's schema for capabilities recurses: read, it would overflow the stack outside any try
    await h.add(
      'caps',
      raw('caps', 'deepcaps', {
        protocol: 'legacy',
        reconnect: { initialDelayMs: 60_000, maxDelayMs: 60_000 },
      }),
    )
    const status = h.status('caps')
    assert.equal(status.state, 'reconnecting')
    assert.match(status.lastError!, /nests deeper than 256 levels/)
    await h.remove('caps')
  })

  it('a name listed twice keeps the first definition, with a warning naming the server and the name', async () => {
    await h.add('twice', raw('twice', 'twice'))
    const status = h.status('twice')
    assert.equal(status.state, 'connected')
    assert.deepEqual(tools('twice'), ['mcp__twice__echo', 'mcp__twice__pid'])
    const echo = h.rt.list().find((t) => t.name === 'mcp__twice__echo')!
    assert.equal(echo.description, 'echoes text')
    assert.match(status.problems.join('\n'), /tools\/list names "echo" twice; the first is kept/)
    assert.ok(
      h.logs.some(
        (l) => l.level === 'warn' && /MCP server "twice": .*"echo" twice/.test(l.message),
      ),
    )
    assert.equal(text(await h.rt.call('mcp__twice__echo', { text: 'first' })), 'first')
    await h.remove('twice')
  })
})
