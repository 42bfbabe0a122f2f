// The CLI frame: help on every level, exit codes, --json, inspect without a running dev.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { runYoke, tempProject } from './helpers/project.ts'

const project = tempProject({
  'ok.mjs': `export default { name: 'ok', provides: ['thing'], apply(ctx) { ctx.provide('thing', 1) } }\n`,
  'wants.mjs': `export default { name: 'wants', inject: ['thing', 'missing'], apply() {} }\n`,
  'boom.mjs': `export default { name: 'boom', apply() { throw new Error('kaboom') } }\n`,
  'yoke.config.yaml': 'plugins:\n  ok:\n    use: ./ok.mjs\n  wants:\n    use: ./wants.mjs\n  boom:\n    use: ./boom.mjs\n',
})
after(() => project.cleanup())
const run = (...args: string[]) => runYoke(args, { cwd: project.dir, home: project.home })

describe('yoke CLI', () => {
  it('--help lists the commands; every command has --help', async () => {
    const top = await run('--help')
    assert.equal(top.code, 0)
    for (const cmd of ['dev', 'config print', 'config validate', 'inspect']) assert.match(top.stdout, new RegExp(`^  ${cmd} `, 'm'))
    assert.match(top.stdout, /Exit codes: 0 done, 1 the operation failed, 2 usage or config error/)
    for (const cmd of [['dev'], ['config', 'print'], ['config', 'validate'], ['inspect']]) {
      const help = await run(...cmd, '--help')
      assert.equal(help.code, 0, cmd.join(' '))
      assert.match(help.stdout, new RegExp(`Usage: yoke ${cmd.join(' ')}`))
      assert.match(help.stdout, /--preset NAME\|PATH/)
    }
    const group = await run('config', '--help')
    assert.equal(group.code, 0)
    assert.match(group.stdout, /yoke config print/)
    assert.match(group.stdout, /yoke config validate/)
  })

  it('usage errors exit 2 with a hint; --json errors are JSON', async () => {
    const unknown = await run('frobnicate')
    assert.equal(unknown.code, 2)
    assert.match(unknown.stderr, /USAGE unknown command "frobnicate"/)
    assert.match(unknown.stderr, /hint Run `yoke --help`/)
    const flag = await run('inspect', '--no-such-flag')
    assert.equal(flag.code, 2)
    assert.match(flag.stderr, /USAGE/)
    const json = await run('config', 'validate', '--bogus', '--json')
    assert.equal(json.code, 2)
    assert.equal(JSON.parse(json.stdout).error.code, 'USAGE')
    const bare = await run()
    assert.equal(bare.code, 2)
    assert.match(bare.stdout, /Usage: yoke <command>/)
    const events = await run('dev', '--events', 'xml')
    assert.equal(events.code, 2)
    assert.match(events.stderr, /--events takes json or text/)
  })

  it('--version prints the version', async () => {
    const v = await run('--version')
    assert.equal(v.code, 0)
    assert.match(v.stdout, /^yoke \d+\.\d+\.\d+/)
  })

  it('inspect composes once when no dev runs: states, why pending, why failed', async () => {
    const human = await run('inspect')
    assert.equal(human.code, 0, human.stderr)
    assert.match(human.stdout, /\(composed now\)/)
    assert.match(human.stdout, /ok\s+active/)
    assert.match(human.stdout, /wants\s+pending/)
    assert.match(human.stdout, /waits for service "missing": no instance and no built-in plugin provides it/)
    assert.doesNotMatch(human.stdout, /waits for service "thing"/)
    assert.match(human.stdout, /boom\s+failed/)
    assert.match(human.stdout, /PLUGIN_APPLY_FAILED instance "boom" \(plugin boom\) failed to apply: kaboom/)
    assert.match(human.stdout, /at yoke\.config\.yaml:7:10/)
    assert.match(human.stdout, /thing ← ok/)
    const json = JSON.parse((await run('inspect', '--json')).stdout)
    assert.equal(json.ok, true)
    assert.deepEqual(
      json.instances.map((i: any) => [i.key, i.state]),
      [['ok', 'active'], ['wants', 'pending'], ['boom', 'failed'], ['yoke:runtime', 'active']],
    )
    assert.deepEqual(
      json.services.filter((s: any) => s.owner !== 'yoke:runtime'),
      [{ name: 'thing', owner: 'ok', active: true }],
    )
  })

  it('--set and --patch reach every command; a config error exits 2', async () => {
    const disabled = JSON.parse((await run('inspect', '--json', '--set', 'plugins.boom.enabled=false')).stdout)
    assert.equal(disabled.instances.find((i: any) => i.key === 'boom').state, 'disabled')
    project.write('off.yaml', 'plugins:\n  wants: null\n')
    const patched = JSON.parse((await run('config', 'print', '--json', '--patch', 'off.yaml')).stdout)
    assert.deepEqual(Object.keys(patched.config.plugins), ['ok', 'boom'])
    const bad = await run('inspect', '--set', 'plugins.ok.use=./nowhere.mjs')
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /PLUGIN_NOT_FOUND/)
    const missingPatch = await run('config', 'print', '--patch', 'nope.yaml')
    assert.equal(missingPatch.code, 2)
    assert.match(missingPatch.stderr, /CONFIG_NOT_FOUND file not found: .*nope\.yaml/)
  })

  it('config validate says what it checked', async () => {
    const ok = await run('config', 'validate', '--set', 'plugins.boom.enabled=false')
    assert.equal(ok.code, 0)
    assert.match(ok.stdout, /valid: 2 of 3 instances enabled, 3 layers/)
  })

  it('a missing --cwd and a stray argument are usage errors', async () => {
    const cwd = await run('config', 'validate', '--cwd', project.path('nope'))
    assert.equal(cwd.code, 2)
    assert.match(cwd.stderr, /USAGE --cwd .*nope is not a directory/)
    const stray = await run('inspect', 'extra')
    assert.equal(stray.code, 2)
    assert.match(stray.stderr, /unexpected argument "extra" for yoke inspect/)
  })

  it('a TypeScript plugin loads by path outside an ESM package', async () => {
    const plain = tempProject({
      'typed.ts': 'const greeting: string = "hi"\nexport default { name: "typed", apply(ctx: { provide(n: string, v: unknown): void }) { ctx.provide("greeting", greeting) } }\n',
      'yoke.config.yaml': 'plugins:\n  typed:\n    use: ./typed.ts\n',
    })
    try {
      const result = await runYoke(['inspect', '--json', '--fresh'], { cwd: plain.dir, home: plain.home })
      assert.equal(result.code, 0, result.stderr)
      assert.ok(JSON.parse(result.stdout).services.some((s: any) => s.name === 'greeting' && s.active))
    } finally {
      plain.cleanup()
    }
  })
})
