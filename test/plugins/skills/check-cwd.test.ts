// `yoke skills check DIR` reads DIR from the shell's working directory (or --cwd), not from the
// directory of the project config that the search found higher up; and a folder that holds skill
// folders only one level further down (a repository's root) says where they are.
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  ROOT,
  runCommand,
  suiteProjects,
  type Project,
  type RunResult,
} from '../../helpers/project.ts'

const project = suiteProjects()

/** `yoke ...args` from source (src/cli/main.ts through tsx) in `cwd`, bounded. */
function yoke(p: Project, cwd: string, args: string[]): Promise<RunResult> {
  const main = join(p.dir, '.run-yoke.mjs')
  if (!existsSync(main))
    writeFileSync(
      main,
      `const { main } = await import(${JSON.stringify(join(ROOT, 'src/cli/main.ts'))})\nprocess.exit(await main(process.argv.slice(2)))\n`,
    )
  return runCommand(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), '--conditions=yoke-source', main, ...args],
    {
      cwd,
      env: {
        ...(process.env as Record<string, string>),
        NO_COLOR: '1',
        YOKE_HOME: p.home,
        YOKE_TRUST: '1',
      },
      ms: 120_000,
    },
  )
}

const skill = (p: Project, dir: string, name: string, description = `the ${name} skill`) =>
  p.write(`${dir}/${name}/SKILL.md`, `---\nname: ${name}\ndescription: ${description}\n---\nbody\n`)

describe('yoke skills check DIR', () => {
  it('reads DIR from the working directory, not from the config found in a parent', async () => {
    const p = project({ 'package.json': '{"name":"p"}', 'yoke.config.yaml': 'plugins: {}\n' })
    skill(p, 'skills', 'top-level') // what the config's directory holds under the same name
    skill(p, 'sub/skills', 'wanted')
    p.write('sub/skills/broken/SKILL.md', '---\nname: broken\n---\nno description\n')
    const r = await yoke(p, p.path('sub'), ['skills', 'check', 'skills', '--json'])
    const out = JSON.parse(r.stdout)
    assert.equal(out.skills, 1, r.stdout + r.stderr)
    assert.equal(r.code, 1, 'the broken skill in sub/skills is an error')
    assert.ok(
      out.problems.some((x: { file: string }) => x.file === p.path('sub/skills/broken/SKILL.md')),
      r.stdout,
    )
    const text = await yoke(p, p.path('sub'), ['skills', 'check', 'skills'])
    assert.match(text.stdout, /skills\/broken\/SKILL\.md/)
    assert.doesNotMatch(text.stdout, /top-level/)
  })

  it('--cwd is the working directory too', async () => {
    const p = project({ 'package.json': '{"name":"p"}', 'yoke.config.yaml': 'plugins: {}\n' })
    skill(p, 'sub/skills', 'one')
    skill(p, 'sub/skills', 'two')
    const r = await yoke(p, p.dir, ['skills', 'check', 'skills', '--json', '--cwd', p.path('sub')])
    assert.equal(JSON.parse(r.stdout).skills, 2, r.stdout + r.stderr)
    assert.equal(r.code, 0)
  })

  it('a repository root whose skills are a level down says which folders hold them', async () => {
    const p = project({ 'package.json': '{"name":"p"}' })
    p.write('repo/LICENSE', 'MIT\n')
    p.write('repo/README.md', '# skills\n')
    skill(p, 'repo/skills', 'alpha')
    skill(p, 'repo/preview', 'beta')
    p.write('repo/docs/guide.md', 'no skills here\n')
    const r = await yoke(p, p.dir, ['skills', 'check', 'repo'])
    assert.match(r.stdout, /no skill folders \(a folder with SKILL\.md\) directly in repo/)
    assert.match(r.stdout, /repo\/preview, repo\/skills|repo\/skills, repo\/preview/)
    assert.doesNotMatch(r.stdout, /repo\/docs/)
    const json = JSON.parse((await yoke(p, p.dir, ['skills', 'check', 'repo', '--json'])).stdout)
    assert.deepEqual([...json.deeper].sort(), [p.path('repo/preview'), p.path('repo/skills')])
  })
})
