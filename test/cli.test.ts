// The CLI frame: help on every level, exit codes, --json, inspect without a running dev (the
// commands on projects of their own are in cli-projects.test.ts).
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { execFile, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, symlinkSync } from 'node:fs'
import { once } from 'node:events'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { displayPath } from '../src/cli/output.ts'
import { RUN_MS, runYoke, tempProject, YOKE } from './helpers/project.ts'
import { removeTree } from './helpers/temp.ts'

const project = tempProject({
  'ok.mjs': `export default { name: 'ok', provides: ['thing'], apply(ctx) { ctx.provide('thing', 1) } }\n`,
  'wants.mjs': `export default { name: 'wants', inject: ['thing', 'missing'], apply() {} }\n`,
  'boom.mjs': `export default { name: 'boom', apply() { throw new Error('kaboom') } }\n`,
  'yoke.config.yaml':
    'preset: minimal\nplugins:\n  ok:\n    use: ./ok.mjs\n  wants:\n    use: ./wants.mjs\n  boom:\n    use: ./boom.mjs\n',
})
after(() => project.cleanup())
const run = (...args: string[]) => runYoke(args, { cwd: project.dir, home: project.home })

describe('yoke CLI', () => {
  it('--help lists the commands; every command has --help', async () => {
    const top = await run('--help')
    assert.equal(top.code, 0)
    for (const cmd of ['dev', 'config print', 'config validate', 'inspect'])
      assert.match(top.stdout, new RegExp(`^  ${cmd} `, 'm'))
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

  it('yoke help, per-command flags, did-you-mean for commands and flags', async () => {
    const help = await run('help', 'tools', 'call')
    assert.equal(help.code, 0)
    assert.match(help.stdout, /Usage: yoke tools call NAME/)
    assert.match(help.stdout, /Flags:\n {2}--args JSON +the tool's arguments/)
    assert.match((await run('help')).stdout, /Usage: yoke <command>/)
    const flag = await run('tools', 'list', '--jsn')
    assert.equal(flag.code, 2)
    assert.match(flag.stderr, /USAGE unknown flag --jsn \(did you mean --json\?\)/)
    const words = await run('tool', 'list')
    assert.match(words.stderr, /unknown command "tool list" \(did you mean "yoke tools list"\?\)/)
    assert.match((await run('inspekt')).stderr, /did you mean "yoke inspect"/)
    assert.doesNotMatch((await run('frobnicate')).stderr, /did you mean/)
    const group = await run('tools')
    assert.equal(group.code, 2)
    assert.match(group.stderr, /yoke tools needs a subcommand: list, call/)
    // help for a command that does not exist is an error, not the top help with exit 0
    for (const words of [
      ['help', 'toolz'],
      ['toolz', '--help'],
      ['tools', 'lst', '--help'],
    ]) {
      const typo = await run(...words)
      assert.equal(typo.code, 2, words.join(' '))
      assert.match(typo.stderr, /USAGE unknown command/, words.join(' '))
    }
    assert.match((await run('help', 'toolz')).stderr, /did you mean "yoke tools"/)
    assert.match((await run('tools', '--help')).stdout, /yoke tools list — /)
  })

  it('a plugin name one letter off a built-in is suggested', async () => {
    const typo = tempProject({
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  p:\n    use: polcy\n',
    })
    try {
      const r = await runYoke(['config', 'validate'], { cwd: typo.dir, home: typo.home })
      assert.equal(r.code, 2)
      assert.match(r.stderr, /PLUGIN_NOT_FOUND .*\(did you mean the built-in "policy"\?\)/)
      assert.match(r.stderr, /yoke\.config\.yaml:4:10/)
    } finally {
      typo.cleanup()
    }
  })

  it('a reader that goes away ends yoke as SIGPIPE would (141), without an EPIPE trace', async () => {
    const child = spawn(process.execPath, [YOKE, '--help'], {
      cwd: project.dir,
      env: { ...process.env, NO_COLOR: '1', YOKE_HOME: project.home },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout.destroy() // the reader is gone before yoke writes a line
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    const code = await Promise.race([
      once(child, 'exit').then(([c]) => c),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error(`no exit in ${RUN_MS} ms`)), RUN_MS).unref(),
      ),
    ])
    assert.equal(code, 141)
    assert.doesNotMatch(stderr, /EPIPE/)
  })

  it('paths in the home directory read as ~/… from outside it', () => {
    const home = homedir()
    assert.equal(
      displayPath(join(home, '.agents', 'skills'), '/nonexistent/project'),
      '~/.agents/skills',
    )
    assert.equal(displayPath('/nonexistent/project/skills', '/nonexistent/project'), 'skills')
  })

  it("yoke completion bash completes command words and a command's own flags through yoke itself", async (t) => {
    const shim = mkdtempSync(join(tmpdir(), 'yoke-shim-'))
    t.after(() => removeTree(shim))
    symlinkSync(YOKE, join(shim, 'yoke'))
    const complete = (line: string[], cword: number) =>
      new Promise<string[]>((resolve, reject) => {
        const words = line.map((w) => `'${w}'`).join(' ')
        execFile(
          'bash',
          [
            '-c',
            `source <(yoke completion bash); COMP_WORDS=(${words}); COMP_CWORD=${cword}; _yoke; printf '%s\\n' "\${COMPREPLY[@]}"`,
          ],
          {
            cwd: project.dir,
            env: { ...process.env, PATH: `${shim}:${process.env.PATH}`, YOKE_HOME: project.home },
            timeout: RUN_MS, // a yoke run inside, as runYoke bounds one
          },
          (err, stdout, stderr) =>
            err
              ? reject(new Error(`${err.message}\n${stderr}`))
              : resolve(stdout.split('\n').filter(Boolean)),
        )
      })
    assert.deepEqual(await complete(['yoke', 'con'], 1), ['config', 'console'])
    assert.deepEqual(await complete(['yoke', 'config', ''], 2), ['print', 'validate'])
    assert.deepEqual(await complete(['yoke', 'tools', 'call', '--a'], 3), ['--args'])
    assert.ok((await complete(['yoke', ''], 1)).includes('help'))
    const unknown = await run('completion', 'tcsh')
    assert.equal(unknown.code, 2)
    assert.match(unknown.stderr, /takes bash, zsh, fish, not "tcsh"/)
  })

  it('Ctrl-C during yoke tools call aborts the call and exits 130', async (t) => {
    const slow = tempProject({
      'slow.mjs': `import { writeFileSync } from 'node:fs'
export default { name: 'slow', inject: ['runtime'], apply(ctx) {
  ctx.runtime.register({ name: 'wait', description: 'waits until aborted', execute: (_, call) => new Promise((resolve) => {
    writeFileSync('started', '')
    call.signal.addEventListener('abort', () => { writeFileSync('aborted', ''); resolve('aborted') })
  }) })
} }
`,
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  slow:\n    use: ./slow.mjs\n',
    })
    t.after(() => slow.cleanup())
    const child = spawn(process.execPath, [YOKE, 'tools', 'call', 'wait'], {
      cwd: slow.dir,
      env: { ...process.env, NO_COLOR: '1', YOKE_HOME: slow.home },
      stdio: 'ignore',
    })
    const exited = once(child, 'exit')
    for (let waited = 0; !existsSync(slow.path('started')); waited += 50) {
      // a yoke run's start: bounded as runYoke bounds a whole run
      assert.ok(waited < RUN_MS, 'the tool never started')
      await new Promise((r) => setTimeout(r, 50))
    }
    child.kill('SIGINT')
    const [code] = await Promise.race([
      exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`no exit in ${RUN_MS} ms`)), RUN_MS).unref(),
      ),
    ])
    assert.equal(code, 130)
    assert.ok(existsSync(slow.path('aborted')), 'the tool saw the abort')
  })

  it('yoke doctor: Node, the config, failed and waiting instances, plugin checks; exit 1 on an error', async () => {
    const doc = await run('doctor', '--json')
    assert.equal(doc.code, 1, doc.stderr)
    const { ok, checks } = JSON.parse(doc.stdout)
    assert.equal(ok, false)
    const says = (level: string, pattern: RegExp) =>
      assert.ok(
        checks.some((c: any) => c.level === level && pattern.test(c.message)),
        `${level} ${pattern}: ${JSON.stringify(checks)}`,
      )
    says('ok', /^node \d+\.\d+\.\d+ \(yoke needs >=/)
    says('ok', /^project config yoke\.config\.yaml/)
    says('error', /instance "boom" \(boom\) is failed: .*kaboom/)
    says('warn', /instance "wants" \(wants\) is pending: waits for missing/)
    const checked = tempProject({
      'checks.mjs': `export default { name: 'checks', apply(ctx) {
  ctx.control('checks/doctor', () => [{ level: 'ok', message: 'the thing is fine' }, { level: 'warn', message: 'the other thing is odd', hint: 'look at it' }])
} }
`,
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  checks:\n    use: ./checks.mjs\n',
    })
    try {
      const text = await runYoke(['doctor'], { cwd: checked.dir, home: checked.home })
      assert.equal(text.code, 0, text.stdout + text.stderr)
      assert.match(text.stdout, /✓ checks: the thing is fine/)
      assert.match(text.stdout, /! checks: the other thing is odd\n {2}hint look at it/)
      assert.match(text.stdout, /ok, 1 warning, 0 errors/)
    } finally {
      checked.cleanup()
    }
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
    assert.match(
      human.stdout,
      /waits for service "missing": no instance and no built-in plugin provides it/,
    )
    assert.doesNotMatch(human.stdout, /waits for service "thing"/)
    assert.match(human.stdout, /boom\s+failed/)
    assert.match(
      human.stdout,
      /PLUGIN_APPLY_FAILED instance "boom" \(plugin boom\) failed to apply: kaboom/,
    )
    assert.match(human.stdout, /at yoke\.config\.yaml:8:10/)
    assert.match(human.stdout, /thing ← ok/)
    const json = JSON.parse((await run('inspect', '--json')).stdout)
    assert.equal(json.ok, true)
    const states: Array<[string, string]> = json.instances.map((i: any) => [i.key, i.state])
    // the project's instances in its order; yoke's own (runtime, project, …) after them, active
    assert.deepEqual(
      states.filter(([key]) => !key.startsWith('yoke:')),
      [
        ['ok', 'active'],
        ['wants', 'pending'],
        ['boom', 'failed'],
      ],
    )
    assert.equal(
      states.findIndex(([key]) => key.startsWith('yoke:')),
      3,
    )
    for (const key of ['yoke:runtime', 'yoke:project'])
      assert.deepEqual(
        states.find(([k]) => k === key),
        [key, 'active'],
      )
    assert.deepEqual(
      json.services.filter((s: any) => !s.owner.startsWith('yoke:')),
      [{ name: 'thing', owner: 'ok', active: true }],
    )
  })

  it('--set and --patch reach every command; a config error exits 2', async () => {
    const disabled = JSON.parse(
      (await run('inspect', '--json', '--set', 'plugins.boom.enabled=false')).stdout,
    )
    assert.equal(disabled.instances.find((i: any) => i.key === 'boom').state, 'disabled')
    project.write('off.yaml', 'plugins:\n  wants: null\n')
    const patched = JSON.parse(
      (await run('config', 'print', '--json', '--patch', 'off.yaml')).stdout,
    )
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

  it('the runtime: key configures the core runtime and is validated with its location', async () => {
    const p = tempProject({ 'yoke.config.yaml': 'runtime:\n  timeoutMs: -5\nplugins: {}\n' })
    try {
      const bad = await runYoke(['config', 'validate', '--json'], { cwd: p.dir, home: p.home })
      assert.equal(bad.code, 2)
      const [err] = JSON.parse(bad.stdout).errors
      assert.equal(err.code, 'CONFIG_INVALID')
      assert.match(err.location, /yoke\.config\.yaml:2:14$/)
      assert.match(err.message, /runtime\.timeoutMs/)
    } finally {
      p.cleanup()
    }
  })
})
