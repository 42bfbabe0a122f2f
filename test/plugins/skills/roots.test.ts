// Roots other plugins add to the skills service (`addRoot`): namespaced names everywhere (tools,
// catalog, MCP prompts and resources), no shadowing across namespaces, clashes reported, the
// disposer, hot reload inside an added root, and a consumer's roots going with it.
import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { describe, it } from 'node:test'
import { type SkillChange, type SkillsApi } from '../../../plugins/skills/index.ts'
import {
  getPrompt,
  listPrompts,
  listResources,
  readResource,
} from '../../../plugins/mcp-server/skills.ts'
import { toPlugin, type Plugin } from '../../../src/index.ts'
import { runYoke, suiteProjects } from '../../helpers/project.ts'
import { changeWhere, skillsKernel } from '../../helpers/skills.ts'

const project = suiteProjects()
const md = (name: string, description: string, body = `The ${name} steps.\n`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}`

const files = {
  'skills/commit/SKILL.md': md('commit', 'Write a commit message (the project one).'),
  'skills/plain/SKILL.md': md('plain', 'A plain skill of the project.'),
  'alpha/skills/commit/SKILL.md': md('commit', 'Write a commit message (alpha).', 'Alpha body.\n'),
  'alpha/skills/nameless/SKILL.md':
    '---\ndescription: A Claude Code skill without a name.\n---\nx\n',
  'alpha/skills/broken/SKILL.md': '---\nname: broken\n---\nno description\n',
  'beta/skills/commit/SKILL.md': md('commit', 'Write a commit message (beta).', 'Beta body.\n'),
  'extra/plain/SKILL.md': md('plain', 'A plain skill from an added root without a namespace.'),
}

async function withSkills(watch = false) {
  const p = project(files)
  const made = await skillsKernel(p, { watch })
  const changes: SkillChange[] = []
  made.skills.hooks.change.tap('test', (c) => void changes.push(c))
  return { p, changes, ...made }
}

const names = (skills: SkillsApi) => skills.list().map((s) => s.name)
const text = (r: { content: readonly unknown[] }) => r.content.map((c: any) => c.text).join('')

describe('skills.addRoot', () => {
  it('two namespaces with the same skill names: both visible, namespaced, in every view', async () => {
    const { kernel, skills, changes, rt, prompt, p } = await withSkills()
    try {
      skills.addRoot('alpha/skills', { namespace: 'alpha', source: 'plugin alpha' })
      skills.addRoot('beta/skills', { namespace: 'beta', source: 'plugin beta' })
      assert.deepEqual(names(skills), [
        'alpha:commit',
        'alpha:nameless',
        'beta:commit',
        'commit',
        'plain',
      ])
      assert.deepEqual(changes[0]!.added.sort(), ['alpha:commit', 'alpha:nameless'])
      assert.deepEqual(changes[1]!.added, ['beta:commit'])
      assert.deepEqual(skills.shadowed(), [], 'no namespace shadows another')
      const alpha = skills.get('alpha:commit')!
      assert.equal(alpha.namespace, 'alpha')
      assert.equal(alpha.source, 'plugin alpha')
      assert.deepEqual(alpha.violations, [], 'its name in SKILL.md is "commit", as its folder')
      assert.match(skills.get('alpha:nameless')!.warnings.join(), /directory's name "nameless"/)
      assert.deepEqual(
        skills.clashes().map((c) => [c.name, c.skills.map((s) => s.name)]),
        [['commit', ['alpha:commit', 'beta:commit', 'commit']]],
      )
      const broken = skills.problems().find((p) => p.file.includes('broken'))!
      assert.equal(broken.source, 'plugin alpha')
      assert.deepEqual(
        skills.roots.slice(-2),
        [p.path('alpha/skills'), p.path('beta/skills')],
        'added roots come last, in the order added',
      )

      const read = await rt.call('skill_read', { name: 'beta:commit' })
      assert.equal(read.status, 'ok')
      assert.match(
        text(read),
        /^<skill_content name="beta:commit">\nBeta body\.\n<\/skill_content>/,
      )
      assert.equal(
        text(await rt.call('skill_read', { name: 'commit' })).includes('The commit steps.'),
        true,
        'the bare name is still the project skill',
      )
      const listed = await rt.call('skills_list', {})
      assert.ok((listed.structured as any).skills.some((s: any) => s.name === 'alpha:commit'))
      assert.match(prompt.render(), /<name>alpha:commit<\/name>/)

      assert.ok(listPrompts(skills).some((p) => p.name === 'beta:commit'))
      const asPrompt = getPrompt(skills, 'alpha:commit', { request: 'now' })
      assert.match((asPrompt.messages[0]!.content as any).text, /Alpha body\.[\s\S]*now$/)
      const uri = listResources(skills).find((r) => r.name === 'alpha:commit/SKILL.md')!.uri
      assert.equal(uri, 'skill://alpha%3Acommit/SKILL.md')
      assert.match(JSON.stringify(readResource(skills, uri)), /Alpha body/)
    } finally {
      await kernel.dispose()
    }
  })

  it('the disposer removes the root (the change hook says so), once', async () => {
    const { kernel, skills, changes } = await withSkills()
    try {
      const remove = skills.addRoot('alpha/skills', { namespace: 'alpha' })
      assert.ok(names(skills).includes('alpha:commit'))
      remove()
      remove()
      assert.deepEqual(names(skills), ['commit', 'plain'])
      assert.deepEqual(changes.at(-1)!.removed.sort(), ['alpha:commit', 'alpha:nameless'])
      assert.equal(changes.length, 2, 'one change to add, one to remove')
      assert.deepEqual(skills.clashes(), [])
      assert.equal(skills.problems().length, 0, "the root's problems went with it")
    } finally {
      await kernel.dispose()
    }
  })

  it('a plain added root is shadowed by the configured ones, as two plain roots are', async () => {
    const { kernel, skills } = await withSkills()
    try {
      skills.addRoot('extra')
      assert.equal(skills.get('plain')!.description, 'A plain skill of the project.')
      assert.deepEqual(
        skills.shadowed().map((s) => s.name),
        ['plain'],
      )
      assert.throws(() => skills.addRoot('beta/skills', { namespace: 'a b' }), /one word/)
    } finally {
      await kernel.dispose()
    }
  })

  it('an edit inside an added root is seen (hot reload), under its namespaced name', async () => {
    const { kernel, skills, p } = await withSkills(true)
    try {
      skills.addRoot('beta/skills', { namespace: 'beta' })
      await changeWhere(
        skills,
        (c) => c.added.includes('beta:review'),
        () => p.write('beta/skills/review/SKILL.md', md('review', 'Review a change.')),
      )
      assert.equal(skills.get('beta:review')!.description, 'Review a change.')
      await changeWhere(
        skills,
        (c) => c.changed.includes('beta:review'),
        () => p.write('beta/skills/review/SKILL.md', md('review', 'Review a change, edited.')),
      )
      assert.equal(skills.get('beta:review')!.description, 'Review a change, edited.')
      await changeWhere(
        skills,
        (c) => c.removed.includes('beta:review'),
        () => rmSync(p.path('beta/skills/review'), { recursive: true, force: true }),
      )
      assert.equal(skills.get('beta:review'), undefined)
    } finally {
      await kernel.dispose()
    }
  })

  it("a consuming instance's roots are its effects: they go when it goes", async () => {
    const { kernel, skills, p } = await withSkills()
    try {
      const consumer = toPlugin({
        name: 'consumer',
        inject: ['skills'],
        apply(ctx: any) {
          ctx.skills.addRoot(p.path('alpha/skills'), { namespace: 'alpha', source: 'consumer' })
        },
      }) as Plugin
      kernel.spawn(consumer, {}, { key: 'consumer' })
      await kernel.settled()
      assert.ok(names(skills).includes('alpha:commit'))
      await kernel.remove(kernel.fibers.find((f) => f.key === 'consumer')!)
      assert.ok(!names(skills).includes('alpha:commit'))
    } finally {
      await kernel.dispose()
    }
  })
})

describe('yoke skills list shows where an added root comes from, and the clashes', () => {
  it('source and clash lines, and the same in --json', async () => {
    const p = project({
      ...files,
      'yoke.config.yaml':
        'preset: base\nplugins:\n  skills:\n    config:\n      dirs: [skills]\n  adder:\n    use: ./adder.mjs\n',
      'adder.mjs': `export default {
  name: 'adder',
  inject: ['skills'],
  apply(ctx) {
    ctx.skills.addRoot('alpha/skills', { namespace: 'alpha', source: 'plugin alpha' })
  },
}
`,
    })
    const json = JSON.parse(
      (await runYoke(['skills', 'list', '--json'], { cwd: p.dir, home: p.home })).stdout,
    )
    assert.equal(json.skills.find((s: any) => s.name === 'alpha:commit').source, 'plugin alpha')
    assert.deepEqual(json.clashes[0].name, 'commit')
    const human = await runYoke(['skills', 'list'], { cwd: p.dir, home: p.home })
    assert.match(human.stdout, /alpha:commit\s+available · plugin alpha/)
    assert.match(
      human.stdout,
      /clash: "commit" is in several namespaces, each kept: alpha:commit \(plugin alpha\), commit/,
    )
    assert.match(
      human.stdout,
      /skipped: alpha\/skills\/broken\/SKILL\.md:2 \(plugin alpha\): no description/,
    )
  })
})
