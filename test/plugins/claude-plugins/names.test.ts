// A plugin's MCP servers and tools are named as Claude Code names them, however long:
// `plugin_<plugin>_<server>` (Claude Code's `plugin:<plugin>:<server>` normalised) and
// `mcp__plugin_<plugin>_<server>__<tool>`, so rules written for Claude Code match; a tool name
// past 64 characters (which no model takes) is cut with its `mcp__<server>__` prefix whole; two
// servers that Claude Code would name alike are refused, naming both.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { pluginServerName } from '../../../plugins/claude-plugins/names.ts'
import { publicToolName } from '../../../plugins/mcp-client/api.ts'
import '../../../plugins/claude-plugins/api.ts'
import { createYoke, type LogRecord } from '../../../src/index.ts'
import { FIXTURE } from '../../helpers/mcp.ts'
import { suiteProjects, type Project } from '../../helpers/project.ts'

const config = `preset: base
plugins:
  claude-plugins:
    use: claude-plugins
    config: { dirs: [plugins] }
`

/** A plugin folder `plugins/<dir>` named `name` whose .mcp.json runs the MCP fixture as each of `servers`. */
function plugin(p: Project, dir: string, name: string, servers: string[]) {
  p.write(`plugins/${dir}/.claude-plugin/plugin.json`, JSON.stringify({ name }))
  p.write(`plugins/${dir}/server.mjs`, `import ${JSON.stringify(pathToFileURL(FIXTURE).href)}\n`)
  const entry = { command: 'node', args: ['${CLAUDE_PLUGIN_ROOT}/server.mjs'] }
  p.write(
    `plugins/${dir}/.mcp.json`,
    JSON.stringify({ mcpServers: Object.fromEntries(servers.map((s) => [s, entry])) }),
  )
}

describe('claude-plugins names: as Claude Code writes them', () => {
  const project = suiteProjects()

  it('normalises as Claude Code does and never cuts a server name', () => {
    assert.equal(pluginServerName('github', 'github'), 'plugin_github_github')
    assert.equal(
      pluginServerName('chrome-devtools-mcp', 'chrome-devtools'),
      'plugin_chrome-devtools-mcp_chrome-devtools',
    )
    assert.equal(
      pluginServerName('cloudflare', 'cloudflare-workers-observability'),
      'plugin_cloudflare_cloudflare-workers-observability',
    )
    assert.equal(pluginServerName('my.kit', 'a b'), 'plugin_my_kit_a_b')
  })

  it('cuts a tool name past 64 characters behind its whole mcp__<server>__ prefix', () => {
    const server = pluginServerName('cloudflare', 'cloudflare-workers-observability')
    const long = publicToolName(server, 'query_worker_observability')
    assert.equal(long.length, 64)
    assert.ok(long.startsWith(`mcp__${server}__`), long)
    assert.notEqual(long, publicToolName(server, 'query_worker_observability_2'))
    // one that fits is Claude Code's name exactly
    assert.equal(publicToolName(server, 'list'), `mcp__${server}__list`)
    // a server name that fits mcp-client's old 32 characters is cut as before
    assert.match(publicToolName('short', 'x'.repeat(80)), /^mcp__short__x{39}_[0-9a-f]{12}$/)
  })

  it("runs a long-named plugin server under Claude Code's name; its tools answer by that name", async () => {
    const p = project({ 'yoke.config.yaml': config })
    plugin(p, 'devtools', 'chrome-devtools-mcp', ['chrome-devtools'])
    const yoke = createYoke({ cwd: p.dir, home: p.home, trust: true, onLog: () => {} })
    try {
      await yoke.ready
      const prefix = 'mcp__plugin_chrome-devtools-mcp_chrome-devtools__'
      const names = yoke.tools().map((t) => t.name)
      for (const tool of ['echo', 'ask-client']) assert.ok(names.includes(prefix + tool), tool)
      const result = await yoke.call(`${prefix}echo`, { text: 'hi' })
      assert.equal(result.ok, true)
      const folder = yoke.get('claudePlugins')!.list()[0]!
      assert.deepEqual(folder.parts.mcpServers, ['plugin_chrome-devtools-mcp_chrome-devtools'])
    } finally {
      await yoke.close()
    }
  })

  it('refuses two servers Claude Code would name alike, naming both', async () => {
    const p = project({ 'yoke.config.yaml': config })
    // in one plugin: "x.y" and "x_y" are both plugin_kit_x_y
    plugin(p, 'kit', 'kit', ['x.y', 'x_y'])
    // across plugins: plugin "a_b" server "c" and plugin "a" server "b_c" are both plugin_a_b_c
    plugin(p, 'one', 'a_b', ['c'])
    plugin(p, 'two', 'a', ['b_c'])
    const logs: LogRecord[] = []
    const yoke = createYoke({ cwd: p.dir, home: p.home, trust: true, onLog: (r) => logs.push(r) })
    try {
      await yoke.ready
      const kit = yoke
        .get('claudePlugins')!
        .list()
        .find((f) => f.name === 'kit')!
      assert.deepEqual(kit.parts.mcpServers, ['plugin_kit_x_y'])
      assert.match(
        kit.problems.join('\n'),
        /server "x_y" was not started: its name is "plugin_kit_x_y" as Claude Code writes it, which server "x\.y" of this plugin has already/,
      )
      const failed = yoke.composition.kernel.fibers.filter(
        (f) => f.state === 'failed' && f.error?.code === 'MCP_NAME_CONFLICT',
      )
      assert.equal(failed.length, 1, failed.map((f) => f.key).join(', '))
      const message = failed[0]!.error!.message
      assert.match(message, /"plugin_a_b_c"/)
      assert.match(message, /plugin-a_b/)
      assert.match(message, /plugin-a\b/)
    } finally {
      await yoke.close()
    }
  })
})
