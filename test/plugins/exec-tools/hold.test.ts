// Holding an exec package (ExecToolsApi.hold): while held it is unloaded for real (its tools, its
// hook, its prompt section and its MCP server process go) and list() keeps its identity; holds are
// counted; the last release loads it again; an edit while held keeps it held with the new identity.
import assert from 'node:assert/strict'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { PromptApi } from '../../../plugins/prompt/api.ts'
import { toPlugin, type Plugin, type ToolResult } from '../../../src/index.ts'
import { execHarness, nodeExe, writePackage, type ExecHarness } from '../../helpers/exec.ts'
import { alive, FIXTURE } from '../../helpers/mcp.ts'
import { runYoke, tempProject } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const text = (r: ToolResult) => r.content.map((c) => ('text' in c ? c.text : '')).join('')
describe('holding an exec package', () => {
  let h: ExecHarness
  let hookLog: string
  const changes: string[][] = []
  const held = () => h.api.list().find((p) => p.id === 'held')!
  const toolNames = () => h.rt.list().map((t) => t.name)
  const hookRuns = () =>
    existsSync(hookLog) ? readFileSync(hookLog, 'utf8').split('\n').filter(Boolean).length : 0
  const serverPid = async () => Number(text(await h.rt.call('mcp__pkg-held__pid', {})))
  const whenLoaded = () =>
    until(
      'the held package to be loaded, with its MCP server',
      () => toolNames().includes('hold_echo') && toolNames().includes('mcp__pkg-held__pid'),
      { ms: 15_000, every: 50 },
    )
  const manifest = (version: string) => ({
    name: 'held',
    version,
    tools: [{ name: 'hold_echo', description: 'echoes', input_schema: { type: 'object' } }],
    prompts: { include: ['prompt.md'] },
    hooks: [{ event: 'before_tool_call', command: ['./hook.sh'], tool_filter: ['other_echo'] }],
    mcp_servers: [{ command: './server.mjs', args: [] }],
  })

  before(async () => {
    h = await execHarness(
      {
        held: {
          manifest: manifest('1'),
          exe: nodeExe(`process.stdout.write(JSON.stringify({ output: 'held v1' }))`),
          files: {
            'prompt.md': 'HELD PACKAGE RULES',
            // the log sits beside the package (the hook's cwd), read by the test through hookLog
            'hook.sh': '#!/bin/sh\ncat > /dev/null\necho ran >> hook.log\nexit 0\n',
            'server.mjs': `#!${process.execPath}\nawait import(${JSON.stringify(FIXTURE)})\n`,
          },
        },
        other: {
          manifest: {
            name: 'other',
            version: '1',
            tools: [{ name: 'other_echo', description: 'echoes' }],
          },
          exe: nodeExe(`process.stdout.write(JSON.stringify({ output: 'other' }))`),
        },
      },
      { watch: true },
    )
    hookLog = join(h.root, 'packages/held/hook.log')
    h.api.hooks.change.tap('test', (ids) => void changes.push(ids))
    await whenLoaded()
    await new Promise((resolve) => setTimeout(resolve, 400)) // the watcher arms after the first scan
  })
  after(() => h.close())

  it('a hold on an id that is not loaded is undefined', () => {
    assert.equal(h.api.hold('no-such-package', 'withdrawn'), undefined)
    assert.deepEqual(
      h.api.list().map((p) => p.state),
      ['loaded', 'loaded'],
    )
  })

  it('held: its tools, hook, prompt section and MCP server process go; list() keeps its identity', async () => {
    const prompt = h.kernel.services.get('prompt')!.value as PromptApi
    assert.match(prompt.render(), /HELD PACKAGE RULES/)
    assert.equal(text(await h.rt.call('other_echo', {})), 'other')
    assert.equal(hookRuns(), 1, 'the package hook runs while it is loaded')
    const pid = await serverPid()
    assert.ok(alive(pid), `the MCP server (pid ${pid}) runs`)
    const loaded = held()
    changes.length = 0

    const release = h.api.hold('held', 'withdrawn: held@1')
    assert.ok(release)
    assert.equal(held().state, 'held', 'list() says held at once')
    await until('its tools to go', () => !toolNames().some((n) => /hold_echo|pkg-held/.test(n)))
    await h.kernel.settled() // the package's child instance (hooks, server) is disposed
    await until(`the MCP server process ${pid} to end`, () => !alive(pid))
    assert.doesNotMatch(prompt.render(), /HELD PACKAGE RULES/)
    assert.equal((await h.rt.call('hold_echo', {})).status, 'UNKNOWN_TOOL')
    assert.equal(text(await h.rt.call('other_echo', {})), 'other')
    assert.equal(hookRuns(), 1, 'the hook of a held package does not run')
    assert.ok(changes.flat().includes('held'), 'the change hook announced it')

    const entry = held()
    assert.equal(entry.why, 'withdrawn: held@1')
    for (const field of ['id', 'version', 'fingerprint', 'dir', 'sha256', 'executable'] as const)
      assert.equal(entry[field], loaded[field], field)
    assert.deepEqual(entry.tools, ['hold_echo'])
    assert.deepEqual(entry.extras, { prompts: 1, mcpServers: 1, hooks: 1 })

    changes.length = 0
    await release()
    assert.equal(held().state, 'loaded', 'the awaited release has loaded it again')
    assert.equal(held().why, undefined)
    assert.ok(changes.flat().includes('held'), 'the change hook announced the release')
    await whenLoaded()
    assert.equal(text(await h.rt.call('hold_echo', {})), 'held v1')
    assert.notEqual(await serverPid(), pid, 'a new server process')
    await release() // idempotent
    assert.equal(held().state, 'loaded')
  })

  it('two holds: releasing one keeps it held; releasing both brings its tools back', async () => {
    const first = h.api.hold('held', 'withdrawn: held@1')!
    const second = h.api.hold('held', 'pin: held@0.9')!
    assert.equal(held().why, 'withdrawn: held@1; pin: held@0.9')
    await until('its tools to go', () => !toolNames().includes('hold_echo'))
    await first()
    await first()
    await h.kernel.settled()
    assert.equal(held().state, 'held')
    assert.equal(held().why, 'pin: held@0.9')
    assert.ok(!toolNames().includes('hold_echo'), 'one hold still stands')
    await second()
    await whenLoaded()
    assert.equal(held().state, 'loaded')
    const called = await h.rt.call('hold_echo', {})
    assert.equal(called.status, 'ok', text(called))
    assert.equal(text(called), 'held v1')
  })

  it('an edit while held keeps it held, with the new version and fingerprint in list()', async () => {
    const release = h.api.hold('held', 'withdrawn: held@1')!
    const old = held()
    await until('its tools to go', () => !toolNames().includes('hold_echo'))
    changes.length = 0
    writeFileSync(join(old.dir, 'manifest.json'), JSON.stringify(manifest('2'), null, 2))
    await until('list() to show version 2', () => held().version === '2', { ms: 10_000 })
    const now = held()
    assert.equal(now.state, 'held')
    assert.equal(now.why, 'withdrawn: held@1')
    assert.notEqual(now.fingerprint, old.fingerprint)
    assert.ok(changes.flat().includes('held'), 'the new identity was announced')
    await h.kernel.settled()
    assert.ok(!toolNames().includes('hold_echo'), 'still held')
    await release()
    await whenLoaded()
    const tool = h.rt.list().find((t) => t.name === 'hold_echo')!
    assert.equal(tool.annotations?.version, '2')
  })

  it("a consuming instance's hold is one of its effects: it is released when the instance goes", async () => {
    const holder = toPlugin({
      name: 'holder',
      inject: ['execTools'],
      apply: (ctx: any) => void ctx.execTools.hold('held', 'held by an instance'),
    }) as Plugin
    const fiber = h.kernel.spawn(holder, {}, { key: 'holder' })
    await h.kernel.whenSettled(fiber, 10_000)
    assert.equal(held().state, 'held')
    assert.equal(held().why, 'held by an instance')
    await until('its tools to go', () => !toolNames().includes('hold_echo'))
    await h.kernel.remove(fiber)
    await whenLoaded()
    assert.equal(held().state, 'loaded')
  })

  it('the holds go with the exec-tools instance; its successor loads the package', async () => {
    const release = h.api.hold('held', 'withdrawn: held@1')!
    await until('its tools to go', () => !toolNames().includes('hold_echo'))
    await h.kernel.remove(h.fiber)
    const next = await h.spawnExec('packages-2', [join(h.root, 'packages')])
    assert.equal(next.state, 'active')
    await whenLoaded()
    await release() // the old instance's hold: nothing to do
    const api = h.kernel.services.get('execTools')!.value as typeof h.api
    assert.equal(api.list().find((p) => p.id === 'held')?.state, 'loaded')
    const again = api.hold('held', 'withdrawn: held@1')
    assert.ok(again, 'the new instance can be held')
    await again()
  })
})

