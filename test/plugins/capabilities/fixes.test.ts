// capabilities after the issue-19 review: a package's hash covers what it runs (its manifest,
// not only its executable; an extras-only package is not a constant), the audit and metrics files
// stay inside the project's .yoke/ or $YOKE_HOME, two processes' metrics add up, and
// capability_stats shows only what the caller's scope can see.
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readFileSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { CapabilitiesApi, Capability, MetricsRow } from '../../../plugins/capabilities/api.ts'
import { createYoke, type Yoke } from '../../../src/index.ts'
import { readRows } from '../../../plugins/metrics-jsonl/index.ts'
import { nodeExe, writePackage } from '../../helpers/exec.ts'
import { ROOT, suiteProjects } from '../../helpers/project.ts'

describe('capabilities: identities and files', () => {
  const project = suiteProjects()
  const yokes: Yoke[] = []
  after(async () => {
    for (const y of yokes) await y.close()
  })
  const start = async (dir: string, home: string) => {
    const yoke = createYoke({
      cwd: dir,
      home,
      env: { ...process.env, YOKE_TRUST: '1' },
      onLog: () => {},
    })
    yokes.push(yoke)
    return { yoke, ready: await yoke.ready }
  }
  /** what starting refuses: a config error, or the instances that failed */
  const refused = async (dir: string, home: string): Promise<string> => {
    try {
      const { ready } = await start(dir, home)
      return JSON.stringify(ready.failed)
    } catch (err) {
      return (err as Error).message
    }
  }
  const capabilities = (yoke: Yoke) => {
    const api = yoke.get('capabilities') as CapabilitiesApi | undefined
    assert.ok(api, 'the capabilities service is provided')
    return api.list()
  }

  it('hashes what a package runs: the same executable with other hooks, and extras-only packages, differ', async () => {
    const p = project({
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n  packages:\n    use: exec-tools\n    config: { dirs: [./packages], watch: false }\n  capabilities:\n    use: capabilities\n',
    })
    const exe = nodeExe(`process.stdout.write('same')`)
    const withHook = (name: string, command: string) => ({
      manifest: {
        name,
        version: '1',
        tools: [{ name: `${name}_run`, description: 'runs' }],
        hooks: [{ event: 'before_tool_call', command: [command] }],
      },
      exe,
      exeName: 'run',
    })
    writePackage(p.path('packages'), 'quiet', withHook('quiet', './ok.sh'))
    writePackage(p.path('packages'), 'loud', withHook('loud', './other.sh'))
    for (const name of ['notes', 'guide'])
      writePackage(p.path('packages'), name, {
        manifest: { name, version: '1', prompts: { include: ['p.md'] } },
        files: { 'p.md': `the ${name} prompt` },
      })
    const { yoke, ready } = await start(p.dir, p.home)
    assert.deepEqual(ready.failed, [])
    const hashOf = (id: string) => {
      const cap = capabilities(yoke).find((c: Capability) => c.id === id)
      assert.ok(cap, `${id} is a capability`)
      return cap.hash
    }
    assert.notEqual(
      hashOf('exec:quiet'),
      hashOf('exec:loud'),
      'the manifest counts, not only the executable',
    )
    assert.notEqual(hashOf('exec:notes'), hashOf('exec:guide'), 'two extras-only packages differ')
  })

  it('refuses audit and metrics files outside the project: absolute, `..`, or through a link', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'yoke-outside-'))
    after(() => rmSync(outside, { recursive: true, force: true }))
    const config = (audit: string, file = '.yoke/metrics.jsonl') =>
      `preset: minimal\nplugins:\n  capabilities:\n    use: capabilities\n    config: { audit: ${JSON.stringify(audit)} }\n  metrics:\n    use: metrics-jsonl\n    config: { file: ${JSON.stringify(file)}, intervalMs: 10 }\n`
    for (const [audit, file] of [
      [join(outside, 'abs', 'victim.jsonl'), '.yoke/metrics.jsonl'],
      ['../' + 'x'.repeat(3) + '/victim.jsonl', '.yoke/metrics.jsonl'],
      ['.yoke/audit.jsonl', join(outside, 'm', 'victim.jsonl')],
    ]) {
      const p = project({ 'yoke.config.yaml': config(audit!, file) })
      const why = await refused(p.dir, p.home)
      assert.match(
        why,
        /config\.(audit|file): must be a path relative to the project/,
        `${audit} / ${file}`,
      )
      assert.equal(existsSync(join(outside, 'abs')), false, 'nothing is created outside')
      assert.equal(existsSync(join(outside, 'm')), false, 'nothing is created outside')
    }
    // a link the project ships: .yoke points out of the project
    const p = project({ 'yoke.config.yaml': config('.yoke/audit.jsonl') })
    mkdirSync(join(outside, 'linked'))
    symlinkSync(join(outside, 'linked'), p.path('.yoke'))
    assert.match(
      await refused(p.dir, p.home),
      /audit: \.yoke\/audit\.jsonl leads out of the project/,
    )
    assert.equal(existsSync(join(outside, 'linked', 'audit.jsonl')), false, 'nothing written there')
    // and a path inside the project works
    const ok = project({ 'yoke.config.yaml': config('logs/audit.jsonl', 'logs/metrics.jsonl') })
    const good = await start(ok.dir, ok.home)
    assert.deepEqual(good.ready.failed, [])
  })

  const TOOLS = join(ROOT, 'test/fixtures/capabilities/tools.mjs')
  const withTools = (metrics: string) =>
    `preset: minimal\nplugins:\n  mine:\n    use: ${JSON.stringify(TOOLS)}\n    config: { tools: [{ name: alpha }, { name: secret }] }\n  capabilities:\n    use: capabilities\n    config: { statsTool: true }\n  metrics:\n    use: metrics-jsonl\n    config: ${metrics}\n`

  it('adds up the counts of two processes writing one metrics file, and compacts it', async () => {
    const p = project({ 'yoke.config.yaml': withTools('{ intervalMs: 60000 }') })
    const one = await start(p.dir, p.home)
    const two = await start(p.dir, p.home)
    for (let i = 0; i < 2; i++) assert.equal((await one.yoke.call('alpha')).status, 'ok')
    for (let i = 0; i < 3; i++) assert.equal((await two.yoke.call('alpha')).status, 'ok')
    await one.yoke.close()
    await two.yoke.close()
    const file = p.path('.yoke/metrics.jsonl')
    const alpha = () => readRows(file).filter((r) => r.id === 'alpha')
    assert.equal(alpha().length, 1)
    assert.equal(alpha()[0]!.called, 5, 'both processes count')
    // a third run that calls once more: 6, and a file over compactBytes becomes one line per row
    p.write('yoke.config.yaml', withTools('{ intervalMs: 60000, compactBytes: 1 }'))
    const three = await start(p.dir, p.home)
    const rows = (three.yoke.get('capabilities') as CapabilitiesApi).stats()
    assert.equal(rows.find((r: MetricsRow) => r.id === 'alpha')?.called, 5, 'seeded from the file')
    const lines = readFileSync(file, 'utf8').trim().split('\n')
    assert.equal(lines.length, new Set(readRows(file).map((r) => r.id)).size, 'one line per row')
    assert.equal((await three.yoke.call('alpha')).status, 'ok')
    await three.yoke.close()
    assert.equal(alpha()[0]!.called, 6, 'a delta after the compacted total')
  })

  it('capability_stats shows a scope only the tools it can see', async () => {
    const p = project({ 'yoke.config.yaml': withTools('{ intervalMs: 60000 }') })
    const { yoke } = await start(p.dir, p.home)
    const view = yoke.runtime.scope('view')
    view.restrict({ deny: ['secret'] })
    const other = yoke.runtime.scope('other-session')
    other.register({
      name: 'private',
      description: 'one session’s own tool',
      inputSchema: { type: 'object' },
      source: 'native',
      execute: () => 'private ran',
    })
    for (const name of ['alpha', 'secret']) assert.equal((await yoke.call(name)).status, 'ok')
    assert.equal((await other.call('private')).status, 'ok')
    const ids = async (layer: { call: Yoke['call'] }) => {
      const result = await layer.call('capability_stats', {})
      assert.equal(result.status, 'ok')
      return (result.structured as { rows: MetricsRow[] }).rows.map((r) => r.id).sort()
    }
    yoke.tools('view')
    assert.deepEqual(
      await ids(view),
      ['alpha'],
      'the view sees neither the masked nor the private tool',
    )
    assert.ok((await ids(yoke)).includes('secret'), 'the global scope sees secret')
    assert.ok(!(await ids(yoke)).includes('private'), 'nor another session’s tool')
    yoke.tools('other-session')
    assert.ok((await ids(other)).includes('private'), 'its own session sees it')
  })

  it('does not serve a withdrawn skill through skill_read', async () => {
    const config = (withdrawn: string) =>
      `preset: minimal\nplugins:\n  prompt:\n    use: prompt\n  skills:\n    use: skills\n    config: { dirs: [./skills], watch: false }\n  capabilities:\n    use: capabilities\n    config: { withdrawn: ${withdrawn} }\n`
    const p = project({
      'yoke.config.yaml': config('[{ id: "skill:tidy", version: "*", why: "it deletes notes" }]'),
      'skills/tidy/SKILL.md': '---\nname: tidy\ndescription: Tidies notes.\n---\nTIDY BODY\n',
      'skills/kept/SKILL.md': '---\nname: kept\ndescription: Kept notes.\n---\nKEPT BODY\n',
    })
    const { yoke, ready } = await start(p.dir, p.home)
    assert.deepEqual(ready.failed, [])
    const read = (name: string) => yoke.call('skill_read', { name })
    const refused = await read('tidy')
    assert.equal(refused.status, 'DENIED')
    assert.match(
      JSON.stringify(refused.content),
      /withdrawn \(skill:tidy@sha256:[0-9a-f]{12}\): it deletes notes/,
    )
    assert.doesNotMatch(JSON.stringify(refused.content), /TIDY BODY/)
    assert.match(
      JSON.stringify((await read('kept')).content),
      /KEPT BODY/,
      'another skill is served',
    )
  })
})
