// Project trust (DESIGN §9): what a project's own config would run — a local plugin, an exec
// package, a shell hook — waits (pending, PLUGIN_WAITING naming `yoke trust`) until the project is
// trusted; built-ins and the user's own layers are unaffected. The answer is remembered in
// $YOKE_HOME/trust.json with each config file's hash, so an edited config asks again. In process,
// through the CLI (`yoke trust`, `yoke inspect`, `yoke --help`) and through a running `yoke dev`.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { until } from './helpers/until.ts'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { after, describe, it } from 'node:test'
import { Composition, createYoke } from '../src/index.ts'
import { offerTrust } from '../src/cli/trust.ts'
import { configHashes, recordTrust, trustState, updateTrust } from '../src/config/trust.ts'
import { DevProcess, ROOT, runYoke, suiteProjects, type Project } from './helpers/project.ts'

// test/run.js trusts every project of the suite; these tests are about not being trusted
delete process.env.YOKE_TRUST

/** A plugin that leaves a mark when its module is imported and another when it applies. */
const plugin = (name: string) =>
  [
    `import { appendFileSync } from 'node:fs'`,
    `appendFileSync(new URL('./imported.txt', import.meta.url), '${name}\\n')`,
    `export default { name: '${name}', inject: ['runtime'], apply(ctx) {`,
    `  appendFileSync(new URL('./applied.txt', import.meta.url), '${name}\\n')`,
    `  ctx.runtime.register({ name: '${name}_hi', description: 'hi', inputSchema: { type: 'object' }, execute: () => 'hi' })`,
    `} }`,
    '',
  ].join('\n')

const CONFIG = [
  'preset: minimal',
  'plugins:',
  '  hello:',
  '    use: ./hello.mjs',
  '  prompt:',
  '    use: prompt',
  '',
].join('\n')

const marks = (p: Project, file: string) =>
  existsSync(p.path(file)) ? readFileSync(p.path(file), 'utf8').trim().split('\n') : []

