// Skills other plugins contribute (`skills.contribute`: an MCP server's): the same parser as on
// disk, namespaced, shadowed by a directory's skill of the same name, replaced per source in one
// change (unchanged skills keep their objects), removed by the disposer unless replaced since,
// filtered and held like any other, files read through the source.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { ContributedSkill, SkillChange } from '../../../plugins/skills/index.ts'
import { suiteProjects } from '../../helpers/project.ts'
import { skillsKernel } from '../../helpers/skills.ts'

const project = suiteProjects()
const md = (name: string, description: string, body = `Do ${name}.\n`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}`
const remote = (name: string, content: string, files: Record<string, string> = {}) =>
  ({
    content,
    location: `skill://${name}/SKILL.md`,
    dirName: name,
    files: Object.keys(files),
    read: async (file: string) => {
      if (file === 'boom') throw new Error('the server went away')
      return Buffer.from(files[file]!)
    },
  }) satisfies ContributedSkill

describe('skills.contribute', () => {
  it('parses, namespaces, shadows, replaces and removes; problems name the source', async () => {
    const p = project({ 'skills/shared/SKILL.md': md('shared', 'On disk.') })
    const { kernel, skills, rt } = await skillsKernel(p)
    try {
      const changes: SkillChange[] = []
      skills.hooks.change.tap('test', (c) => void changes.push(c))
      const one = remote('one', md('one', 'The first remote skill.'), { 'ref.md': 'the ref\n' })
      const first = skills.contribute('MCP server srv', {
        namespace: 'srv',
        skills: [
          one,
          remote('nodesc', '---\nname: nodesc\n---\nbody\n'),
          remote('odd', md('odd', 'An unknown key.').replace('---\nB', 'colour: red\n---\nB')),
        ],
        problems: [{ location: 'skill://gone/SKILL.md', message: 'refused by the client' }],
      })
      assert.deepEqual(
        skills.list().map((s) => s.name),
        ['shared', 'srv:odd', 'srv:one'],
      )
      assert.deepEqual(changes.at(-1)!.added.sort(), ['srv:odd', 'srv:one'])
      const problems = skills.problems()
      assert.deepEqual(
        problems.map((q) => [q.file, q.source]),
        [
          ['skill://gone/SKILL.md', 'MCP server srv'],
          ['skill://nodesc/SKILL.md', 'MCP server srv'],
        ],
      )
      assert.match(problems[1]!.message, /no description/)
      const oneSkill = skills.get('srv:one')!
      assert.equal(oneSkill.file, 'skill://one/SKILL.md')
      assert.deepEqual(skills.files('srv:one'), ['ref.md'])
      assert.deepEqual(await skills.read('srv:one', 'ref.md'), { bytes: Buffer.from('the ref\n') })
      assert.match(
        JSON.stringify(await skills.read('srv:one', 'other.md')),
        /"refused":"the skill \\"srv:one\\" has no file \\"other.md\\"/,
      )
      const r = await rt.call('skill_read', { name: 'srv:one', file: 'ref.md' })
      assert.equal(r.status, 'ok')

      // a new set from the same source: one change; the unchanged skill keeps its object
      const second = skills.contribute('MCP server srv', {
        namespace: 'srv',
        skills: [one, remote('two', md('two', 'A second remote skill.'), { boom: '' })],
      })
      assert.equal(skills.get('srv:one'), oneSkill)
      assert.deepEqual(changes.at(-1), {
        added: ['srv:two'],
        changed: [],
        removed: ['srv:odd'],
        held: [],
        released: [],
      })
      const boom = await rt.call('skill_read', { name: 'srv:two', file: 'boom' })
      assert.equal(boom.status, 'TOOL_ERROR')
      assert.match(JSON.stringify(boom.content), /could not be read: the server went away/)
      first() // replaced since: does nothing
      assert.ok(skills.get('srv:two'))

      // a name a directory has shadows a contributed one, reported
      skills.contribute('plain', { skills: [remote('shared', md('shared', 'Remote.'))] })
      assert.equal(skills.get('shared')!.description, 'On disk.')
      assert.deepEqual(
        skills.shadowed().map((s) => s.shadowed),
        ['skill://shared/SKILL.md'],
      )
      // held like any other
      const release = skills.hold('srv:two', 'withdrawn')!
      assert.ok(!skills.get('srv:two'))
      release()
      second()
      assert.deepEqual(
        skills.list().map((s) => s.name),
        ['shared'],
      )
    } finally {
      await kernel.dispose()
    }
  })

  it('only and except apply to contributed skills', async () => {
    const p = project({})
    const { kernel, skills } = await skillsKernel(p, { except: ['x:hidden'] })
    try {
      skills.contribute('x', {
        namespace: 'x',
        skills: [remote('kept', md('kept', 'Kept.')), remote('hidden', md('hidden', 'Filtered.'))],
      })
      assert.deepEqual(
        skills.list().map((s) => s.name),
        ['x:kept'],
        'only/except apply to contributed skills too',
      )
    } finally {
      await kernel.dispose()
    }
  })
})
