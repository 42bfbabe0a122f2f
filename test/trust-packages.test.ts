// Project trust for npm-style `use:`s: a package the project brings (its node_modules, or the
// project's own package by a self-reference) is the project's code, so in an untrusted project it
// is not imported by `yoke trust --show`, `inspect`, `plugins list` or `--help` (nor its commands
// module), whoever's layer names it; a `use:` whose `..` segments walk out of a package into the
// project's files is refused; a package above the project (the user's) is imported as before.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { runYoke, suiteProjects, type Project } from './helpers/project.ts'

// test/run.js trusts every project of the suite; these tests are about not being trusted
delete process.env.YOKE_TRUST

/** A package at `dir` whose entry and commands module note each import in `mark`. */
function writePackage(p: Project, dir: string, name: string, mark: string, extra = {}) {
  const note = (what: string) =>
    `import { appendFileSync } from 'node:fs'\nappendFileSync(${JSON.stringify(mark)}, '${what}\\n')\n`
  p.write(
    `${dir}/package.json`,
    JSON.stringify({
      name,
      type: 'module',
      main: 'index.js',
      yoke: { commands: './commands.js' },
      ...extra,
    }),
  )
  p.write(`${dir}/index.js`, `${note('entry')}export default { name: 'shadow', apply() {} }\n`)
  p.write(
    `${dir}/commands.js`,
    `${note('commands')}export const commands = [{ name: 'shadow-hello', summary: 'says hi', run: () => 0 }]\n`,
  )
}

const imported = (mark: string) => (existsSync(mark) ? readFileSync(mark, 'utf8') : '')

describe('trust: packages the project brings', () => {
  const project = suiteProjects()
  const yoke = (p: Project, ...args: string[]) => runYoke(args, { cwd: p.dir, home: p.home })

  it("a package in the project's node_modules waits: nothing imports it until `yoke trust`", async () => {
    const p = project({
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  shadow:\n    use: yoke-plugin-shadow\n',
    })
    const mark = p.path('imported.txt')
    writePackage(p, 'node_modules/yoke-plugin-shadow', 'yoke-plugin-shadow', mark)

    const shown = await yoke(p, 'trust', '--show', '--json')
    assert.equal(shown.code, 0, shown.stderr)
    assert.deepEqual(JSON.parse(shown.stdout).waiting, [
      {
        instance: 'shadow',
        runs: 'the package yoke-plugin-shadow the project brings (node_modules/yoke-plugin-shadow)',
      },
    ])
    const inspect = await yoke(p, 'inspect')
    assert.match(
      inspect.stdout,
      /instance "shadow" is waiting: the project .* is not trusted yet, and this instance runs the package yoke-plugin-shadow/,
    )
    await yoke(p, 'plugins', 'list')
    const help = await yoke(p, '--help')
    assert.equal(help.code, 0, help.stderr)
    assert.doesNotMatch(help.stdout, /shadow-hello/)
    assert.match(
      help.stderr,
      /commands of instance "shadow" .*not loaded: the project is not trusted/,
    )
    assert.equal(imported(mark), '', 'nothing of the project was imported before trust')

    assert.equal((await yoke(p, 'trust')).code, 0)
    const trusted = await yoke(p, '--help')
    assert.match(trusted.stdout, /shadow-hello/)
    assert.match(imported(mark), /commands/)
  })

  it("the user's own layer naming a package the project shadows waits too", async () => {
    const p = project({ 'yoke.config.yaml': 'preset: minimal\n' })
    p.write('.home/patch.yaml', 'plugins:\n  mine:\n    use: yoke-plugin-mine\n')
    const mark = p.path('imported.txt')
    writePackage(p, 'node_modules/yoke-plugin-mine', 'yoke-plugin-mine', mark)
    const inspect = await yoke(p, 'inspect')
    assert.match(inspect.stdout, /instance "mine" is waiting: the project .* is not trusted yet/)
    assert.equal((await yoke(p, 'trust', '--show')).code, 0)
    assert.equal(imported(mark), '')
  })

  it("the project's own package by name (a self-reference) waits", async () => {
    const p = project({
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  self:\n    use: my-app\n',
    })
    const mark = p.path('imported.txt')
    writePackage(p, '.', 'my-app', mark, { exports: { '.': './index.js' } })
    const shown = await yoke(p, 'trust', '--show', '--json')
    assert.deepEqual(JSON.parse(shown.stdout).waiting, [
      { instance: 'self', runs: 'the package my-app the project brings (.)' },
    ])
    await yoke(p, 'inspect')
    assert.equal(imported(mark), '')
  })

  it('a use: with .. segments out of a package is refused, and the file it names is not imported', async () => {
    const p = project({
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n  helper:\n    use: left-pad/../../plugins/evil.mjs\n',
    })
    const mark = p.path('imported.txt')
    p.write('node_modules/left-pad/package.json', '{ "name": "left-pad", "main": "index.js" }\n')
    p.write('node_modules/left-pad/index.js', 'module.exports = () => {}\n')
    p.write(
      'plugins/evil.mjs',
      `import { appendFileSync } from 'node:fs'\nappendFileSync(${JSON.stringify(mark)}, 'evil\\n')\nexport default { name: 'evil', apply() {} }\n`,
    )
    for (const args of [['trust', '--show'], ['inspect'], ['plugins', 'list']])
      await yoke(p, ...args)
    const inspect = await yoke(p, 'inspect')
    assert.equal(inspect.code, 2)
    assert.match(inspect.stderr, /PLUGIN_NOT_FOUND .*left-pad\/\.\.\/\.\.\/plugins\/evil\.mjs/)
    assert.match(inspect.stderr, /yoke\.config\.yaml:4/)
    assert.equal(imported(mark), '')
  })

  it("a package above the project (the user's, not the project's) is imported untrusted", async () => {
    const p = project({
      'app/yoke.config.yaml': 'preset: minimal\nplugins:\n  up:\n    use: yoke-plugin-up\n',
    })
    const mark = p.path('imported.txt')
    writePackage(p, 'node_modules/yoke-plugin-up', 'yoke-plugin-up', mark)
    const app = { ...p, dir: p.path('app') }
    const shown = await yoke(app, 'trust', '--show', '--json')
    assert.deepEqual(JSON.parse(shown.stdout).waiting, [])
    const help = await yoke(app, '--help')
    assert.match(help.stdout, /shadow-hello/)
    assert.match(imported(mark), /commands/)
  })
})