describe('project trust', () => {
  const project = suiteProjects()
  const compositions: Composition[] = []
  after(async () => {
    for (const c of compositions) await c.close().catch(() => {})
  })
  const compose = (
    p: Project,
    extra: Partial<ConstructorParameters<typeof Composition>[0]> = {},
  ) => {
    const c = new Composition({ cwd: p.dir, home: p.home, env: {}, runMode: 'once', ...extra })
    compositions.push(c)
    return c
  }
  const stateOf = (c: Composition, key: string) => c.reconciler.running.get(key)?.fiber?.state
  const errorOf = (c: Composition, key: string) => c.reconciler.running.get(key)?.fiber?.error
  const where = (p: Project) => ({ home: p.home, env: {} })
  const projectConfig = (p: Project, files = ['yoke.config.yaml']) => ({
    dir: p.dir,
    files: files.map((f) => p.path(f)),
  })

  it('a fresh project’s local plugin waits, unimported, naming `yoke trust`; built-ins run', async () => {
    const p = project({ 'yoke.config.yaml': CONFIG, 'hello.mjs': plugin('hello') })
    const c = compose(p)
    const event = await c.start()
    assert.equal(event.ok, true, event.errors.map((e) => e.message).join('\n'))
    assert.equal(stateOf(c, 'hello'), 'pending')
    const error = errorOf(c, 'hello')!
    assert.equal(error.code, 'PLUGIN_WAITING')
    assert.match(
      error.message,
      /is not trusted yet, and this instance runs the local module \.\/hello\.mjs/,
    )
    assert.match(error.hint, /`yoke trust`/)
    assert.equal(error.location, `${p.path('yoke.config.yaml')}:4:10`)
    assert.equal(stateOf(c, 'prompt'), 'active')
    assert.deepEqual(
      marks(p, 'imported.txt'),
      [],
      'the module of an untrusted project is not imported',
    )
    assert.equal(c.reconciler.running.get('hello')?.spec.untrusted, true)
  })

  it('runs after it is trusted; an edited config asks again, naming the file', async () => {
    const p = project({ 'yoke.config.yaml': CONFIG, 'hello.mjs': plugin('hello') })
    const c = compose(p)
    await c.start()
    assert.equal(stateOf(c, 'hello'), 'pending')
    await recordTrust(projectConfig(p), true, where(p))
    const reload = await c.reload()
    assert.deepEqual(reload.restarted, ['hello'])
    assert.equal(stateOf(c, 'hello'), 'active')
    assert.deepEqual(marks(p, 'applied.txt'), ['hello'])
    assert.ok(c.runtime?.list().some((t) => t.name === 'hello_hi'))

    p.write('yoke.config.yaml', CONFIG + '# an edit\n')
    await c.reload()
    assert.equal(stateOf(c, 'hello'), 'pending')
    assert.match(
      errorOf(c, 'hello')!.message,
      /yoke\.config\.yaml changed since the project .* was trusted/,
    )
    assert.ok(!c.runtime?.list().some((t) => t.name === 'hello_hi'), 'its tool went with it')
    assert.equal(trustState(projectConfig(p), where(p)).state, 'changed')
  })

  it('a declined project waits and says so; trust: true, a function and YOKE_TRUST decide too', async () => {
    const p = project({ 'yoke.config.yaml': CONFIG, 'hello.mjs': plugin('hello') })
    await recordTrust(projectConfig(p), false, where(p))
    const declined = compose(p)
    await declined.start()
    assert.match(errorOf(declined, 'hello')!.message, /trust was declined/)

    const asked: unknown[] = []
    const byFunction = compose(p, { trust: (project) => (asked.push(project), true) })
    await byFunction.start()
    assert.equal(stateOf(byFunction, 'hello'), 'active')
    assert.ok(asked.length > 0)
    for (const project of asked)
      assert.deepEqual(project, { dir: p.dir, files: [p.path('yoke.config.yaml')] })

    const byEnv = compose(p, { env: { YOKE_TRUST: '1' } })
    await byEnv.start()
    assert.equal(stateOf(byEnv, 'hello'), 'active')

    await recordTrust(projectConfig(p), true, where(p))
    const off = compose(p, { trust: false })
    await off.start()
    assert.match(errorOf(off, 'hello')!.message, /trust: false/)
  })

  it("the user's own layers are unaffected; a preset the project brings is the project's", async () => {
    const p = project({
      'yoke.config.yaml': 'preset: team\n',
      'presets/team.yaml': 'plugins:\n  team:\n    use: ../team.mjs\n',
      'team.mjs': plugin('team'),
      'mine.mjs': plugin('mine'),
      'set.mjs': plugin('set'),
    })
    p.write('.home/patch.yaml', `plugins:\n  mine:\n    use: ${p.path('mine.mjs')}\n`)
    const c = compose(p, { sets: [`plugins.byset={"use": "${p.path('set.mjs')}"}`] })
    const event = await c.start()
    assert.equal(event.ok, true, event.errors.map((e) => e.message).join('\n'))
    assert.equal(stateOf(c, 'mine'), 'active')
    assert.equal(stateOf(c, 'byset'), 'active')
    assert.equal(stateOf(c, 'team'), 'pending')
    assert.deepEqual(marks(p, 'imported.txt').sort(), ['mine', 'set'])
  })

  it('exec packages and shell hooks from the project wait; from the user patch they run', async () => {
    const hooks = '    config:\n      hooks: [{ event: after_tool_call, command: [./hook.sh] }]\n'
    const p = project({
      'yoke.config.yaml': [
        'preset: minimal',
        'plugins:',
        '  packages:',
        '    use: exec-tools',
        '    config: { dirs: [./packages] }',
        '  hooks:',
        '    use: shell-hooks',
        hooks,
        '  quiet:',
        '    use: shell-hooks',
        '',
      ].join('\n'),
    })
    p.write(
      '.home/patch.yaml',
      'plugins:\n  mine:\n    use: exec-tools\n    config: { dirs: [./packages] }\n',
    )
    const c = compose(p)
    await c.start()
    assert.equal(stateOf(c, 'packages'), 'pending')
    assert.match(errorOf(c, 'packages')!.message, /runs project code \(exec-tools\)/)
    assert.equal(stateOf(c, 'hooks'), 'pending')
    assert.equal(stateOf(c, 'quiet'), 'active', 'shell-hooks with no hooks runs nothing')
    assert.equal(stateOf(c, 'mine'), 'active')
  })

  it("an exec package from the project's config runs once the project is trusted", async () => {
    const packages = join(ROOT, 'examples', 'packages')
    const config = `preset: minimal\nplugins:\n  packages:\n    use: exec-tools\n    config: { dirs: [${JSON.stringify(packages)}], watch: false }\n`
    const p = project({ 'yoke.config.yaml': config })
    const c = compose(p)
    await c.start()
    assert.equal(stateOf(c, 'packages'), 'pending')
    const words = () => c.runtime?.list().some((t) => t.name === 'word_count') === true
    assert.equal(words(), false)
    await recordTrust(projectConfig(p), true, where(p))
    await c.reload()
    await until('the package to load after trust', words)
    const result = await c.runtime!.call('word_count', { text: 'one two three' })
    assert.equal(result.ok, true, JSON.stringify(result))
  })

  it('Claude Code plugin folders and hooks from the project wait; the base preset’s own run', async () => {
    const p = project({
      'yoke.config.yaml': [
        'preset: base',
        'plugins:',
        '  claude-plugins:',
        '    config: { dirs: [./cc] }',
        '  settings-hooks:',
        '    use: claude-hooks',
        '    config: { files: [.claude/settings.json] }',
        '',
      ].join('\n'),
    })
    const c = compose(p)
    await c.start()
    assert.equal(stateOf(c, 'claude-plugins'), 'pending')
    assert.equal(stateOf(c, 'settings-hooks'), 'pending')
    assert.equal(stateOf(c, 'skills'), 'active')
    const bare = compose(project({ 'yoke.config.yaml': 'preset: base\n' }))
    await bare.start()
    assert.equal(stateOf(bare, 'claude-plugins'), 'active', 'no project value in its entry')
  })

  it('package.json counts by its yoke key; a broken store fails closed, naming it', async () => {
    const p = project({
      'package.json': '{"name":"x","version":"1.0.0","yoke":{"preset":"minimal"}}',
    })
    const before = configHashes({ dir: p.dir, files: [p.path('package.json')] })
    p.write('package.json', '{"name":"x","version":"1.0.1","yoke":{"preset":"minimal"}}')
    assert.deepEqual(configHashes({ dir: p.dir, files: [p.path('package.json')] }), before)

    const q = project({ 'yoke.config.yaml': CONFIG, 'hello.mjs': plugin('hello') })
    q.write('.home/trust.json', '{"version": 1, "projects": ')
    const c = compose(q)
    await c.start()
    assert.equal(stateOf(c, 'hello'), 'pending')
    assert.match(
      errorOf(c, 'hello')!.message,
      /the trust store cannot be read \(cannot read .*trust\.json/,
    )
    await assert.rejects(
      updateTrust(where(q), () => {}),
      (err: Error & { code?: string }) =>
        err.code === 'CONFIG_READ_FAILED' && /remove it/.test(err.message),
    )
  })

  it('createYoke: by default as the CLI (it waits); trust: true runs the application’s own config', async () => {
    const p = project({ 'yoke.config.yaml': CONFIG, 'hello.mjs': plugin('hello') })
    const quiet = () => {}
    const waits = createYoke({ cwd: p.dir, home: p.home, env: {}, onLog: quiet })
    const runs = createYoke({ cwd: p.dir, home: p.home, env: {}, onLog: quiet, trust: true })
    try {
      await Promise.all([waits.ready, runs.ready])
      assert.equal(waits.composition.reconciler.running.get('hello')?.fiber?.state, 'pending')
      assert.equal((await waits.call('hello_hi')).ok, false)
      assert.equal((await runs.call('hello_hi')).ok, true)
    } finally {
      await Promise.all([waits.close(), runs.close()])
    }
  })

  it('a disabled local plugin of an untrusted project is not imported', async () => {
    const p = project({
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n  off:\n    use: ./off.mjs\n    enabled: false\n',
      'off.mjs': plugin('off'),
    })
    const c = compose(p)
    assert.equal((await c.start()).ok, true)
    assert.deepEqual(marks(p, 'imported.txt'), [])
  })

  it('yoke dev on a terminal asks once: yes trusts and starts it, no is remembered', async () => {
    const p = project({ 'yoke.config.yaml': CONFIG, 'hello.mjs': plugin('hello') })
    const io = () => {
      const input = new PassThrough()
      const output = Object.assign(new PassThrough(), {
        isTTY: false,
      }) as unknown as NodeJS.WriteStream
      let text = ''
      ;(output as unknown as PassThrough).on('data', (d) => (text += d))
      return { input, output, text: () => text }
    }
    const c = compose(p, { runMode: 'serve' })
    await c.start()
    const no = io()
    const asking = offerTrust(c, no)
    no.input.write('n\n')
    assert.equal(await asking, true)
    assert.match(no.text(), /hello +the local module \.\/hello\.mjs/)
    assert.match(no.text(), /\[y\/N\]/)
    assert.equal(trustState(projectConfig(p), where(p)).state, 'declined')
    assert.equal(await offerTrust(c, io()), false, 'a refusal is not asked again')

    p.write('yoke.config.yaml', CONFIG + '# changed\n')
    await c.reload()
    const yes = io()
    const asked = offerTrust(c, yes)
    yes.input.write('y\n')
    assert.equal(await asked, true)
    assert.match(yes.text(), /yoke\.config\.yaml changed since it was last answered/)
    assert.equal(stateOf(c, 'hello'), 'active')
    assert.equal(trustState(projectConfig(p), where(p)).state, 'trusted')
  })
})

describe('yoke trust, inspect and dev', () => {
  const project = suiteProjects()

  const commandsPlugin = {
    'yoke.config.yaml': 'preset: minimal\nplugins:\n  hello:\n    use: ./hello/index.mjs\n',
    'hello/index.mjs': plugin('hello'),
    'hello/commands.mjs': [
      `import { appendFileSync } from 'node:fs'`,
      `appendFileSync(new URL('./imported.txt', import.meta.url), 'commands\\n')`,
      `export const commands = [{ name: 'hello', summary: 'says hello', run: async () => (console.log('hello'), 0) }]`,
      '',
    ].join('\n'),
  }

  it('inspect says what waits; yoke trust lets it run; --show, --revoke; an edit asks again', async () => {
    const p = project(commandsPlugin)
    const opts = { cwd: p.dir, home: p.home }
    const show = async () => JSON.parse((await runYoke(['trust', '--show', '--json'], opts)).stdout)

    const inspect = await runYoke(['inspect', '--json'], opts)
    const hello = JSON.parse(inspect.stdout).instances.find(
      (i: { key: string }) => i.key === 'hello',
    )
    assert.equal(hello.state, 'pending')
    assert.match(hello.error.message, /not trusted yet/)
    assert.deepEqual(marks(p, 'hello/imported.txt'), [])

    const before = await show()
    assert.equal(before.state, 'new')
    assert.deepEqual(before.waiting, [
      { instance: 'hello', runs: 'the local module ./hello/index.mjs' },
    ])

    const help = await runYoke(['--help'], opts)
    assert.match(
      help.stderr,
      /the commands of instance "hello" .* not loaded: the project is not trusted yet/,
    )
    assert.doesNotMatch(help.stdout, /says hello/)
    assert.deepEqual(marks(p, 'hello/imported.txt'), [], '--help imported nothing of the project')

    const trusted = await runYoke(['trust'], opts)
    assert.equal(trusted.code, 0, trusted.stderr)
    assert.match(trusted.stdout, /trusted .*\n  may run now: hello/)
    assert.equal((await show()).state, 'trusted')
    const tools = await runYoke(['tools', 'list', '--json'], opts)
    assert.match(tools.stdout, /hello_hi/)
    assert.match((await runYoke(['--help'], opts)).stdout, /says hello/)

    p.write('yoke.config.yaml', commandsPlugin['yoke.config.yaml'] + '# edited\n')
    const changed = await show()
    assert.equal(changed.state, 'changed')
    assert.deepEqual(changed.changed, ['yoke.config.yaml'])
    // --trust runs it once, and remembers nothing
    assert.match((await runYoke(['tools', 'list', '--trust', '--json'], opts)).stdout, /hello_hi/)
    assert.equal((await show()).state, 'changed')

    const revoked = await runYoke(['trust', '--revoke', '--json'], opts)
    assert.deepEqual(JSON.parse(revoked.stdout), { project: p.dir, revoked: true })
    assert.equal((await show()).state, 'new')
    const store = JSON.parse(readFileSync(join(p.home, 'trust.json'), 'utf8'))
    assert.deepEqual(store, { version: 1, projects: {} })
  })

  it('a running yoke dev starts what waited once `yoke trust` runs, and stops it on --revoke', async () => {
    const p = project(commandsPlugin)
    const dev = new DevProcess([], { cwd: p.dir, home: p.home })
    try {
      await dev.ready()
      const loaded = dev.events.find((e) => e.type === 'loaded')!
      assert.equal(
        loaded.instances.find((i: { key: string }) => i.key === 'hello').state,
        'pending',
      )
      const from = dev.events.length
      assert.equal((await runYoke(['trust'], { cwd: p.dir, home: p.home })).code, 0)
      await dev.next(
        (e) => e.type === 'state' && e.instance === 'hello' && e.state === 'active',
        15000,
        from,
      )
      assert.deepEqual(marks(p, 'hello/applied.txt'), ['hello'])
      const again = dev.events.length
      assert.equal((await runYoke(['trust', '--revoke'], { cwd: p.dir, home: p.home })).code, 0)
      await dev.next(
        (e) =>
          e.type === 'reload' &&
          e.instances.find((i: { key: string }) => i.key === 'hello')?.state === 'pending',
        15000,
        again,
      )
    } finally {
      await dev.stop()
    }
  })
})
