// A call to a tool that a rule took away says so (plugins/capabilities/unknown.ts, through the
// runtime's unknownTool hook): the tools of a withdrawn server or package, unloaded, answer
// CAPABILITY_WITHDRAWN naming the tool, the rule, its reason and how to undo it; a mis-pinned one
// answers CAPABILITY_PIN_MISMATCH with `yoke pin`; a name nothing ever had is not explained by a rule.
// On a real composition: a real stdio MCP server and a real exec package.
import assert from 'node:assert/strict'
import { cpSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createYoke, type ToolResult, type Yoke } from '../../../src/index.ts'
import { ROOT, tempProject, type Project } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const SERVER = join(ROOT, 'test/fixtures/mcp/server.mjs')
const PACKAGES = join(ROOT, 'examples/packages')

describe('capabilities: a call to a tool a rule unloaded answers with the rule', () => {
  const opened: Array<{ yoke: Yoke; p: Project }> = []
  after(async () => {
    for (const o of opened) {
      await o.yoke.close()
      o.p.cleanup()
    }
  })

  const start = async (capabilities: Record<string, unknown>) => {
    const p = tempProject()
    cpSync(join(PACKAGES, 'text-tools'), p.path('packages/text-tools'), { recursive: true })
    const config = (rules: Record<string, unknown>) =>
      JSON.stringify({
        preset: 'base',
        plugins: {
          fx: {
            use: 'mcp-client',
            config: { serverName: 'fx', command: process.execPath, args: [SERVER] },
          },
          pkgs: { use: 'exec-tools', config: { dirs: [p.path('packages')] } },
          capabilities: { config: rules },
        },
      })
    p.write('yoke.config.yaml', config({}))
    const yoke = createYoke({ cwd: p.dir, home: p.home, env: { ...process.env, YOKE_TRUST: '1' } })
    opened.push({ yoke, p })
    await yoke.ready
    const state = (name: string) =>
      yoke
        .get('mcp')!
        .list()
        .find((s) => s.name === name)?.state
    await until('the server to connect', () => state('fx') === 'connected')
    const names = () => yoke.tools().map((t) => t.name)
    assert.ok(names().includes('mcp__fx__echo') && names().includes('word_count'), names().join())
    p.write('yoke.config.yaml', config(capabilities))
    await yoke.reload()
    await until('the server to be held', () => state('fx') === 'held')
    await until(
      'the package to be held',
      () =>
        yoke
          .get('execTools')!
          .list()
          .find((e) => e.id === 'text-tools')?.state === 'held',
    )
    assert.ok(!names().includes('mcp__fx__echo') && !names().includes('word_count'), names().join())
    return yoke
  }
  const said = (r: ToolResult) => `${r.error?.code}: ${r.error?.message} / ${r.error?.hint}`

  it('withdrawn: CAPABILITY_WITHDRAWN with the rule, its reason and the way back', async () => {
    const yoke = await start({
      withdrawn: [
        { id: 'mcp:fx', version: '1.0.0', why: 'fx 1.0.0 leaks' },
        { id: 'exec:text-tools', version: '*', why: 'miscounts' },
      ],
    })
    const echo = await yoke.call('mcp__fx__echo', { text: 'hi' })
    assert.equal(echo.status, 'CAPABILITY_WITHDRAWN', said(echo))
    assert.equal(echo.error!.message, 'mcp__fx__echo is withdrawn (mcp:fx@1.0.0): fx 1.0.0 leaks')
    assert.match(
      echo.error!.hint ?? '',
      /remove the entry for mcp:fx@1\.0\.0 from the `withdrawn` list/,
    )
    const count = await yoke.call('word_count', { text: 'a b' })
    assert.equal(count.status, 'CAPABILITY_WITHDRAWN', said(count))
    assert.match(
      count.error!.message,
      /^word_count is withdrawn \(exec:text-tools@.+\): miscounts$/,
    )
    // a name no unloaded provider had: no rule explains it (whatever else the runtime says)
    const none = await yoke.call('no_such_tool', {})
    assert.ok(!none.ok && !/^CAPABILITY_/.test(none.status), said(none))
  })

  it('pinned at another version: CAPABILITY_PIN_MISMATCH naming `yoke pin`', async () => {
    const yoke = await start({
      pins: [
        { id: 'mcp:fx', version: '0.9.0' },
        { id: 'exec:text-tools', version: '0.1.0' },
      ],
    })
    const echo = await yoke.call('mcp__fx__echo', { text: 'hi' })
    assert.equal(echo.status, 'CAPABILITY_PIN_MISMATCH', said(echo))
    assert.match(
      echo.error!.message,
      /^mcp__fx__echo is refused: mcp:fx is pinned at version 0\.9\.0/,
    )
    assert.match(echo.error!.hint ?? '', /yoke pin mcp:fx/)
    const count = await yoke.call('word_count', { text: 'a b' })
    assert.equal(count.status, 'CAPABILITY_PIN_MISMATCH', said(count))
  })
})
