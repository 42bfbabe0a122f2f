// A server's skills over MCP (SEP-2640) read into the skills plugin by the bridge, against the
// SDK's own server (skills-server.mjs: its extension, and entries written by hand): namespaced as
// `<server>:<skill>`, parsed as a SKILL.md on disk, in the catalog, skills_list and skill_read
// (files read through the server, verified), followed on list changes, withdrawn when the server
// goes; hostile servers are bounded and named while the rest loads.
import assert from 'node:assert/strict'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'

import { after, before, describe, it } from 'node:test'
import promptPlugin from '../../../plugins/prompt/index.ts'
import skillsPlugin, { type SkillsApi } from '../../../plugins/skills/index.ts'
import { toPlugin, validateConfig, type Fiber, type Plugin } from '../../../src/index.ts'
import { mcpHarness, text, type McpHarness } from '../../helpers/mcp.ts'
import { tempProject, type Project } from '../../helpers/project.ts'

const SERVER = new URL('./skills-server.mjs', import.meta.url).pathname
const md = (name: string, description: string, body = `Do ${name}.\n`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}`
const server = (serverName: string, ...args: string[]) => ({
  serverName,
  command: process.execPath,
  args: [SERVER, ...args],
})

function spawn(h: McpHarness, key: string, plugin: unknown, config: Record<string, unknown>) {
  const checked = validateConfig(toPlugin(plugin) as Plugin, config)
  assert.ok('value' in checked, JSON.stringify(checked))
  return h.kernel.spawn(toPlugin(plugin) as Plugin, checked.value, { key })
}
/** the skills instance now (a test restarts it) */
let skillsFiber: Fiber
const spawnSkills = (h: McpHarness) =>
  (skillsFiber = spawn(h, 'skills', skillsPlugin, { dirs: ['skills'], watch: false }))

async function harness(p: Project): Promise<{ h: McpHarness; skills: () => SkillsApi }> {
  const h = await mcpHarness(p.dir)
  spawn(h, 'prompt', promptPlugin, {})
  spawnSkills(h)
  await h.kernel.settled()
  return { h, skills: () => h.kernel.services.get('skills')!.value as SkillsApi }
}

describe('mcp-client: a server’s skills (SEP-2640)', () => {
  let p: Project
  let h: McpHarness
  let skills: () => SkillsApi
  before(async () => {
    p = tempProject({
      'skills/local/SKILL.md': md('local', 'A skill on disk.'),
      'remote/pdf/SKILL.md': md(
        'pdf',
        'Fill in PDF forms. Use when given a .pdf file.',
        'Read FORMS.md first.\n',
      ),
      'remote/pdf/FORMS.md': '# Forms\nfield by field\n',
      'remote/pdf/scripts/fill.py': 'print("fill")\n',
      'remote/csv/SKILL.md': md('csv', 'Summarise a CSV file.'),
    })
    ;({ h, skills } = await harness(p))
  })
  after(async () => {
    await h.close()
    p.cleanup()
  })

  it('reads them namespaced, into the catalog, skills_list and skill_read (files through the server)', async () => {
    await h.add('docs', server('docs', 'dir', p.path('remote')))
    await h.until('the server’s skills', () => skills().get('docs:pdf') !== undefined)
    const names = skills()
      .list()
      .map((s) => s.name)
    assert.deepEqual(names, ['docs:csv', 'docs:pdf', 'local'])
    assert.equal(h.status('docs').skills, 2, 'yoke mcp list and the dev screen count them')
    const pdf = skills().get('docs:pdf')!
    assert.equal(pdf.namespace, 'docs')
    assert.equal(pdf.source, 'MCP server docs')
    assert.equal(pdf.file, 'skill://pdf/SKILL.md')
    assert.deepEqual(pdf.violations, [])
    assert.deepEqual(skills().files('docs:pdf'), ['FORMS.md', 'scripts/fill.py'])

    const prompt = (h.kernel.services.get('prompt')!.value as { render(): string }).render()
    assert.match(prompt, /<name>docs:pdf<\/name>/)
    const found = await h.rt.call('skills_list', { query: 'fill in a pdf form' })
    assert.match(text(found), /^docs:pdf: /)
    const read = await h.rt.call('skill_read', { name: 'docs:pdf' })
    assert.match(
      text(read),
      /<skill_content name="docs:pdf">\nRead FORMS.md first.\n<\/skill_content>/,
    )
    assert.match(text(read), /FORMS\.md\n\s+scripts\/fill\.py/)
    const forms = await h.rt.call('skill_read', { name: 'docs:pdf', file: 'FORMS.md' })
    assert.equal(text(forms), '# Forms\nfield by field\n')
    const away = await h.rt.call('skill_read', { name: 'docs:pdf', file: '../csv/SKILL.md' })
    assert.equal(away.status, 'TOOL_ERROR')
    assert.match(text(away), /has no file/)
  })

  it('follows the server: a list change adds and changes, a removed server takes its skills', async () => {
    mkdirSync(p.path('remote/new'), { recursive: true })
    writeFileSync(p.path('remote/new/SKILL.md'), md('new', 'A skill added while connected.'))
    writeFileSync(p.path('remote/csv/SKILL.md'), md('csv', 'Summarise a CSV file, then plot it.'))
    const reload = await h.rt.call('mcp__docs__reload', {})
    assert.match(text(reload), /"listChanged":true/)
    await h.until('the new skill', () => skills().get('docs:new') !== undefined)
    await h.until('the changed one', () => /plot it/.test(skills().get('docs:csv')!.description))
    rmSync(p.path('remote/new'), { recursive: true })
    await h.rt.call('mcp__docs__reload', {})
    await h.until('the removed one gone', () => skills().get('docs:new') === undefined)

    // a skills instance that restarts gets the server's skills again
    const before = skills()
    await h.kernel.remove(skillsFiber)
    spawnSkills(h)
    await h.kernel.settled()
    assert.notEqual(skills(), before)
    await h.until('the skills again', () => skills().get('docs:pdf') !== undefined)

    await h.remove('docs')
    assert.deepEqual(
      skills()
        .list()
        .map((s) => s.name),
      ['local'],
      'a server that goes takes its skills along',
    )
  })

  it('a 2025-era connection reads them too', async () => {
    await h.add('old', { ...server('old', 'dir', p.path('remote')), protocol: 'legacy' })
    await h.until('the skills', () => skills().get('old:pdf') !== undefined)
    assert.equal(h.status('old').protocol?.era, 'legacy')
    const forms = await h.rt.call('skill_read', { name: 'old:pdf', file: 'FORMS.md' })
    assert.equal(text(forms), '# Forms\nfield by field\n')
    await h.remove('old')
  })

  it('says when a server offers no skills, and loads none', async () => {
    await h.add('plain', server('plain', 'none'))
    await h.until('the note', () =>
      h.logs.some((l) => /"plain" offers no skills: it does not declare/.test(l.message)),
    )
    assert.deepEqual(
      skills()
        .list()
        .map((s) => s.name),
      ['local'],
    )
    await h.remove('plain')
  })

  it('skills: false leaves a server’s skills out, says so once, and keeps its tools', async () => {
    await h.add('quiet', { ...server('quiet', 'dir', p.path('remote')), skills: false })
    await h.until('the note', () =>
      h.logs.some((l) => /"quiet" offers skills .*left out .*skills: false/.test(l.message)),
    )
    assert.equal(h.status('quiet').state, 'connected')
    assert.ok(h.status('quiet').tools > 0, 'its tools are there')
    assert.equal(h.status('quiet').skills, undefined)
    assert.deepEqual(
      skills()
        .list()
        .map((s) => s.name),
      ['local'],
    )
    await h.remove('quiet')
  })

  it('hostile entries are refused, each named with the server and the skill; the rest load', async () => {
    await h.add('bad', server('bad', 'hostile'))
    await h.until('the good one', () => skills().get('bad:good') !== undefined)
    await h.until('all problems', () => skills().problems().length >= 6)
    const problems = skills()
      .problems()
      .map((q) => `${q.file} ${q.message}`)
    const about = (uri: string, why: RegExp) =>
      assert.ok(
        problems.some((m) => m.startsWith(uri) && /MCP server "bad"/.test(m) && why.test(m)),
        `${uri} ${why}: ${problems.join('\n')}`,
      )
    about('skill://escape/SKILL.md', /not inside the skill's folder/)
    about('skill://huge/SKILL.md', /SKILL\.md is \d+ bytes; at most 1048576/)
    about('skill://malformed/SKILL.md', /frontmatter/)
    about('skill://liar/SKILL.md', /differs from the skill entry/)
    about('skill://tampered/SKILL.md', /digest/)
    about('skill://nodesc/SKILL.md', /description/)
    assert.ok(
      skills()
        .problems()
        .every((q) => q.source === 'MCP server bad'),
    )
    const odd = skills().get('bad:odd')!
    assert.match(odd.violations.map((v) => v.message).join(), /unknown key "colour"/)
    const guide = await h.rt.call('skill_read', { name: 'bad:good', file: 'references/guide.md' })
    assert.equal(text(guide), '# Guide\nthe good guide\n')
    await h.remove('bad')
    assert.deepEqual(skills().problems(), [], 'its problems go with it')
  })

  it('a server offering 10,000 skills: the first 500 are used, and that is said', async () => {
    await h.add('lots', server('lots', 'many', '10000'))
    await h.until('500 skills', () => skills().list().length === 501, 60_000)
    const said = skills()
      .problems()
      .find((q) => /offers more than 500 skills/.test(q.message))
    assert.ok(said, JSON.stringify(skills().problems()))
    assert.ok(skills().get('lots:skill-00499') && !skills().get('lots:skill-00500'))
    const found = await h.rt.call('skills_list', { query: 'generated skill number 42' })
    assert.match(text(found), /lots:skill-00042/)
    await h.remove('lots')
  })
})
