// yoke plugins list / check, and the example packages through the repository's config.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { writePackage, nodeExe } from '../../helpers/exec.ts'
import { ROOT, runYoke, tempProject, type Project } from '../../helpers/project.ts'

let project: Project
before(() => {
  project = tempProject({})
  writePackage(project.path('pkgs'), 'good', {
    manifest: { name: 'good', version: '1', tools: [{ name: 'good_run', description: 'x' }] },
    exe: nodeExe(`process.stdout.write('ok')`),
  })
  writePackage(project.path('pkgs'), 'broken', {
    manifest: { name: 'broken', version: '1', tools: [{ name: 'b', description: 'x' }] },
  })
  project.write(
    'pkgs/broken/manifest.json',
    '{\n  "name": "broken",\n  "version": "1",\n  "sha256": ""\n}\n',
  )
})
after(() => project.cleanup())

it('plugins check: a good package passes and prints the sha256 line to pin it; a broken one fails at file:line:col', async () => {
  const good = await runYoke(['plugins', 'check', 'pkgs/good', '--cwd', project.dir], {
    cwd: project.dir,
    home: project.home,
  })
  assert.equal(good.code, 0, good.stdout + good.stderr)
  assert.match(good.stdout, /✓ good · good_run/)
  assert.match(good.stdout, /add "sha256": "[0-9a-f]{64}" to pin the executable/)
  const all = await runYoke(['plugins', 'check', 'pkgs', '--json', '--cwd', project.dir], {
    cwd: project.dir,
    home: project.home,
  })
  assert.equal(all.code, 1)
  const report = JSON.parse(all.stdout)
  const broken = report.packages.find((p: { dir: string }) => p.dir.endsWith('broken'))
  assert.match(broken.errors[0].message, /manifest\.sha256 must be a non-empty hex digest/)
  assert.equal(broken.errors[0].line, 4)
})

it('plugins list shows the example packages from config/yoke.yaml, with their tools and extras', async () => {
  const r = await runYoke(['plugins', 'list', '--json', '--config', 'config/yoke.yaml'], {
    cwd: ROOT,
    home: project.home,
  })
  assert.equal(r.code, 0, r.stderr)
  const packages = JSON.parse(r.stdout).packages as Array<{
    id: string
    state: string
    tools: string[]
    signed: boolean
    extras: { hooks: number; prompts: number }
  }>
  const by = Object.fromEntries(packages.map((p) => [p.id, p]))
  assert.deepEqual(by['text-tools']!.tools, ['word_count', 'slugify'])
  assert.equal(by['text-tools']!.signed, true)
  assert.deepEqual(by['sys-info']!.tools, ['disk_free'])
  assert.equal(by['house-rules']!.extras.hooks, 1)
  assert.ok(packages.every((p) => p.state === 'loaded'))
  const sh = await runYoke(
    ['tools', 'call', 'disk_free', '--args', '{"path":"/"}', '--config', 'config/yoke.yaml'],
    { cwd: ROOT, home: project.home },
  )
  assert.equal(sh.code, 0, sh.stderr)
  assert.match(sh.stdout, /Filesystem/)
  const node = await runYoke(
    ['tools', 'call', 'word_count', '--args', '{"text":"a b a"}', '--config', 'config/yoke.yaml'],
    { cwd: ROOT, home: project.home },
  )
  assert.match(node.stdout, /3 words/)
})
