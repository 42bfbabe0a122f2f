// A preset fragment as a dynamic plugin: an MCP server added by the model, through the composed
// base preset (createYoke): define checks each instance's config against its plugin's schema and
// names the line; run (approved) starts the server and its tools join the session's tools; stop
// removes them.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createYoke } from '../../../src/index.ts'
import { ROOT, tempProject } from '../../helpers/project.ts'

const SERVER = join(ROOT, 'examples', 'mcp-server', 'index.mjs')

describe('repository fragments', () => {
  const p = tempProject({ 'notes.txt': 'hello from the workspace\n' })
  after(() => p.cleanup())
  const yoke = createYoke({
    cwd: p.dir,
    home: p.home,
    env: { ...process.env, YOKE_TRUST: '1' },
    set: { 'plugins.repository': { use: 'repository' } },
    approval: () => 'allow-once',
  })
  after(() => yoke.close())
  const text = (r: { content: readonly unknown[] }) =>
    r.content.map((c) => (c as { text: string }).text).join('\n')

  it('a config its plugin refuses is named by line; nothing is stored', async () => {
    const source = `plugins:\n  ws:\n    use: mcp-client\n    config:\n      serverName: "not a name"\n      command: node\n`
    const r = await yoke.call('repository_define', {
      name: 'ws',
      purpose: 'p',
      kind: 'fragment',
      source,
    })
    assert.equal(r.status, 'TOOL_ERROR')
    assert.match(
      text(r),
      /REPOSITORY_SOURCE_INVALID: ws@1\.yaml:5:19: ws: config\.serverName: serverName must be/,
    )
    const path = await yoke.call('repository_define', {
      name: 'ws',
      purpose: 'p',
      kind: 'fragment',
      source: 'plugins:\n  x:\n    use: ./mine.mjs\n',
    })
    assert.match(text(path), /ws@1\.yaml:3:10: x: use must name a built-in plugin/)
  })

  it('runs an MCP server entry, whose tools join the session, and stops it', async () => {
    const source = `plugins:\n  ws:\n    use: mcp-client\n    config:\n      serverName: ws\n      command: node\n      args: [${JSON.stringify(SERVER)}, ${JSON.stringify(p.dir)}]\n`
    const d = await yoke.call('repository_define', {
      name: 'ws',
      purpose: 'read the notes',
      kind: 'fragment',
      source,
    })
    assert.equal(d.status, 'ok', text(d))
    const r = await yoke.call('repository_run', { plugin: 'ws' })
    assert.equal(r.status, 'ok', text(r))
    assert.match(text(r), /repo:ws@1 is running; its tools: .*mcp__ws__/)
    const tools = yoke.tools().map((t) => t.name)
    const read = tools.find((n) => n.startsWith('mcp__ws__read'))
    assert.ok(read, tools.join(', '))
    const got = await yoke.call(read!, { path: 'notes.txt' })
    assert.match(text(got), /hello from the workspace/)
    assert.equal((await yoke.call('repository_stop', { plugin: 'ws' })).status, 'ok')
    assert.ok(!yoke.tools().some((t) => t.name.startsWith('mcp__ws__')))
  })
})
