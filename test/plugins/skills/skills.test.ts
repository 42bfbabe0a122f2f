import assert from 'node:assert/strict'
import { mkdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { defaultDirs } from '../../../plugins/skills/index.ts'
import { escapeXml, renderAlways, renderCatalog } from '../../../plugins/skills/catalog.ts'
import { SkillRanker } from '../../../plugins/skills/ranking.ts'
import {
  isProblem,
  parseSkill,
  readLines,
  splitFrontmatter,
  type Skill,
  type SkillProblem,
} from '../../../plugins/skills/parse.ts'
import { makeFilter, SkillIndex } from '../../../plugins/skills/skill-index.ts'
import { runStageConformance } from '../../conformance/pipeline.ts'
import { ROOT, runYoke, suiteProjects } from '../../helpers/project.ts'
import { skillsKernel } from '../../helpers/skills.ts'

const loc = (dirName = 'my-skill') => ({
  file: `/fake/${dirName}/SKILL.md`,
  dir: `/fake/${dirName}`,
  dirName,
  root: '/fake',
  hasTools: false,
})
const parse = (text: string, dirName?: string) => parseSkill(text, loc(dirName))
const skill = (text: string, dirName?: string) => {
  const s = parse(text, dirName)
  assert.ok(!isProblem(s), JSON.stringify(s))
  return s as Skill
}
const project = suiteProjects()
const md = (fm: string, body = 'Body\n') => `---\n${fm}\n---\n${body}`

describe('SKILL.md parsing: the octos cases', () => {
  it('split_frontmatter', () => {
    const s = splitFrontmatter(
      '---\nname: test\ndescription: A test\nalways: true\n---\nBody here.\n',
    )!
    assert.equal(s.body, 'Body here.\n')
    assert.equal(splitFrontmatter('Just some text.'), undefined)
    assert.equal(splitFrontmatter('  \n---\nname: foo\n---\nBody\n')!.body, 'Body\n')
    assert.equal(splitFrontmatter('---\nname: foo\nno closing fence\n'), undefined)
    assert.equal(splitFrontmatter('---\n---\nBody only\n'), undefined)
    assert.equal(
      splitFrontmatter('---\nname: x\n---\nbefore\n---\nafter\n')!.body,
      'before\n---\nafter\n',
      'a --- line inside the body is kept',
    )
  })

  it('fm_value, through the line reading used when YAML refuses', () => {
    assert.equal(readLines('  name:   spaced value  ').name, 'spaced value')
    assert.equal(readLines('model: gpt-4o # best model').model, 'gpt-4o')
    assert.equal(readLines('description: key: value pair').description, 'key: value pair')
    assert.equal(readLines('name: first\nname: second').name, 'first')
    for (const empty of ['name:', 'name: []', 'name: ~', 'name: ""'])
      assert.match(
        (parse(md(`${empty}\ndescription: d`), 'dir') as SkillProblem).message,
        /^no name: add "name: dir"/,
        empty,
      )
    assert.equal(
      skill(md('name: my-skill\nrequires_bins: []   # DOT-based pipeline\ndescription: d'))
        .requiresBins.length,
      0,
    )
  })

  it('parse_skill', () => {
    // unlike octos, a missing name is an error, not the directory's name in silence
    assert.deepEqual(parse(md('description: d')), {
      file: '/fake/my-skill/SKILL.md',
      line: 2,
      message:
        'no name: add "name: my-skill" (the spec requires it, equal to the directory\'s name)',
    })
    // a namespaced root (a Claude Code plugin's skills) takes the directory's name, and says so
    const claude = parseSkill(md('description: d'), { ...loc(), nameFromDirectory: true }) as Skill
    assert.equal(claude.name, 'my-skill')
    assert.match(
      claude.violations[0]!.message,
      /^no name: the directory's name "my-skill" stands in/,
    )
    assert.equal(skill(md('name: my-skill\ndescription: d\nalways: yes')).always, false)
    assert.equal(skill(md('name: my-skill\ndescription: d\nalways: true')).always, true)
    assert.equal(parse('no frontmatter at all').constructor, Object)
    assert.ok(isProblem(parse('no frontmatter at all')))
  })
})

describe('SKILL.md parsing: better than octos', () => {
  it('`#` starts a comment only after whitespace, and quotes are removed', () => {
    const s = skill(
      md("name: my-skill\ndescription: C# dev tools # trailing comment\nauthor: 'Ann'"),
    )
    assert.equal(s.description, 'C# dev tools')
    assert.equal(s.author, 'Ann')
    assert.equal(
      skill(md('name: my-skill\ndescription: "quoted, with: colon"')).description,
      'quoted, with: colon',
    )
  })

  it('requires_bins and requires_env take a comma list or a YAML list', () => {
    assert.deepEqual(
      skill(md('name: my-skill\ndescription: d\nrequires_bins: [git, curl]')).requiresBins,
      ['git', 'curl'],
    )
    assert.deepEqual(
      skill(md('name: my-skill\ndescription: d\nrequires_bins: git, curl')).requiresBins,
      ['git', 'curl'],
    )
    assert.deepEqual(
      skill(md('name: my-skill\ndescription: d\nrequires_env:\n  - A_KEY\n  - B_KEY')).requiresEnv,
      ['A_KEY', 'B_KEY'],
    )
  })

  it('a ---- line does not close the frontmatter', () => {
    const s = splitFrontmatter('---\nname: a\n----\ndescription: b\n---\nbody')!
    assert.match(s.frontmatter, /description: b/)
    assert.equal(s.body, 'body')
  })
})

describe('the Agent Skills spec', () => {
  it('a conformant skill loads clean, with every spec field', () => {
    const s = skill(
      md(
        'name: pdf-tools\ndescription: Work with PDFs.\nlicense: MIT\ncompatibility: needs python3\nmetadata:\n  author: me\n  version: "1"\nallowed-tools: Bash(git add:*) Read',
      ),
      'pdf-tools',
    )
    assert.deepEqual(s.warnings, [])
    assert.deepEqual(s.violations, [])
    assert.deepEqual(s.metadata, { author: 'me', version: '1' })
    assert.deepEqual(s.allowedTools, ['Bash(git add:*)', 'Read'])
    assert.equal(s.license, 'MIT')
  })

  it('spec violations load with a warning', () => {
    assert.match(
      skill(md('name: Bad_Name\ndescription: d'), 'Bad_Name').warnings.join(),
      /breaks the spec/,
    )
    assert.match(
      skill(md('name: other\ndescription: d'), 'dir').warnings.join(),
      /differs from its directory "dir"/,
    )
    assert.match(
      skill(md(`name: my-skill\ndescription: ${'x'.repeat(1100)}`)).warnings.join(),
      /1100 characters; the spec allows 1,024/,
    )
    assert.match(skill(md('name: a--b\ndescription: d'), 'a--b').warnings.join(), /breaks the spec/)
  })

  it('YAML that needs the lenient retry loads, with a warning', () => {
    const s = skill(md('name: my-skill\ndescription: Use it when: the user asks'))
    assert.equal(s.description, 'Use it when: the user asks')
    assert.match(s.warnings.join(), /not valid YAML; yoke read it leniently/)
  })

  it('a missing description is skipped with file:line', () => {
    const p = parse('\n---\nname: x\nversion: 1\n---\nbody')
    assert.ok(isProblem(p))
    assert.deepEqual(p, {
      file: '/fake/my-skill/SKILL.md',
      line: 3,
      message: 'no description: the catalog needs one to tell when to use the skill',
    })
  })
})

describe('the index: layering, availability, filter', () => {
  const p = project({
    'high/clock-dir/SKILL.md': md('name: clock\ndescription: from high'),
    'low/clock/SKILL.md': md('name: clock\ndescription: from low'),
    'low/needs/SKILL.md': md(
      'name: needs\ndescription: needs things\nrequires_bins: ls, surely-not-a-binary\nrequires_env: YOKE_TEST_UNSET_VAR',
    ),
    'low/broken/SKILL.md': 'no frontmatter',
    'low/hidden/SKILL.md': md('name: hidden\ndescription: filtered out\nalways: true'),
    'low/not-a-skill/readme.txt': 'x',
  })
  const roots = [p.path('high'), p.path('low')]

  it('the highest-priority directory wins a name; the shadowing is reported', () => {
    const index = new SkillIndex(roots, makeFilter(undefined, [])).scan()
    assert.deepEqual(
      index.skills.map((s) => s.name),
      ['clock', 'hidden', 'needs'],
    )
    assert.equal(index.get('clock')!.description, 'from high')
    assert.deepEqual(index.shadowed, [
      {
        name: 'clock',
        winner: p.path('high/clock-dir/SKILL.md'),
        shadowed: p.path('low/clock/SKILL.md'),
      },
    ])
    assert.deepEqual(
      index.problems.map((x) => x.file),
      [p.path('low/broken/SKILL.md')],
    )
  })

  it('availability says why', () => {
    const needs = new SkillIndex(roots, makeFilter(undefined, []), { PATH: process.env.PATH })
      .scan()
      .get('needs')!
    assert.equal(needs.available, false)
    assert.equal(
      needs.why,
      'missing on PATH: surely-not-a-binary; environment variables not set: YOKE_TEST_UNSET_VAR',
    )
  })

  it('a filtered skill is absent from the catalog and the always-on set; only/except', () => {
    const except = new SkillIndex(roots, makeFilter(undefined, ['hidden'])).scan()
    assert.equal(except.get('hidden'), undefined)
    assert.doesNotMatch(renderCatalog(except.skills, 8000, 300), /hidden/)
    assert.equal(renderAlways(except.skills, 20000), '')
    assert.match(
      renderAlways(new SkillIndex(roots, makeFilter(undefined, [])).scan().skills, 20000),
      /<skill_content name="hidden">\nBody\n<\/skill_content>/,
    )
    const only = new SkillIndex(roots, makeFilter(['clock'], [])).scan()
    assert.deepEqual(
      only.skills.map((s) => s.name),
      ['clock'],
    )
  })

  it('the default directories, highest priority first', () => {
    const dirs = defaultDirs({ dir: '/proj', home: '/h' }, { YOKE_SKILLS_PATH: '/x:/y' })
    assert.deepEqual(dirs.slice(0, 3), ['/proj/.agents/skills', '/proj/skills', '/h/skills'])
    assert.match(dirs[3], /\.agents\/skills$/)
    assert.deepEqual(dirs.slice(4), ['/x', '/y'])
  })
})

describe('the catalog', () => {
  it('escapes <, &, and quotes; marks tools; states how many were left out of the budget', () => {
    const s = {
      ...skill(md('name: a\ndescription: Use <b> & "c" \'d\''), 'a'),
      hasTools: true,
      available: false,
    }
    const catalog = renderCatalog([s], 8000, 300)
    assert.match(catalog, /<skill available="false" tools="true">/)
    assert.match(
      catalog,
      /<description>Use &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;<\/description>/,
    )
    assert.equal(escapeXml('<&>'), '&lt;&amp;&gt;')
    const many = Array.from({ length: 200 }, (_, i) =>
      skill(md(`name: s${i}\ndescription: ${'w'.repeat(500)}`), `s${i}`),
    )
    const capped = renderCatalog(many, 8000, 300)
    assert.ok(capped.length <= 8000, String(capped.length))
    assert.match(
      capped,
      /<omitted count="(\d+)">\1 more skills are not listed here; skills_list\(query\) finds them by what they do<\/omitted>/,
    )
    assert.ok(!capped.includes('w'.repeat(301)), 'descriptions are capped')
  })

  it('lists pinned skills first, then those the task is about, then the rest by name', () => {
    const filler = Array.from({ length: 60 }, (_, i) =>
      skill(
        md(
          `name: filler-${String(i).padStart(2, '0')}\ndescription: ${'general advice '.repeat(20)}`,
        ),
        `f${i}`,
      ),
    )
    const csv = skill(
      md('name: zz-csv\ndescription: Summarise a CSV file: columns, types, outliers'),
      'csv',
    )
    const house = skill(md('name: zz-house-rules\ndescription: The house rules'), 'house')
    const all = [...filler, csv, house]
    const ranker = new SkillRanker({ pinned: ['zz-house-*'], deferred: [], hidden: [] })
    const names = (text: string) => [...text.matchAll(/<name>([^<]+)<\/name>/g)].map((m) => m[1])
    const plain = names(renderCatalog(ranker.order(all), 4000, 300))
    assert.equal(plain[0], 'zz-house-rules', 'pinned first')
    assert.ok(!plain.includes('zz-csv'), 'by name, the csv skill does not fit')
    const forTask = names(
      renderCatalog(ranker.order(all, 'summarise sales.csv columns'), 4000, 300),
    )
    assert.deepEqual(
      forTask.slice(0, 2),
      ['zz-house-rules', 'zz-csv'],
      'then what the task is about',
    )
    const found = ranker.search(all, 'outliers in a csv', 5)
    assert.equal(found.candidates[0]?.item.name, 'zz-csv')
    assert.equal(ranker.search(all, 'book a flight to Paris', 5).noMatch, true)
  })

  it('a deferred skill is left out of the catalog but found; a hidden one is neither', () => {
    const all = [
      skill(md('name: csv-tools\ndescription: Summarise a CSV file'), 'csv'),
      skill(md('name: secret-ops\ndescription: Rotate the CSV export keys'), 'ops'),
      skill(md('name: zz-plain\ndescription: Plain advice'), 'plain'),
    ]
    const ranker = new SkillRanker({ pinned: [], deferred: ['csv-*'], hidden: ['secret-*'] })
    assert.deepEqual(
      ranker.order(all, 'summarise a csv').map((s) => s.name),
      ['zz-plain'],
    )
    const found = ranker.search(all, 'csv', 5).candidates.map((c) => c.item.name)
    assert.deepEqual(found, ['csv-tools'])
    assert.deepEqual(
      ranker.findable(all).map((s) => s.name),
      ['csv-tools', 'zz-plain'],
    )
  })
})

async function withSkills(files: Record<string, string>, config: Record<string, unknown> = {}) {
  const p = project(files)
  return { p, ...(await skillsKernel(p, config)) }
}

describe('the skills plugin: tools and prompt', () => {
  it('skill_read finds a skill by its listed name (octos lists time/ as clock but cannot load it)', async () => {
    const { rt, prompt, kernel } = await withSkills({
      'skills/time/SKILL.md': md('name: clock\ndescription: Tell the time', 'Use `date`.\n'),
      'skills/time/references/zones.md': 'UTC, CET',
      'skills/time/scripts/now.sh': 'date',
    })
    const read = await rt.call('skill_read', { name: 'clock' })
    assert.equal(read.status, 'ok')
    const text = read.content.map((c: any) => c.text).join('')
    assert.match(
      text,
      /^<skill_content name="clock">\nUse `date`.\n<\/skill_content>\n<skill_resources>\n {2}references\/zones.md\n {2}scripts\/now.sh\n<\/skill_resources>$/,
    )
    assert.equal(
      (await rt.call('skill_read', { name: 'clock', file: 'references/zones.md' })).content[0].type,
      'text',
    )
    assert.match(prompt.render(), /<name>clock<\/name>/)
    const list = await rt.call('skills_list', { query: 'time' })
    assert.deepEqual(
      (list.structured as any).skills.map((s: any) => s.name),
      ['clock'],
    )
    await kernel.dispose()
  })

  it('skill_read refuses ../../etc/passwd, absolute paths and a symlink out of the skill', async () => {
    const { rt, p, kernel } = await withSkills({
      'skills/safe/SKILL.md': md('name: safe\ndescription: d'),
      'outside.txt': 'secret',
    })
    symlinkSync(p.path('outside.txt'), p.path('skills/safe/link.txt'))
    mkdirSync(p.path('skills/safe/sub'))
    for (const file of [
      '../../../../../../../../etc/passwd',
      '/etc/passwd',
      'link.txt',
      '../safe/../../outside.txt',
    ]) {
      const r = await rt.call('skill_read', { name: 'safe', file })
      assert.equal(r.status, 'TOOL_ERROR', file)
      assert.doesNotMatch(JSON.stringify(r.content), /secret|root:/, file)
    }
    assert.match(
      JSON.stringify((await rt.call('skill_read', { name: 'safe', file: 'sub' })).content),
      /is a directory/,
    )
    assert.equal((await rt.call('skill_read', { name: 'nope' })).status, 'TOOL_ERROR')
    await kernel.dispose()
  })
})

describe('the skills plugin: filter and availability', () => {
  it('a filtered skill is absent from the catalog, the tools and the always-on set', async () => {
    const { rt, prompt, kernel } = await withSkills(
      {
        'skills/kept/SKILL.md': md('name: kept\ndescription: kept\nrequires_bins: ls'),
        'skills/dropped/SKILL.md': md(
          'name: dropped\ndescription: dropped\nalways: true',
          'ALWAYS BODY\n',
        ),
      },
      { except: ['dropped'] },
    )
    assert.doesNotMatch(prompt.render(), /dropped|ALWAYS BODY/)
    assert.equal((await rt.call('skill_read', { name: 'dropped' })).status, 'TOOL_ERROR')
    const listed = await rt.call('skills_list', {})
    assert.deepEqual(
      (listed.structured as any).skills.map((s: any) => [s.name, s.available]),
      [['kept', true]],
      'requires_bins: ls is available',
    )
    assert.equal((kernel.services.get('skillFilter')!.value as any).allows('dropped'), false)
    await kernel.dispose()
  })
})

runStageConformance('skills_list', async () => {
  const { rt, kernel } = await withSkills({
    'skills/alpha/SKILL.md': md('name: alpha\ndescription: the first letter'),
  })
  return {
    runtime: rt,
    tool: 'skills_list',
    validArgs: { query: 'first' },
    invalidArgs: { query: 7 },
    check: (r) => assert.match((r.content[0] as any).text, /alpha: the first letter/),
    close: () => kernel.dispose(),
  }
})

runStageConformance('skill_read', async () => {
  const { rt, kernel } = await withSkills({
    'skills/alpha/SKILL.md': md('name: alpha\ndescription: the first letter', 'Alpha body\n'),
  })
  return {
    runtime: rt,
    tool: 'skill_read',
    validArgs: { name: 'alpha' },
    invalidArgs: { file: 'x' },
    check: (r) => assert.match((r.content[0] as any).text, /Alpha body/),
    close: () => kernel.dispose(),
  }
})

describe('yoke skills', () => {
  it('list, show and check', async () => {
    const p = project({
      'yoke.config.yaml': 'preset: base\n',
      'skills/good/SKILL.md': md('name: good\ndescription: fine'),
      'skills/bad/SKILL.md': md('name: bad'),
      '.agents/skills/good/SKILL.md': md('name: good\ndescription: the project one wins'),
    })
    const list = JSON.parse(
      (await runYoke(['skills', 'list', '--json'], { cwd: p.dir, home: p.home })).stdout,
    )
    assert.deepEqual(
      list.skills.map((s: any) => [s.name, s.description]),
      [['good', 'the project one wins']],
    )
    assert.equal(list.shadowed[0].shadowed, p.path('skills/good/SKILL.md'))
    assert.match(list.problems[0].message, /no description/)
    const show = await runYoke(['skills', 'show', 'good'], { cwd: p.dir, home: p.home })
    assert.match(show.stdout, /the project one wins/)
    const check = await runYoke(['skills', 'check', 'skills'], { cwd: p.dir, home: p.home })
    assert.equal(check.code, 1)
    assert.match(check.stdout, /error skills\/bad\/SKILL\.md:2: no description/)
    const one = await runYoke(['skills', 'check', 'skills/good'], { cwd: p.dir, home: p.home })
    assert.equal(one.code, 0, one.stdout)
    const examples = await runYoke(
      ['skills', 'check', join(ROOT, 'examples', 'skills'), '--json'],
      { cwd: p.dir, home: p.home },
    )
    assert.deepEqual(
      JSON.parse(examples.stdout),
      { ok: true, skills: 3, problems: [], warnings: [], absent: [] },
      'the examples are clean',
    )
    // no DIR: every configured root that exists; the optional ones that do not are skipped, not errors
    p.write('skills/bad/SKILL.md', md('name: bad\ndescription: fixed'))
    const all = await runYoke(['skills', 'check', '--json'], { cwd: p.dir, home: p.home })
    assert.equal(all.code, 0, all.stdout)
    const report = JSON.parse(all.stdout)
    assert.deepEqual(report.problems, [])
    assert.ok(report.absent.length > 0, 'the home directories of the test are empty')
    const text = await runYoke(['skills', 'check'], { cwd: p.dir, home: p.home })
    assert.match(text.stdout, /not there \(skipped\): /)
    assert.doesNotMatch(text.stdout, /\.\.\/\.\.\//, 'no climbing relative paths')
  })
})

describe('hostile skills (from review)', () => {
  it('odd values: a map where text belongs, a BOM, numbers kept as written, lists through the lenient retry', () => {
    assert.ok(isProblem(parse(md('description: {toString: 1}'))), 'a map is not a description')
    assert.match(
      (parse(md('name: {toString: 1}\ndescription: d'), 'dir') as SkillProblem).message,
      /^the name is not text/,
    )
    assert.equal(
      skill('\uFEFF' + md('name: my-skill\ndescription: saved by Notepad')).description,
      'saved by Notepad',
    )
    assert.equal(skill(md('name: my-skill\ndescription: d\nversion: 1.10')).version, '1.10')
    const lenient = skill(
      md('name: my-skill\ndescription: Use when: the user asks\nrequires_env:\n  - SURELY_UNSET'),
    )
    assert.deepEqual(lenient.requiresEnv, ['SURELY_UNSET'])
    assert.equal(
      skill(md('name: my-skill\ndescription: >\n  Summarise things.\nnote: a: b')).description,
      'Summarise things.',
    )
    assert.ok(
      isProblem(parse(md(`description: d\n${'k: v\n'.repeat(20000)}`))),
      'a huge frontmatter is refused, fast',
    )
  })

  it('skill_read refuses a FIFO and a skill directory swapped for a symlink; one long name hides nothing', async () => {
    const { execFileSync } = await import('node:child_process')
    const { renameSync } = await import('node:fs')
    const { rt, p, kernel } = await withSkills({
      'skills/x/SKILL.md': md('name: x\ndescription: d'),
      'secret/secret.txt': 'TOP SECRET',
      'secret/SKILL.md': md('name: secret\ndescription: d'),
    })
    execFileSync('mkfifo', [p.path('skills/x/pipe')])
    assert.match(
      JSON.stringify((await rt.call('skill_read', { name: 'x', file: 'pipe' })).content),
      /not a regular file/,
    )
    renameSync(p.path('skills/x'), p.path('moved'))
    symlinkSync(p.path('secret'), p.path('skills/x'))
    const swapped = await rt.call('skill_read', { name: 'x', file: 'secret.txt' })
    assert.equal(swapped.status, 'TOOL_ERROR')
    assert.doesNotMatch(JSON.stringify(swapped.content), /TOP SECRET/)
    await kernel.dispose()
    const long = { ...skill(md('name: a\ndescription: d'), 'a'), name: 'a'.repeat(9000) }
    const catalog = renderCatalog(
      [
        long,
        skill(md('name: beta\ndescription: d'), 'beta'),
        skill(md('name: gamma\ndescription: d'), 'gamma'),
      ],
      2000,
      300,
    )
    assert.match(catalog, /<name>beta<\/name>/)
    assert.ok(catalog.length <= 2000)
  })

  it('nested roots both see an edit; a file deep inside a skill is not an index change', async () => {
    const p = project({
      'skills/vendor/tool/SKILL.md': md('name: tool\ndescription: v1'),
      'skills/own/SKILL.md': md('name: own\ndescription: own'),
    })
    const index = new SkillIndex(
      [p.path('skills/vendor'), p.path('skills')],
      makeFilter(undefined, []),
    ).scan()
    const before = index.get('own')
    p.write('skills/vendor/tool/SKILL.md', md('name: tool\ndescription: v2'))
    index.update([p.path('skills/vendor/tool/SKILL.md'), p.path('skills/own/references/deep/x.md')])
    assert.equal(index.get('tool')!.description, 'v2')
    assert.equal(
      index.get('own'),
      before,
      'untouched skills keep their object (no false "changed")',
    )
  })
})

describe('skill files: only what the listing shows is read (from review)', () => {
  it('skill_read refuses hidden files, node_modules, and a symlink to either; listed files still read', async () => {
    const { rt, p, kernel } = await withSkills({
      'skills/x/SKILL.md': md('name: x\ndescription: d'),
      'skills/x/.env': 'API_KEY=hidden',
      'skills/x/.git/config': '[core]',
      'skills/x/node_modules/dep/index.js': 'module.exports = 1',
      'skills/x/references/guide.md': '# Guide',
    })
    symlinkSync(p.path('skills/x/.env'), p.path('skills/x/env.txt'))
    try {
      const read = (file: string) => rt.call('skill_read', { name: 'x', file })
      const listed = await read('references/guide.md')
      assert.equal(listed.status, 'ok')
      assert.match(JSON.stringify(listed.content), /# Guide/)
      for (const file of [
        '.env',
        '.git/config',
        './.env',
        'node_modules/dep/index.js',
        'env.txt',
      ]) {
        const refused = await read(file)
        assert.equal(refused.status, 'TOOL_ERROR', file)
        assert.match(
          JSON.stringify(refused.content),
          /hidden files and node_modules are not read/,
          file,
        )
        assert.doesNotMatch(JSON.stringify(refused.content), /API_KEY|core|module\.exports/, file)
      }
    } finally {
      await kernel.dispose()
    }
  })
})
