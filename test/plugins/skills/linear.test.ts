// Text from outside (a SKILL.md's frontmatter, a tool's or skill's description, a query) is read
// in time linear in its length, and never handed to yaml's parser when it nests past any real
// frontmatter (60,000 open brackets cost it about a second each). Two regexes were not linear: `allowed-tools` with many "(" left open and a
// long run of capitals in anything the search index splits into words (each cost its length
// squared: 64,000 characters took about 6 s, 100,000 capitals 60 s, with the event loop stalled).
// The bounds are generous (a loaded machine) and below what the quadratic cost on these inputs.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseSkill, type Skill } from '../../../plugins/skills/parse.ts'
import { SearchIndex, words } from '../../../plugins/tool-search/api.ts'

const BOUND_MS = 5000

const timed = <T>(fn: () => T): [T, number] => {
  const started = performance.now()
  const value = fn()
  return [value, performance.now() - started]
}

describe('outside text is read in linear time', () => {
  it('allowed-tools with 32,000 "(" left open parses at once, with the entries as before', () => {
    const open = 'a('.repeat(32_000) // 64,000 characters: the frontmatter is read up to 65,536
    const [skill, ms] = timed(
      () =>
        parseSkill(
          `---\nname: open\ndescription: many open parentheses\nallowed-tools: ${open}\n---\nbody\n`,
          { file: '/s/open/SKILL.md', dir: '/s/open', dirName: 'open' } as never,
        ) as Skill,
    )
    assert.ok(ms < BOUND_MS / 2, `took ${Math.round(ms)} ms`)
    assert.equal(skill.allowedTools?.length, 32_000)
    const usual = parseSkill(
      '---\nname: usual\ndescription: d\nallowed-tools: Bash(git add:*) Read, Edit(src/**) Write(\n---\n',
      { file: '/s/usual/SKILL.md', dir: '/s/usual', dirName: 'usual' } as never,
    ) as Skill
    assert.deepEqual(usual.allowedTools, ['Bash(git add:*)', 'Read', 'Edit(src/**)', 'Write'])
  })

  it('100,000 capitals in a description are indexed and searched at once; camel case still splits', () => {
    const index = new SearchIndex()
    const [, ms] = timed(() => {
      index.set({ name: 'shouting', description: 'A'.repeat(100_000) })
      return index.search('A'.repeat(150) + ' shouting', 5)
    })
    assert.ok(ms < BOUND_MS, `took ${Math.round(ms)} ms`)
    assert.deepEqual(words('HTTPServer getURLForID'), ['http', 'server', 'get', 'url', 'for', 'id'])
  })

  it('frontmatter with 60,000 open brackets is read line by line, never by YAML (ten of them at once)', () => {
    const text = `---\nname: deep\ndescription: d\nx: ${'['.repeat(60_000)}\n---\nbody\n`
    const [skills, ms] = timed(() =>
      Array.from(
        { length: 10 },
        () =>
          parseSkill(text, {
            file: '/s/deep/SKILL.md',
            dir: '/s/deep',
            dirName: 'deep',
          } as never) as Skill,
      ),
    )
    assert.ok(ms < BOUND_MS, `took ${Math.round(ms)} ms`)
    const [skill] = skills
    assert.equal(skill!.name, 'deep')
    assert.equal(skill!.description, 'd')
    assert.ok(
      skill!.violations.some((v) => /nests "\[" and "\{" deeper than 64 levels/.test(v.message)),
      JSON.stringify(skill!.violations),
    )
  })
})
