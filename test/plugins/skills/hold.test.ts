// Holds on skills (`skills.hold(name, why)`, what the capabilities plugin takes on a withdrawn
// skill): a held skill is out of list(), get(), the system prompt and skills_list; skill_read says
// it is withheld and why; holds are counted; the change hook says held and released; an edit
// while held keeps it held; a consumer's holds go with it; `yoke skills list` shows them.
import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { describe, it } from 'node:test'
import { type SkillChange, type SkillsApi } from '../../../plugins/skills/index.ts'
import { listPrompts, listResources } from '../../../plugins/mcp-server/skills.ts'
import { toPlugin, type Plugin, type ToolRuntime } from '../../../src/index.ts'
import { runYoke, suiteProjects } from '../../helpers/project.ts'
import { changeWhere, skillsKernel } from '../../helpers/skills.ts'

const project = suiteProjects()
const md = (name: string, description: string, extra = '') =>
  `---\nname: ${name}\ndescription: ${description}\n${extra}---\nThe ${name} steps.\n`

const files = {
  'skills/deploy/SKILL.md': md('deploy', 'Deploy the service to production.', 'version: 1.2.0\n'),
  'skills/lint/SKILL.md': md('lint', 'Lint the code before a commit.'),
  'skills/house-rules/SKILL.md': md('house-rules', 'Rules for every task.', 'always: true\n'),
  'skills/secret/SKILL.md': md('secret', 'Filtered out by except.'),
}

async function withSkills(watch = false) {
  const p = project(files)
  const made = await skillsKernel(p, { except: ['secret'], watch })
  const changes: SkillChange[] = []
  made.skills.hooks.change.tap('test', (c) => void changes.push(c))
  return { p, changes, ...made }
}

const names = (skills: SkillsApi) => skills.list().map((s) => s.name)
const text = (r: { content: readonly unknown[] }) => r.content.map((c: any) => c.text).join('')
const listed = async (rt: ToolRuntime) =>
  ((await rt.call('skills_list', {})).structured as any).skills.map((s: any) => s.name)

