// A skill's Claude Code `when_to_use` is read from its frontmatter and searched with its
// description: a need only `when_to_use` states finds that skill, and a skill without one is found
// as before.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { Skill } from '../../../plugins/skills/parse.ts'
import { SkillRanker } from '../../../plugins/skills/ranking.ts'
import { makeFilter, SkillIndex } from '../../../plugins/skills/skill-index.ts'

const SKILLS: Record<string, string> = {
  'release-notes':
    'description: Write release notes from merged pull requests.\nwhen_to_use: when a changelog or a version tag is being prepared',
  'csv-insights': 'description: Summarise a CSV file with counts and outliers.',
}

describe("a skill's when_to_use", () => {
  let dir: string
  let skills: Skill[]
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'yoke-when-to-use-'))
    for (const [name, frontmatter] of Object.entries(SKILLS)) {
      mkdirSync(join(dir, name))
      writeFileSync(join(dir, name, 'SKILL.md'), `---\nname: ${name}\n${frontmatter}\n---\nbody\n`)
    }
    skills = new SkillIndex([{ dir }], makeFilter(undefined, [])).scan().skills
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('is read from the frontmatter, with no warning', () => {
    const notes = skills.find((s) => s.name === 'release-notes')!
    assert.equal(notes.whenToUse, 'when a changelog or a version tag is being prepared')
    assert.deepEqual(notes.warnings, [])
    assert.equal(skills.find((s) => s.name === 'csv-insights')!.whenToUse, undefined)
  })

  it('is searched: a need only it states finds the skill', () => {
    const ranker = new SkillRanker({ pinned: [], deferred: [], hidden: [] })
    const found = ranker.search(skills, 'prepare a changelog for the version tag', 5)
    assert.equal(found.candidates[0]?.item.name, 'release-notes')
    assert.equal(ranker.search(skills, 'csv outliers', 5).candidates[0]?.item.name, 'csv-insights')
  })
})
