// Skills hot reload through `yoke dev --events json`: add, edit, remove a SKILL.md; the catalog follows.
import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { after, before, it } from 'node:test'
import { DevProcess, runYoke, tempProject } from '../../helpers/project.ts'

const project = tempProject({
  'yoke.config.yaml':
    'preset: base\nplugins:\n  skills:\n    config:\n      dirs: [skills]\n  other:\n    use: ./other.mjs\n',
  'other.mjs': `export default { name: 'other', apply() {} }\n`,
  'skills/first/SKILL.md': '---\nname: first\ndescription: The first skill.\n---\nFirst body\n',
})
let dev: DevProcess
before(async () => {
  dev = new DevProcess([], { cwd: project.dir, home: project.home })
  await dev.ready()
})
after(async () => {
  assert.equal(await dev.stop(), 0, dev.stderr)
  project.cleanup()
})

const prompt = async () => {
  const run = await runYoke(['inspect', '--section', 'prompt', '--json'], {
    cwd: project.dir,
    home: project.home,
  })
  const out = JSON.parse(run.stdout)
  assert.equal(out.source, 'live from yoke dev')
  return out.data as string
}
const skillLog = (pattern: RegExp) =>
  dev.next((e) => e.type === 'log' && e.instance === 'skills' && pattern.test(e.message), 10000)

it('adding, editing and removing a skill updates the catalog, and touches no instance', async () => {
  assert.match(await prompt(), /<name>first<\/name>/)
  const states = dev.events.filter((e) => e.type === 'state').length
  project.write(
    'skills/second/SKILL.md',
    '---\nname: second\ndescription: Added while running.\n---\nSecond body\n',
  )
  await skillLog(/skills added second \(2 in all\)/)
  assert.match(
    await prompt(),
    /<name>second<\/name>\s*<description>Added while running\.<\/description>/,
  )
  project.write(
    'skills/second/SKILL.md',
    '---\nname: second\ndescription: Edited while running.\n---\nSecond body\n',
  )
  await skillLog(/skills changed second/)
  assert.match(await prompt(), /Edited while running\./)
  rmSync(project.path('skills/second'), { recursive: true })
  await skillLog(/skills removed second \(1 in all\)/)
  assert.doesNotMatch(await prompt(), /second/)
  assert.equal(
    dev.events.filter((e) => e.type === 'state').length,
    states,
    'no instance changed state',
  )
  assert.equal(
    dev.events.filter((e) => e.type === 'reload').length,
    0,
    'no reload: the config did not change',
  )
})

it('a broken SKILL.md is reported with file:line and the others stay', async () => {
  project.write('skills/broken/SKILL.md', '---\nname: broken\n---\nno description\n')
  const error = await dev.next(
    (e) =>
      e.type === 'log' &&
      e.level === 'error' &&
      /broken\/SKILL\.md:2: skipped: no description/.test(e.message),
    10000,
  )
  assert.ok(error)
  assert.match(await prompt(), /<name>first<\/name>/)
})
