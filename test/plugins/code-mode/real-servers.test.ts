// run_code over three real MCP servers from npm (server-everything, server-memory,
// server-filesystem) through yoke's mcp-client: the declarations their schemas make are valid
// TypeScript, a program chains calls across the three, and the gateway serves run_code to a real
// SDK client per view: a view that admits only some servers lets its programs call only those.
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import ts from 'typescript'
import codeMode from '../../../plugins/code-mode/index.ts'
import type { McpServerApi } from '../../../plugins/mcp-server/api.ts'
import mcpServer from '../../../plugins/mcp-server/index.ts'
import { spawnActive } from '../../helpers/kernel.ts'
import { everything, FILESYSTEM, MEMORY, mcpHarness, type McpHarness } from '../../helpers/mcp.ts'
import { removeTree } from '../../helpers/temp.ts'

const TOKEN = 'code-mode-real-servers-token'
let h: McpHarness
let dir: string

const spawn = (plugin: unknown, config: unknown, key: string) =>
  spawnActive(h.kernel, plugin, config, key)

const result = (r: { structured?: unknown }) => (r.structured as { result?: unknown })?.result

describe('run_code over real MCP servers', () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'yoke-code-mode-'))
    writeFileSync(join(dir, 'notes.txt'), 'alpha\nbeta\ngamma\n')
    h = await mcpHarness(dir)
    await h.add('everything', everything())
    await h.add('memory', {
      serverName: 'memory',
      command: process.execPath,
      args: [MEMORY],
      env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') },
    })
    await h.add('fs', { serverName: 'fs', command: process.execPath, args: [FILESYSTEM, dir] })
    await h.until('the three servers to list their tools', () =>
      ['mcp__everything__echo', 'mcp__memory__read_graph', 'mcp__fs__read_text_file'].every(
        (name) => h.rt.list().some((t) => t.name === name),
      ),
    )
    await spawn(codeMode, {}, 'code')
  })
  after(async () => {
    await h?.close()
    if (dir) await removeTree(dir)
  })

  it('declares their tools as TypeScript that parses, typed from their schemas', async () => {
    const r = await h.rt.call('run_code', { code: 'return await api()' })
    const api = result(r) as string
    const file = ts.createSourceFile('api.d.ts', api, ts.ScriptTarget.ES2022, true)
    const diagnostics = (file as unknown as { parseDiagnostics: ts.Diagnostic[] }).parseDiagnostics
    assert.deepEqual(
      diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')),
      [],
    )
    assert.match(api, /everything: \{/)
    assert.match(api, /"get-sum"\(args: \{/)
    assert.match(api, /memory: \{[\s\S]*create_entities\(args: \{\n\s+entities: Array<\{/)
    assert.match(api, /fs: \{[\s\S]*read_text_file\(args: \{/)
  })

  it('a program chains calls across the three servers and returns only its summary', async () => {
    const r = await h.rt.call('run_code', {
      code: `
        const listing = await tools.fs.list_directory({ path: ${JSON.stringify(dir)} })
        const file = await tools.fs.read_text_file({ path: ${JSON.stringify(join(dir, 'notes.txt'))} })
        const lines = (typeof file === 'string' ? file : file.content).trim().split('\\n')
        await tools.memory.create_entities({
          entities: lines.map((l) => ({ name: l, entityType: 'word', observations: ['from notes.txt'] })),
        })
        const graph = await tools.memory.read_graph({})
        const sum = await tools.everything['get-sum']({ a: lines.length, b: graph.entities.length })
        return { listed: JSON.stringify(listing).includes('notes.txt'), sum }
      `,
    })
    assert.equal(r.status, 'ok', JSON.stringify(r.content))
    const { listed, sum } = result(r) as { listed: boolean; sum: unknown }
    assert.equal(listed, true)
    assert.match(JSON.stringify(sum), /6/)
    assert.match(
      (r.content[0] as { text: string }).text,
      /tool calls \(5\): mcp__fs__list_directory ok, mcp__fs__read_text_file ok, mcp__memory__create_entities ok, mcp__memory__read_graph ok, mcp__everything__get-sum ok/,
    )
  })

  it("the gateway serves run_code to a real SDK client; a view's programs call only what it admits", async () => {
    await spawn(
      mcpServer,
      { token: TOKEN, views: { lean: { allow: ['run_code', 'mcp__everything__*'] } } },
      'gateway',
    )
    const gateway = h.kernel.services.get('mcpServer')!.value as McpServerApi
    const connect = async (view: string) => {
      const client = new Client({ name: 'code-mode-test', version: '1.0.0' })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(gateway.urlOf(view)!), {
          requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
        }),
      )
      return client
    }
    const client = await connect('lean')
    try {
      const { tools } = await client.listTools()
      const runCode = tools.find((t) => t.name === 'run_code')
      assert.ok(runCode, 'the view serves run_code')
      // its description declares the view's tools, and only those
      const described = runCode.description ?? ''
      assert.match(described, /The tools you may call:\n/)
      assert.match(described, /everything: \{/)
      assert.match(described, /echo\(args: \{/)
      assert.doesNotMatch(described, /\bmemory: \{|read_text_file|return api\(\)/)
      assert.ok(!tools.some((t) => t.name.startsWith('mcp__memory__')))
      const call = async (code: string) => {
        const answer = await client.callTool({ name: 'run_code', arguments: { code } })
        return (answer.content as Array<{ text: string }>).map((c) => c.text).join('\n')
      }
      const echoed = await call(
        'const e = await tools.everything.echo({ message: "hi" }); return e',
      )
      assert.match(echoed, /Echo: hi/)
      const api = await call('return await api()')
      assert.match(api, /everything: \{/)
      assert.doesNotMatch(api, /memory|read_text_file/, 'the view does not see them')
      const refused = await call(
        'try { await tools.memory.read_graph({}) } catch (e) { return e.code }',
      )
      assert.equal(refused.split('\n')[0], 'UNKNOWN_TOOL')
    } finally {
      await client.close()
    }
  })
})
