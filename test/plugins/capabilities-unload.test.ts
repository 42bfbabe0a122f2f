// A withdrawal unloads what it withdraws (plugins/capabilities/unload.ts): on a real composition,
// a real stdio MCP server's process ends, an exec package's tools and hooks go, a skill leaves the
// catalogue; each is recorded in the audit log once; a reload of the capabilities instance with
// the same rules brings nothing back up in between (no new server process); removing the rule
// loads them all again.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { AuditEntry } from '../../plugins/capabilities/api.ts'
import { readAudit } from '../../plugins/capabilities/audit.ts'
import { createYoke, type Yoke } from '../../src/index.ts'
import { ROOT, tempProject, type Project } from '../helpers/project.ts'
import { until } from '../helpers/until.ts'

const SERVER = join(ROOT, 'test/fixtures/mcp/server.mjs')
const PACKAGES = join(ROOT, 'examples/packages')
const SKILL = '---\nname: tidy\ndescription: Tidy the notes.\nversion: "2"\n---\nSort the notes.\n'

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('capabilities: a withdrawal unloads what it withdraws', () => {
  let p: Project
  let yoke: Yoke
  after(async () => {
    await yoke?.close()
    p?.cleanup()
  })

  const config = (capabilities: Record<string, unknown>) =>
    JSON.stringify({
      preset: 'base',
      plugins: {
        fx: {
          use: 'mcp-client',
          config: {
            serverName: 'fx',
            command: process.execPath,
            args: [SERVER],
            env: { MARK_FILE: p.path('marks') },
          },
        },
        pkgs: { use: 'exec-tools', config: { dirs: [PACKAGES] } },
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
  const edit = async (capabilities: Record<string, unknown>) => {
    p.write('yoke.config.yaml', config(capabilities))
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

  it('holds the server, the package and the skill; a reload keeps them held; the rule gone, they are back', async () => {
    p = tempProject({ 'skills/tidy/SKILL.md': SKILL })
    p.write('yoke.config.yaml', config({}))
    yoke = createYoke({ cwd: p.dir, home: p.home, env: { ...process.env, YOKE_TRUST: '1' } })
    await yoke.ready
    await until('the server to connect', () => server()?.state === 'connected')
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
    await until('the audit lines', () =>
      ['mcp:fx', 'exec:text-tools', 'skill:tidy'].every((id) =>
        audit().some((e) => e.id === id && e.who === 'withdraw' && /^unloaded: /.test(e.why ?? '')),
      ),
    )

    // the capabilities instance reloads with the same rules: nothing comes up in between
    const spawned = starts().length
    await edit({ withdrawn, auditQuietMs: 50 })
    assert.equal(server()?.state, 'held')
    assert.equal(textTools()?.state, 'held')
    assert.equal(starts().length, spawned, 'no new server process')
    const unloaded = audit().filter((e) => /^unloaded: /.test(e.why ?? ''))
    assert.equal(unloaded.length, 3, 'recorded once, not again at the reload')

    await edit({})
    await until('the server to connect again', () => server()?.state === 'connected')
    assert.equal(starts().length, spawned + 1)
    await until('the package to load again', () => textTools()?.state === 'loaded')
    await until('the tools to be back', () => tools().includes('word_count'))
    assert.ok(yoke.get('skills')!.get('tidy'), 'back in use')
  })
})