describe('skills.hold', () => {
  it('a held skill is out of list, get, the prompt, skills_list and the files; skill_read says why', async () => {
    const { kernel, skills, rt, prompt } = await withSkills()
    try {
      assert.match(prompt.render(), /<name>deploy<\/name>/)
      assert.ok((await listed(rt)).includes('deploy'))
      const release = skills.hold('deploy', 'withdrawn: skill:deploy@1.2.0')
      assert.ok(release)
      assert.deepEqual(names(skills), ['house-rules', 'lint'])
      assert.equal(skills.get('deploy'), undefined)
      assert.doesNotMatch(prompt.render(), /deploy/)
      assert.deepEqual(await listed(rt), ['house-rules', 'lint'])
      assert.equal(
        text(await rt.call('skills_list', { query: 'deploy production' })).includes('deploy:'),
        false,
      )
      const read = await rt.call('skill_read', { name: 'deploy' })
      assert.equal(read.status, 'TOOL_ERROR')
      assert.equal(text(read), 'the skill "deploy" is withheld: withdrawn: skill:deploy@1.2.0')
      const file = await rt.call('skill_read', { name: 'deploy', file: 'SKILL.md' })
      assert.match(text(file), /withheld: withdrawn/)
      assert.deepEqual(skills.readFile('deploy', 'SKILL.md'), {
        refused: 'the skill "deploy" is withheld: withdrawn: skill:deploy@1.2.0',
      })
      assert.equal(skills.body('deploy'), undefined)
      assert.deepEqual(skills.files('deploy'), [])
      assert.ok(!listPrompts(skills).some((p) => p.name === 'deploy'), 'nor an MCP prompt')
      assert.ok(!listResources(skills).some((r) => r.name.startsWith('deploy/')), 'nor a resource')
      // what the capabilities side hashes stays visible
      const [held, ...more] = skills.held()
      assert.equal(more.length, 0)
      assert.deepEqual(
        {
          name: held!.name,
          version: held!.version,
          description: held!.description,
          body: held!.body,
          holds: held!.holds,
        },
        {
          name: 'deploy',
          version: '1.2.0',
          description: 'Deploy the service to production.',
          body: 'The deploy steps.\n',
          holds: ['withdrawn: skill:deploy@1.2.0'],
        },
      )
      // another skill is untouched
      assert.match(text(await rt.call('skill_read', { name: 'lint' })), /The lint steps/)
      await release()
      assert.deepEqual(names(skills), ['deploy', 'house-rules', 'lint'])
      assert.deepEqual(skills.held(), [])
      assert.match(prompt.render(), /<name>deploy<\/name>/)
      assert.match(text(await rt.call('skill_read', { name: 'deploy' })), /The deploy steps/)
      assert.ok((await listed(rt)).includes('deploy'))
    } finally {
      await kernel.dispose()
    }
  })

  it('an always-on skill held leaves the always-on bodies', async () => {
    const { kernel, skills, prompt } = await withSkills()
    try {
      assert.match(prompt.render(), /The house-rules steps/)
      const release = skills.hold('house-rules', 'pinned at 2.0.0')!
      assert.doesNotMatch(prompt.render(), /house-rules/)
      await release()
      assert.match(prompt.render(), /The house-rules steps/)
    } finally {
      await kernel.dispose()
    }
  })

  it('holds are counted: released once of two, still held; the disposer works once', async () => {
    const { kernel, skills, changes } = await withSkills()
    try {
      const first = skills.hold('deploy', 'old rules')!
      const second = skills.hold('deploy', 'new rules')!
      assert.deepEqual(skills.held()[0]!.holds, ['old rules', 'new rules'])
      await first()
      await first()
      assert.equal(first.disposed, true)
      assert.equal(skills.get('deploy'), undefined, 'still held by the second')
      assert.deepEqual(skills.held()[0]!.holds, ['new rules'])
      assert.deepEqual(
        changes.map((c) => [c.held, c.released]),
        [[['deploy'], []]],
        'one announcement: the first hold',
      )
      await second()
      assert.ok(skills.get('deploy'))
      assert.deepEqual(
        changes.map((c) => [c.held, c.released]),
        [
          [['deploy'], []],
          [[], ['deploy']],
        ],
      )
      assert.deepEqual(
        changes.map((c) => [c.added, c.changed, c.removed]),
        [
          [[], [], []],
          [[], [], []],
        ],
      )
    } finally {
      await kernel.dispose()
    }
  })

  it('a hold on a skill not in use is undefined, and announces nothing', async () => {
    const { kernel, skills, changes } = await withSkills()
    try {
      assert.equal(skills.hold('nosuch', 'why'), undefined)
      assert.equal(skills.hold('secret', 'why'), undefined, 'filtered out by except')
      assert.deepEqual(skills.held(), [])
      assert.deepEqual(changes, [])
    } finally {
      await kernel.dispose()
    }
  })

  it('an edit of a held SKILL.md keeps it held, with its identity updated and the change announced', async () => {
    const { kernel, skills, p } = await withSkills(true)
    try {
      const release = skills.hold('deploy', 'withdrawn')!
      await changeWhere(
        skills,
        (c) => c.changed.includes('deploy'),
        () =>
          p.write('skills/deploy/SKILL.md', md('deploy', 'Deploy, edited.', 'version: 1.3.0\n')),
      )
      assert.equal(skills.get('deploy'), undefined, 'still held')
      assert.deepEqual(
        skills.held().map((s) => [s.name, s.version, s.description, s.holds]),
        [['deploy', '1.3.0', 'Deploy, edited.', ['withdrawn']]],
      )
      // the hold is on the name: removed, it is not listed; back, it is held again
      await changeWhere(
        skills,
        (c) => c.removed.includes('deploy'),
        () => rmSync(p.path('skills/deploy'), { recursive: true, force: true }),
      )
      assert.deepEqual(skills.held(), [])
      await changeWhere(
        skills,
        (c) => c.added.includes('deploy'),
        () => p.write('skills/deploy/SKILL.md', md('deploy', 'Deploy, back.')),
      )
      assert.equal(skills.get('deploy'), undefined, 'held again')
      assert.deepEqual(skills.held()[0]!.description, 'Deploy, back.')
      await release()
      assert.equal(skills.get('deploy')!.description, 'Deploy, back.')
    } finally {
      await kernel.dispose()
    }
  })

  it("a consuming instance's holds are its effects: they go when it goes", async () => {
    const { kernel, skills, changes } = await withSkills()
    try {
      const consumer = toPlugin({
        name: 'consumer',
        inject: ['skills'],
        apply(ctx: any) {
          ctx.skills.hold('lint', 'held by the consumer')
        },
      }) as Plugin
      kernel.spawn(consumer, {}, { key: 'consumer' })
      await kernel.settled()
      assert.deepEqual(
        skills.held().map((s) => s.name),
        ['lint'],
      )
      await kernel.remove(kernel.fibers.find((f) => f.key === 'consumer')!)
      assert.ok(skills.get('lint'))
      assert.deepEqual(changes.at(-1)!.released, ['lint'])
    } finally {
      await kernel.dispose()
    }
  })
})

describe('yoke skills list shows the held skills and why', () => {
  it('a held line with the reason, and `held` in --json; yoke skills show says it is held', async () => {
    const p = project({
      ...files,
      'yoke.config.yaml':
        'preset: base\nplugins:\n  skills:\n    config:\n      dirs: [skills]\n  holder:\n    use: ./holder.mjs\n',
      'holder.mjs': `export default {
  name: 'holder',
  inject: ['skills'],
  apply(ctx) {
    ctx.skills.hold('deploy', 'withdrawn: skill:deploy@1.2.0')
  },
}
`,
    })
    const opts = { cwd: p.dir, home: p.home }
    const [listed, human, show] = await Promise.all([
      runYoke(['skills', 'list', '--json'], opts),
      runYoke(['skills', 'list'], opts),
      runYoke(['skills', 'show', 'deploy'], opts),
    ])
    const json = JSON.parse(listed.stdout)
    assert.ok(!json.skills.some((s: any) => s.name === 'deploy'))
    assert.deepEqual(
      json.held.map((s: any) => [s.name, s.version, s.holds]),
      [['deploy', '1.2.0', ['withdrawn: skill:deploy@1.2.0']]],
    )
    assert.match(human.stdout, /^deploy\s+held: withdrawn: skill:deploy@1\.2\.0$/m)
    assert.match(human.stdout, /^lint\s+available$/m)
    assert.notEqual(show.code, 0)
    assert.match(
      show.stderr,
      /the skill "deploy" is held, out of use: withdrawn: skill:deploy@1\.2\.0/,
    )
  })
})
