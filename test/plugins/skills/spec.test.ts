// Spec parity: `yoke skills check` (the built CLI) gives skills-ref's verdicts on the shared
// fixture set test/fixtures/skills-spec, whose expected.json holds skills-ref's verdicts and
// reasons, and yoke's where it differs on purpose. The loader, lenient, still loads what it can.
import assert from 'node:assert/strict'
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { before, describe, it } from 'node:test'
import { makeFilter, SkillIndex } from '../../../plugins/skills/skill-index.ts'
import { ROOT, runYoke, suiteProjects } from '../../helpers/project.ts'

interface Case {
  skillsRef: 'valid' | 'invalid'
  reasons?: string[]
  yoke?: 'valid' | 'invalid'
  why?: string
  yokeSays?: string
  madeByTest?: string
}

const FIXTURES = join(ROOT, 'test', 'fixtures', 'skills-spec')
const { cases } = JSON.parse(readFileSync(join(FIXTURES, 'expected.json'), 'utf8')) as {
  cases: Record<string, Case>
}
const project = suiteProjects()

/** The fixtures, copied, plus what git should not carry: a SKILL.md that links to nothing. */
function fixtureRoot() {
  const p = project({ 'yoke.config.yaml': 'preset: base\n' })
  const root = p.path('spec')
  cpSync(FIXTURES, root, { recursive: true })
  mkdirSync(join(root, 'dangling-symlink'))
  symlinkSync('missing.md', join(root, 'dangling-symlink', 'SKILL.md'))
  return { p, root }
}

describe('yoke skills check gives the verdicts of skills-ref validate', () => {
  let report: {
    problems: Array<{ file: string; line: number; message: string; loads?: true }>
    warnings: Array<{ file: string; warning: string }>
  }
  let root: string
  const caseOf = (file: string) => relative(root, file).split(sep)[0]!

  before(async () => {
    const made = fixtureRoot()
    root = made.root
    const run = await runYoke(['skills', 'check', root, '--json'], {
      cwd: made.p.dir,
      home: made.p.home,
    })
    assert.equal(run.code, 1, run.stderr)
    report = JSON.parse(run.stdout)
  })

  it('every fixture folder has a written verdict, and every verdict a folder', () => {
    const folders = readdirSync(FIXTURES, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
    const made = Object.keys(cases).filter((c) => cases[c]!.madeByTest)
    assert.deepEqual([...folders, ...made].sort(), Object.keys(cases).sort())
    assert.ok(Object.keys(cases).length >= 20)
  })

  for (const [name, expected] of Object.entries(cases)) {
    const verdict = expected.yoke ?? expected.skillsRef
    it(`${name}: ${verdict}${expected.yoke ? ` (skills-ref: ${expected.skillsRef})` : ''}`, () => {
      const errors = report.problems.filter((p) => caseOf(p.file) === name)
      const warnings = report.warnings.filter((w) => caseOf(w.file) === name)
      assert.equal(
        errors.length ? 'invalid' : 'valid',
        verdict,
        `errors: ${JSON.stringify(errors)}`,
      )
      if (expected.yokeSays) {
        const said = [...errors.map((e) => e.message), ...warnings.map((w) => w.warning)]
        assert.ok(
          said.some((m) => m.includes(expected.yokeSays!)),
          `"${expected.yokeSays}" not in ${JSON.stringify(said)}`,
        )
      }
      for (const e of errors) assert.ok(e.file.startsWith(join(root, name) + sep), e.file)
    })
  }
})

describe('the loader stays lenient on the same fixtures', () => {
  it('loads what breaks only the spec (with the reason as a warning) and reports what it cannot load', () => {
    const { root } = fixtureRoot()
    const index = new SkillIndex([root], makeFilter(undefined, [])).scan()
    const loaded = new Set(index.skills.map((s) => s.dirName))
    for (const kept of [
      'always-no-description',
      'duplicate-key',
      'invalid-yaml',
      'byte-order-mark',
      'name-dir-mismatch',
      'Upper-Case',
      'octos-extensions',
    ])
      assert.ok(loaded.has(kept), kept)
    for (const out of [
      'missing-name',
      'empty-name',
      'missing-description',
      'no-frontmatter',
      'dangling-symlink',
      'lowercase-skill-md',
    ])
      assert.ok(!loaded.has(out), out)
    assert.equal(index.get('duplicate-key')!.description, 'The first description.')
    assert.equal(index.get('invalid-yaml')!.description, 'Use it when: the user asks')
    assert.equal(index.get('always-no-description')!.always, true)
    assert.deepEqual(index.get('metadata-nested')!.metadata, { author: 'example-org' })
    assert.match(index.get('metadata-nested')!.warnings.join(), /metadata "tags" is a list/)
    assert.deepEqual(index.get('metadata-nested')!.violations, [])
    const duplicate = index.get('duplicate-key')!.violations[0]!
    assert.equal(duplicate.line, 4, 'the line of the second description')
    const dangling = index.problems.find((p) => p.file.includes('dangling-symlink'))!
    assert.equal(dangling.file, join(root, 'dangling-symlink', 'SKILL.md'))
    assert.match(dangling.message, /symlink to "missing\.md", which does not exist/)
  })
})
