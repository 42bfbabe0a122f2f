// A withdrawal unloads what it withdraws (plugins/capabilities/unload.ts): on a real composition,
// a real stdio MCP server's process ends, an exec package's tools and hooks go, a skill leaves the
// catalogue; each is recorded in the audit log once; a reload of the capabilities instance with
// the same rules brings nothing back up in between (no new server process); removing the rule
// loads them all again.
import assert from 'node:assert/strict'
import { cpSync, existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { AuditEntry } from '../../../plugins/capabilities/api.ts'
import { readAudit } from '../../../plugins/capabilities/audit.ts'
import { createYoke, type Yoke } from '../../../src/index.ts'
import { ROOT, tempProject, type Project } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'
import { alive } from '../../helpers/mcp.ts'

const SERVER = join(ROOT, 'test/fixtures/mcp/server.mjs')
const PACKAGES = join(ROOT, 'examples/packages')
const SKILL = '---\nname: tidy\ndescription: Tidy the notes.\nversion: "2"\n---\nSort the notes.\n'

describe('capabilities: a withdrawal unloads what it withdraws', () => {
  let p: Project
  let yoke: Yoke
  const opened: Array<{ yoke: Yoke; p: Project }> = []
  after(async () => {
    for (const o of opened) {
      await o.yoke.close()
      o.p.cleanup()
    }
  })

  const config = (capabilities: Record<string, unknown>, fxEnv: Record<string, string> = {}) =>
    JSON.stringify({
      preset: 'base',
      plugins: {
        fx: {
          use: 'mcp-client',
          config: {
            serverName: 'fx',
            command: process.execPath,
            args: [SERVER],
            env: { MARK_FILE: p.path('marks' + (fxEnv.EXTRA ?? '')), ...fxEnv },
          },
        },
        pkgs: { use: 'exec-tools', config: { dirs: [p.path('packages')] } },
        skills: { config: { dirs: [p.path('skills')] } },
        capabilities: { config: capabilities },
      },
    })
  const starts = () =>
    existsSync(p.path('marks'))
      ? readFileSync(p.path('marks'), 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('start '))
      : []
  const audit = (): AuditEntry[] => readAudit(p.path('.yoke/audit.jsonl'))
  const edit = async (capabilities: Record<string, unknown>, fxEnv?: Record<string, string>) => {
    p.write('yoke.config.yaml', config(capabilities, fxEnv))
    await yoke.reload()
  }
  const server = () =>
    yoke
      .get('mcp')!
      .list()
      .find((s) => s.name === 'fx')
  const textTools = () =>
    yoke
      .get('execTools')!
      .list()
      .find((e) => e.id === 'text-tools')
  const tools = () => yoke.tools().map((t) => t.name)
  /** A project with a skill, a copy of text-tools and the fixture server, composed and connected. */
  const start = async () => {
    p = tempProject({ 'skills/tidy/SKILL.md': SKILL })
    cpSync(join(PACKAGES, 'text-tools'), p.path('packages/text-tools'), { recursive: true })
    p.write('yoke.config.yaml', config({}))
    yoke = createYoke({ cwd: p.dir, home: p.home, env: { ...process.env, YOKE_TRUST: '1' } })
    opened.push({ yoke, p })
    await yoke.ready
    await until('the server to connect', () => server()?.state === 'connected')
  }

  it('holds the server, the package and the skill; a reload keeps them held; the rule gone, they are back', async () => {
    await start()
    const pid = server()!.pid!
    assert.ok(tools().includes('mcp__fx__echo') && tools().includes('word_count'), tools().join())
    assert.ok(yoke.get('skills')!.get('tidy'))

    const withdrawn = [
      { id: 'mcp:fx', version: '1.0.0', why: 'fx 1.0.0 leaks' },
      { id: 'exec:text-tools', version: '1.0.0', why: 'miscounts' },
      { id: 'skill:tidy', version: '2', why: 'reorders wrongly' },
    ]
    await edit({ withdrawn })
    await until('the server to be held', () => server()?.state === 'held')
    assert.match(server()!.detail, /CAPABILITY_WITHDRAWN: .*fx 1\.0\.0 leaks/)
    assert.equal(server()!.server?.version, '1.0.0', 'what it was is kept while held')
    await until('its process to end', () => !alive(pid))
    await until('the package to be held', () => textTools()?.state === 'held')
    assert.match(textTools()!.why!, /miscounts/)
    assert.ok(!tools().includes('word_count') && !tools().includes('mcp__fx__echo'), tools().join())
    assert.equal(yoke.get('skills')!.get('tidy'), undefined, 'out of use')
    assert.deepEqual(
      yoke
        .get('skills')!
        .held()
        .map((s) => s.name),
      ['tidy'],
    )
    const unloaded = (id: string) =>
      audit().filter(
        (e) =>
          e.id === id && e.who === 'withdraw' && /^held: CAPABILITY_WITHDRAWN: /.test(e.why ?? ''),
      )
    await until('the audit lines', () =>
      ['mcp:fx', 'exec:text-tools', 'skill:tidy'].every((id) => unloaded(id).length === 1),
    )

    // the capabilities instance reloads with the same rules: the server never leaves held
    const states: string[] = []
    yoke.get('mcp')!.hooks.change.tap('test', (s) => void (s.name === 'fx' && states.push(s.state)))
    const spawned = starts().length
    await edit({ withdrawn, auditQuietMs: 50 })
    await yoke.get('capabilities')!.list() // let the reload's looks run
    assert.equal(server()?.state, 'held')
    assert.equal(textTools()?.state, 'held')
    assert.ok(
      states.every((s) => s === 'held'),
      states.join(', '),
    )
    assert.equal(starts().length, spawned, 'no new server process')
    // nothing says it came back, and nothing is recorded twice
    const since = audit().findIndex((e) => e.who === 'withdraw')
    const later = () =>
      audit()
        .slice(since)
        .filter((e) => ['mcp:fx', 'exec:text-tools', 'skill:tidy'].includes(e.id))
    assert.ok(
      later().every((e) => e.to === null),
      JSON.stringify(later()),
    )
    for (const id of ['mcp:fx', 'exec:text-tools', 'skill:tidy'])
      assert.equal(unloaded(id).length, 1, id)

    // the server's own instance reloads (its env changed): the new one connects, is seen, is held
    await edit({ withdrawn }, { EXTRA: '1' })
    const newer = () => (existsSync(p.path('marks1')) ? readFileSync(p.path('marks1'), 'utf8') : '')
    await until('the new instance to start its server', () => /^start (\d+)/.test(newer()))
    await until('it to be held again', () => server()?.state === 'held')
    const newPid = Number(/^start (\d+)/.exec(newer())![1])
    await until("the new instance's process to end", () => !alive(newPid))

    // a package edited while held to a version the rule does not name is let go, and loads
    const manifest = p.path('packages/text-tools/manifest.json')
    p.write(
      'packages/text-tools/manifest.json',
      readFileSync(manifest, 'utf8').replace('"1.0.0"', '"1.0.1"'),
    )
    await yoke.reload()
    await until('the fixed version to load', () => textTools()?.state === 'loaded')
    assert.equal(textTools()!.version, '1.0.1')

    await edit({}, { EXTRA: '1' })
    await until('the server to connect again', () => server()?.state === 'connected')
    assert.ok(alive(server()!.pid!), 'a live process again')
    await until('the package to load again', () => textTools()?.state === 'loaded')
    await until('the tools to be back', () => tools().includes('word_count'))
    assert.ok(yoke.get('skills')!.get('tidy'), 'back in use')
  })

  it('a pin that holds keeps a restarted server up: one not connected is not judged', async () => {
    await start()
    const fx = yoke
      .get('capabilities')!
      .list()
      .find((c) => c.id === 'mcp:fx')!
    await edit({ pins: [{ id: 'mcp:fx', version: fx.version, hash: fx.hash }] })
    const states: string[] = []
    yoke.get('mcp')!.hooks.change.tap('test', (s) => void (s.name === 'fx' && states.push(s.state)))
    yoke.get('mcp')!.restart('fx')
    await until('it to reconnect', () => states.includes('connected'))
    assert.ok(!states.includes('held'), states.join(', '))
    assert.equal(server()?.state, 'connected')
  })
})
