// What the skills watcher watches: the skill folders, and in each only the files the index reads
// (SKILL.md, manifest.json). A skill's scripts/, references/ and other files would cost a watcher
// each (~4 KB of RSS) for a change the index ignores; edits to what it reads are still seen.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import type { SkillChange } from '../../../plugins/skills/index.ts'
import { unwatched } from '../../../plugins/skills/skills.ts'
import { suiteProjects } from '../../helpers/project.ts'
import { changeWhere, skillsKernel } from '../../helpers/skills.ts'

const project = suiteProjects()
const md = (name: string, description: string) =>
  `---\nname: ${name}\ndescription: ${description}\n---\nSteps.\n`

describe('the skills watcher', () => {
  it('watches roots, skill folders and what the index reads; not a skill’s other files and folders', () => {
    const root = join('/p', 'skills')
    const inner = join(root, 'vendor')
    const roots = [inner, root]
    for (const watched of [
      '/p', // above a root
      root,
      inner,
      join(root, 'x'),
      join(root, 'x', 'SKILL.md'),
      join(root, 'x', 'manifest.json'),
      join(inner, 'tool', 'SKILL.md'), // nested roots: what the inner root reads
      join('/elsewhere', 'file'),
    ])
      assert.equal(unwatched(roots, watched), false, watched)
    for (const left of [
      join(root, 'x', 'scripts'),
      join(root, 'x', 'scripts', 'run.sh'),
      join(root, 'x', 'reference.md'),
      join(root, 'x', 'references', 'deep', 'SKILL.md'),
      join(inner, 'tool', 'scripts'),
    ])
      assert.equal(unwatched(roots, left), true, left)
  })

  it('an edit to SKILL.md beside scripts and references is seen; a new skill folder too', async () => {
    const p = project({
      'skills/x/SKILL.md': md('x', 'v1'),
      'skills/x/reference.md': '# Reference',
      'skills/x/scripts/run.sh': 'echo run',
    })
    const { kernel, skills } = await skillsKernel(p, { watch: true })
    try {
      const seen = (pick: (c: SkillChange) => boolean, act: () => void) =>
        changeWhere(skills, pick, act)
      await seen(
        (c) => c.changed.includes('x'),
        () => p.write('skills/x/SKILL.md', md('x', 'v2')),
      )
      assert.equal(skills.get('x')!.description, 'v2')
      await seen(
        (c) => c.added.includes('y'),
        () => p.write('skills/y/SKILL.md', md('y', 'new')),
      )
      await seen(
        (c) => c.changed.includes('y'),
        () => p.write('skills/y/manifest.json', '{"name":"y","tools":[]}'),
      )
      assert.equal(skills.get('y')!.hasTools, true)
    } finally {
      await kernel.dispose()
    }
  })
})
