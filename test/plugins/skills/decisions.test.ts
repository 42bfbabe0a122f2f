// The skills instance's decisions, without a kernel: which skill of a name wins (the
// highest-priority root), which is shadowed, that a namespaced root shadows nothing, and that a
// held skill stays indexed but leaves every list until its last hold goes.
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { SkillChange } from '../../../plugins/skills/api.ts'
import { Skills, type SkillsHost } from '../../../plugins/skills/skills.ts'
import { removeTree, tempDir } from '../../helpers/temp.ts'

const md = (name: string, description: string) =>
  `---\nname: ${name}\ndescription: ${description}\n---\nThe ${name} steps.\n`

const made: string[] = []
after(() => Promise.all(made.map(removeTree)))

function tree(files: Record<string, string>): string {
  const dir = tempDir('yoke-skills-decisions-')
  made.push(dir)
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  return dir
}

function skillsIn(dir: string, dirs: string[], except: string[] = []) {
  const logs: string[] = []
  const stop = new AbortController()
  const log = (m: string) => void logs.push(m)
  const host: SkillsHost = {
    logger: { info: log, warn: log, error: log },
    signal: stop.signal,
    projectDir: dir,
  }
  const skills = new Skills({ dirs, except, watch: false }, host).start()
  return { skills, logs, stop }
}

describe('skills: which skill wins', () => {
  it('the highest-priority root wins a name; the other is shadowed, and said so', () => {
    const dir = tree({
      'project/commit/SKILL.md': md('commit', 'The project one.'),
      'user/commit/SKILL.md': md('commit', 'The user one.'),
      'user/plain/SKILL.md': md('plain', 'Only the user has it.'),
    })
    const { skills, logs } = skillsIn(dir, ['project', 'user'])
    assert.equal(skills.get('commit')?.description, 'The project one.')
    assert.deepEqual(
      skills.list().map((s) => s.name),
      ['commit', 'plain'],
    )
    const [shadowing] = skills.index.shadowed
    assert.equal(shadowing?.winner, join(dir, 'project/commit/SKILL.md'))
    assert.equal(shadowing?.shadowed, join(dir, 'user/commit/SKILL.md'))
    assert.ok(logs.some((l) => l.includes('is shadowed by')))
    assert.deepEqual(skills.listing().shadowed, skills.index.shadowed)
  })

  it('an added root comes last, and with a namespace shadows nothing (a clash is reported)', () => {
    const dir = tree({
      'project/commit/SKILL.md': md('commit', 'The project one.'),
      'extra/commit/SKILL.md': md('commit', 'The extra one.'),
      'plugin/commit/SKILL.md': md('commit', 'The plugin one.'),
    })
    const { skills } = skillsIn(dir, ['project'])
    const changes: SkillChange[] = []
    skills.hooks.change.tap('test', (c) => void changes.push(c))
    skills.addRoot('extra')
    assert.equal(skills.get('commit')?.description, 'The project one.')
    assert.equal(skills.index.shadowed.length, 1)
    const remove = skills.addRoot('plugin', { namespace: 'tools', source: 'plugin tools' })
    assert.equal(skills.get('tools:commit')?.description, 'The plugin one.')
    assert.deepEqual(
      skills.index.clashes.map((c) => c.name),
      ['commit'],
    )
    assert.deepEqual(changes.at(-1)?.added, ['tools:commit'])
    remove()
    remove() // once
    assert.equal(skills.get('tools:commit'), undefined)
    assert.deepEqual(changes.at(-1)?.removed, ['tools:commit'])
    assert.throws(() => skills.addRoot('plugin', { namespace: 'two words' }), /one word/)
  })

  it('the filter leaves a skill out before it can win', () => {
    const dir = tree({
      'project/commit/SKILL.md': md('commit', 'The project one.'),
      'user/deploy/SKILL.md': md('deploy', 'Deploy.'),
    })
    const { skills } = skillsIn(dir, ['project', 'user'], ['deploy'])
    assert.deepEqual(
      skills.list().map((s) => s.name),
      ['commit'],
    )
  })
})

describe('skills: holds', () => {
  it('a held skill leaves every list, is withheld with its reasons, and comes back at the last release', () => {
    const dir = tree({ 'project/deploy/SKILL.md': md('deploy', 'Deploy.') })
    const { skills } = skillsIn(dir, ['project'])
    const changes: SkillChange[] = []
    skills.hooks.change.tap('test', (c) => void changes.push(c))
    const first = skills.hold('deploy', 'withdrawn: skill:deploy@1')!
    const second = skills.hold('deploy', 'audit')!
    assert.equal(skills.get('deploy'), undefined)
    assert.deepEqual(skills.list(), [])
    assert.ok(skills.index.get('deploy'), 'still indexed: its edits are read')
    assert.deepEqual(skills.held()[0]?.holds, ['withdrawn: skill:deploy@1', 'audit'])
    assert.match(skills.withheld('deploy')!, /withheld: withdrawn: skill:deploy@1; audit/)
    assert.deepEqual(skills.listing().held?.[0]?.holds, ['withdrawn: skill:deploy@1', 'audit'])
    assert.match(skills.summary().note!, /0 available · 1 held/)
    void first()
    assert.equal(skills.get('deploy'), undefined, 'one hold still stands')
    void second()
    assert.equal(skills.get('deploy')?.name, 'deploy')
    assert.deepEqual(
      changes.map((c) => [c.held, c.released]),
      [
        [['deploy'], []],
        [[], ['deploy']],
      ],
    )
  })

  it('no hold on a name not indexed, nor once the instance ended', () => {
    const dir = tree({ 'project/deploy/SKILL.md': md('deploy', 'Deploy.') })
    const { skills, stop } = skillsIn(dir, ['project'])
    assert.equal(skills.hold('nothing', 'why'), undefined)
    stop.abort()
    assert.equal(skills.hold('deploy', 'why'), undefined)
    assert.equal(typeof skills.addRoot('project'), 'function')
    assert.equal(skills.index.roots.length, 1, 'an ended instance takes no roots')
  })
})
