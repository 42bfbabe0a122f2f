// skills_list(query) over real public skills (issue 32): 32 SKILL.md frontmatters from three public
// collections (public-skills.json: anthropics/skills, obra/superpowers, openai/skills, each at a
// commit), written to skill roots with a namespace each, scanned by the skill index and ranked by
// the skills plugin's ranker, which is tool-search's index (the same words, WordNet, exact names
// and calibrated no-match as tool_search). A query that names a skill finds it first: its name
// alone, its name inside a sentence, its words spelled apart; a need its description states finds
// it in the first three; a need none serves is "no match".
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import type { Skill } from '../../../plugins/skills/parse.ts'
import { SkillRanker } from '../../../plugins/skills/ranking.ts'
import { bareName, makeFilter, SkillIndex } from '../../../plugins/skills/skill-index.ts'

interface Collections {
  collections: Array<{
    repository: string
    commit: string
    skills: Array<{ path: string; frontmatter: string }>
  }>
}

const HERE = dirname(fileURLToPath(import.meta.url))
const PUBLIC = JSON.parse(readFileSync(join(HERE, 'public-skills.json'), 'utf8')) as Collections

describe('skills_list(query) over 32 real public skills', () => {
  let dir: string
  let skills: Skill[]
  const ranker = new SkillRanker({ pinned: [], deferred: [], hidden: [] })
  const search = (query: string) => ranker.search(skills, query, 5)
  const first = (query: string) => search(query).candidates[0]?.item.name

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'yoke-public-skills-'))
    const roots = PUBLIC.collections.map(({ repository, skills: list }) => {
      const root = {
        dir: join(dir, repository.split('/')[0]!),
        namespace: repository.split('/')[0]!,
      }
      for (const { path, frontmatter } of list) {
        const skillDir = join(root.dir, path.split('/').at(-2)!)
        mkdirSync(skillDir, { recursive: true })
        writeFileSync(
          join(skillDir, 'SKILL.md'),
          `---\n${frontmatter}\n---\n(the body is left out: ${repository}/${path})\n`,
        )
      }
      return root
    })
    skills = new SkillIndex(roots, makeFilter(undefined, [])).scan().skills
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('indexes all 32', () => {
    assert.equal(skills.length, 32, skills.map((s) => s.name).join(' '))
  })

  it('a query that is a skill name finds that skill first', () => {
    for (const skill of skills) {
      const name = bareName(skill)
      const found = search(name)
      assert.equal(found.noMatch, false, name)
      // skill-creator is in two collections: either is the one named
      assert.equal(bareName(found.candidates[0]!.item), name, name)
      assert.equal(first(skill.name), skill.name, `${skill.name}, namespaced`)
    }
  })

  it('a sentence naming a skill, or its words spelled apart, finds it first', () => {
    for (const skill of skills) {
      const name = bareName(skill)
      for (const query of [
        `please use the ${name} skill for this`,
        `use ${name.replace(/-/g, ' ')} here`,
      ]) {
        const found = search(query)
        assert.equal(found.noMatch, false, query)
        assert.equal(bareName(found.candidates[0]!.item), name, query)
      }
    }
  })

  it('a need a description states finds its skill in the first three', () => {
    for (const [query, name] of [
      ['I have a bug and a failing test, find the root cause', 'systematic-debugging'],
      ['test my local web app in a browser with Playwright', 'webapp-testing'],
      ['make an animated GIF for Slack', 'slack-gif-creator'],
      ['fix the failing GitHub Actions checks on my PR', 'gh-fix-ci'],
      ['build an MCP server for an API', 'mcp-builder'],
    ] as const) {
      const found = search(query)
      assert.equal(found.noMatch, false, query)
      const names = found.candidates.slice(0, 3).map((c) => bareName(c.item))
      assert.ok(names.includes(name), `${query} → ${names.join(', ')}`)
    }
  })

  it('a need none of them serves is no match', () => {
    assert.equal(search('order a pepperoni pizza for tonight').noMatch, true)
  })
})