it('yoke plugins list shows a held package as held, with why (and in --json)', async () => {
  const project = tempProject({
    'holder.mjs': `export default { name: 'holder', inject: ['execTools'], apply(ctx) { ctx.execTools.hold('pinned', 'withdrawn: pinned@1') } }\n`,
    'yoke.config.yaml':
      'preset: minimal\nplugins:\n  packages:\n    use: exec-tools\n    config:\n      dirs: [pkgs]\n      watch: false\n  holder:\n    use: ./holder.mjs\n',
  })
  try {
    writePackage(project.path('pkgs'), 'pinned', {
      manifest: { name: 'pinned', version: '1', tools: [{ name: 'pinned_run', description: 'x' }] },
      exe: nodeExe(`process.stdout.write('ok')`),
    })
    const options = { cwd: project.dir, home: project.home, env: { YOKE_TRUST: '1' } }
    const listed = await runYoke(['plugins', 'list'], options)
    assert.equal(listed.code, 0, listed.stdout + listed.stderr)
    assert.match(listed.stdout, /^pinned 1 {2}held\n/m)
    assert.match(listed.stdout, /^ {2}held: withdrawn: pinned@1$/m)
    const json = await runYoke(['plugins', 'list', '--json'], options)
    assert.equal(json.code, 0, json.stderr)
    const [pinned] = JSON.parse(json.stdout).packages
    assert.equal(pinned.state, 'held')
    assert.equal(pinned.why, 'withdrawn: pinned@1')
    assert.deepEqual(pinned.tools, ['pinned_run'])
    assert.match(pinned.fingerprint, /^[0-9a-f]{64}$/)
  } finally {
    project.cleanup()
  }
})
