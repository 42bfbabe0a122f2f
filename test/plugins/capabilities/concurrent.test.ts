// Commands that edit the project config, run at once as real processes (bin runs dist: npm run
// build first): each reads the list it changes under the file's lock (src/cli/edit.ts), so none
// writes back a list read before another's edit. Six `yoke withdraw` → six entries and six audit
// lines; pins and unpins at once → exactly the pins asked for; two `yoke policy import --write`
// of different settings → both rule sets.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { parse } from 'yaml'
import { readAudit } from '../../../plugins/capabilities/audit.ts'
import { runYoke, suiteProjects, type Project, type RunResult } from '../../helpers/project.ts'

const skill = (name: string) =>
  `---\nname: ${name}\ndescription: The ${name} skill.\n---\nDo ${name}.\n`

describe('config-editing commands at once: every edit lands', () => {
  const made = suiteProjects()
  // each command composes the project: on a loaded machine six at once take a while
  const yoke = (p: Project, ...args: string[]) =>
    runYoke(args, { cwd: p.dir, home: p.home, timeoutMs: 180_000 })
  const config = (p: Project) => parse(readFileSync(p.path('yoke.config.yaml'), 'utf8'))
  const ok = (results: RunResult[]) =>
    results.forEach((r) => assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`))

  it('six withdraws at once: six entries in the config, six audit lines', async () => {
    const p = made({ 'yoke.config.yaml': '# mine\npreset: base\nplugins: {}\n' })
    const ids = ['t1', 't2', 't3', 't4', 't5', 't6']
    ok(await Promise.all(ids.map((id) => yoke(p, 'withdraw', `${id}@1.0.0`, '--why', `no ${id}`))))
    const withdrawn = config(p).plugins.capabilities.config.withdrawn as Array<{ id: string }>
    assert.deepEqual(withdrawn.map((w) => w.id).sort(), ids, JSON.stringify(withdrawn))
    assert.deepEqual(
      readAudit(p.path('.yoke/audit.jsonl'))
        .filter((e) => e.who === 'withdraw')
        .map((e) => e.id)
        .sort(),
      ids,
    )
    assert.match(readFileSync(p.path('yoke.config.yaml'), 'utf8'), /^# mine\n/, 'comments kept')
    // the same version again updates its reason rather than adding a second entry
    ok([await yoke(p, 'withdraw', 't1@1.0.0', '--why', 'still no t1')])
    const again = config(p).plugins.capabilities.config.withdrawn as Array<{ id: string }>
    assert.equal(again.length, 6)
    assert.deepEqual(
      again.find((w) => w.id === 't1'),
      { id: 't1', version: '1.0.0', why: 'still no t1' },
    )
  })

  it('pins and unpins at once: exactly the pins asked for', async () => {
    const names = ['s1', 's2', 's3', 's4', 's5', 's6', 's7', 's8']
    const p = made({
      'yoke.config.yaml': 'preset: base\nplugins:\n  skills:\n    config: { dirs: [skills] }\n',
      ...Object.fromEntries(names.map((n) => [`skills/${n}/SKILL.md`, skill(n)])),
    })
    const pins = () =>
      ((config(p).plugins.capabilities?.config?.pins ?? []) as Array<{ id: string }>)
        .map((x) => x.id)
        .sort()
    const first = names.slice(0, 6).map((n) => `skill:${n}`)
    ok(await Promise.all(first.map((id) => yoke(p, 'pin', id))))
    assert.deepEqual(pins(), first)
    ok(
      await Promise.all([
        yoke(p, 'unpin', 'skill:s1'),
        yoke(p, 'unpin', 'skill:s2'),
        yoke(p, 'unpin', 'skill:s3'),
        yoke(p, 'pin', 'skill:s7'),
        yoke(p, 'pin', 'skill:s8'),
      ]),
    )
    assert.deepEqual(pins(), ['skill:s4', 'skill:s5', 'skill:s6', 'skill:s7', 'skill:s8'])
    // the last unpins leave an empty list, not the key's absence (other layers' pins stay out)
    ok(await Promise.all(['s4', 's5', 's6', 's7', 's8'].map((n) => yoke(p, 'unpin', `skill:${n}`))))
    assert.deepEqual(config(p).plugins.capabilities.config.pins, [])
  })

  it('two policy imports at once: both rule sets are written', async () => {
    const p = made({
      'yoke.config.yaml': 'preset: base\nplugins: {}\n',
      'a.json': JSON.stringify({ permissions: { deny: ['mcp__a__drop'] } }),
      'b.json': JSON.stringify({ permissions: { deny: ['mcp__b__drop'] } }),
    })
    ok(
      await Promise.all(['a.json', 'b.json'].map((f) => yoke(p, 'policy', 'import', f, '--write'))),
    )
    const deny = config(p).plugins.policy.config.deny as unknown[]
    assert.ok(deny.includes('mcp__a__drop') && deny.includes('mcp__b__drop'), JSON.stringify(deny))
  })
})
