// An upstream tool's result through the whole chain, as real processes: the rich fixture (SDK v2,
// test/fixtures/mcp/rich.mjs) → mcp-client → the runtime → `yoke serve` (mcp-server) → a v2
// client in each era. Every block must come out as the upstream server sent it: all fields
// (annotations, _meta, a link's title, description, size and icons, embedded contents), the block
// boundaries and the order. And `yoke tools call`, a text-only reader, still prints readable text.
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  Client,
  StreamableHTTPClientTransport,
  type CallToolResult,
} from '@modelcontextprotocol/client'
import { ROOT, runYoke, tempProject, type Project } from '../../helpers/project.ts'
import { serveHttp } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'

const RICH = join(ROOT, 'test/fixtures/mcp/rich.mjs')
const upstream = JSON.parse(readFileSync(join(ROOT, 'test/fixtures/mcp/rich-content.json'), 'utf8'))
  .content as Array<Record<string, unknown>>
const TOOL = 'mcp__rich__rich'

const CONFIG = `preset: base
plugins:
  rich:
    use: mcp-client
    config: { serverName: rich, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(RICH)}] }
  gateway:
    use: mcp-server
`

describe('upstream results pass through the gateway unchanged', () => {
  let project: Project
  let child: ChildProcess
  let url: string
  const clients: Client[] = []
  before(async () => {
    project = tempProject({ 'yoke.config.yaml': CONFIG })
    const served = await serveHttp(project)
    child = served.child
    url = served.info.url
  })
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})))
    if (child.exitCode === null) child.kill('SIGKILL')
    project.cleanup()
  })

  async function client(era: 'legacy' | 'modern'): Promise<Client> {
    const token = readFileSync(join(project.home, 'mcp-token'), 'utf8').trim()
    const c = new Client(
      { name: `passthrough-${era}`, version: '1' },
      era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
    )
    await c.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    )
    clients.push(c)
    assert.equal(c.getProtocolEra(), era)
    return c
  }

  for (const era of ['legacy', 'modern'] as const)
    it(`a v2 client in the ${era} era gets the upstream blocks exactly`, async () => {
      const c = await client(era)
      await until(
        'the upstream tool to be served',
        async () => (await c.listTools()).tools.some((t) => t.name === TOOL),
        { ms: 20_000, every: 100 },
      )
      const result = (await c.callTool({ name: TOOL, arguments: {} })) as CallToolResult
      assert.notEqual(result.isError, true, JSON.stringify(result.content).slice(0, 400))
      assert.deepEqual(result.content, upstream)
    })

  it('yoke tools call (a text-only reader) prints the text, one block a line, and no base64', async () => {
    const run = await runYoke(['tools', 'call', TOOL], { cwd: project.dir, home: project.home })
    assert.equal(run.code, 0, run.stderr)
    assert.ok(run.stdout.startsWith('first block\nsecond block\nthird\nblock\n\n'), run.stdout)
    assert.match(run.stdout, /\[image image\/png, 72 bytes\]/)
    assert.match(run.stdout, /last block\n$/)
    for (const media of upstream.filter((b) => typeof b.data === 'string'))
      assert.ok(!run.stdout.includes(media.data as string), 'no base64 in the text')
  })
})
