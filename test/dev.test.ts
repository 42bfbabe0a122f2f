// Hot reload, driven through `yoke dev --events json` in a temporary project (DESIGN §5).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  DevProcess,
  runYoke,
  runYokeWithInput,
  sleep,
  tempProject,
  YOKE,
  type DevEvent,
} from './helpers/project.ts'
import { socketPath } from '../src/cli/control.ts'
import { until } from './helpers/until.ts'

// A plugin that holds one of every kind of registration: service, tap, watcher, timer.
const COUNTER = (version: string) => `
export default {
  name: 'counter',
  provides: ['counter'],
  apply(ctx, config) {
    let n = 0
    ctx.provide('counter', { next: () => ++n })
    ctx.tap(ctx.hooks.state, 'counter', () => {})
    ctx.setInterval(() => {}, 60000)
    ctx.watch(new URL('./watched.txt', import.meta.url).pathname.replace(/\\?.*/, ''), () => {})
    ctx.logger.info('counter ${version} step=' + config.step)
  },
}
`
const USER = `
export default {
  name: 'user',
  inject: ['counter'],
  apply(ctx) { ctx.logger.info('user got ' + ctx.counter.next()) },
}
`
const OTHER = `import { label } from './lib.mjs'
export default { name: 'other', apply(ctx, config) { ctx.logger.info(label + ' ' + config.word) } }
`
const CONFIG = (step: number, extra = '') => `preset: minimal
plugins:
  counter:
    use: ./plugins/counter.mjs
    config: { step: ${step} }
  user:
    use: ./plugins/user.mjs
  other:
    use: ./plugins/other.mjs
    config: { word: hi }
${extra}`

const byKey = (event: DevEvent) => Object.fromEntries(event.instances.map((i: any) => [i.key, i]))

describe('yoke dev hot reload', () => {
  const project = tempProject({
    'plugins/counter.mjs': COUNTER('v1'),
    'plugins/user.mjs': USER,
    'plugins/other.mjs': OTHER,
    'plugins/lib.mjs': `export const label = 'other v1'\n`,
    'plugins/watched.txt': 'x',
    'yoke.config.yaml': CONFIG(1),
  })
  let dev: DevProcess
  let loaded: DevEvent
  const inspect = async () => {
    const run = await runYoke(['inspect', '--json'], { cwd: project.dir, home: project.home })
    assert.equal(run.code, 0, run.stderr)
    const snap = JSON.parse(run.stdout)
    assert.equal(snap.source, 'live from yoke dev')
    return snap
  }

  before(async () => {
    dev = new DevProcess([], { cwd: project.dir, home: project.home })
    await dev.ready()
    loaded = dev.events.find((e) => e.type === 'loaded')!
  })
  after(async () => {
    const code = await dev.stop()
    project.cleanup()
    assert.equal(code, 0, dev.stderr)
  })

  it('loads every instance and says so', () => {
    assert.equal(loaded.ok, true)
    assert.deepEqual(loaded.added, ['counter', 'user', 'other'])
    assert.deepEqual(
      Object.values(byKey(loaded)).map((i: any) => i.state),
      ['active', 'active', 'active'],
    )
    assert.ok(dev.events.some((e) => e.type === 'log' && e.message === 'counter v1 step=1'))
  })

  it('editing one instance restarts only that one (and its dependents re-apply in place)', async () => {
    const before = byKey(loaded)
    const event = await dev.reloadAfter(() => project.write('yoke.config.yaml', CONFIG(2)))
    assert.equal(event.ok, true)
    assert.deepEqual(event.restarted, ['counter'])
    assert.deepEqual(event.unchanged, ['user', 'other'])
    const now = byKey(event)
    assert.notEqual(now.counter.fiber, before.counter.fiber)
    assert.equal(now.user.fiber, before.user.fiber, 'the dependent keeps its fiber')
    assert.equal(now.other.fiber, before.other.fiber)
    assert.equal(now.user.state, 'active')
    assert.ok(dev.events.some((e) => e.type === 'log' && e.message === 'counter v1 step=2'))
  })

  it('an invalid edit keeps the running generation and reports where; the fix applies', async () => {
    const running = byKey(dev.events.filter((e) => e.type === 'reload').at(-1)!)
    const bad = await dev.reloadAfter(() =>
      project.write(
        'yoke.config.yaml',
        CONFIG(3).replace('config: { step: 3 }', 'config: { step: 3'),
      ),
    )
    assert.equal(bad.ok, false)
    assert.equal(bad.errors[0].code, 'CONFIG_SYNTAX')
    assert.match(bad.errors[0].location, /yoke\.config\.yaml:\d+:\d+$/)
    assert.ok(bad.errors[0].hint)
    assert.deepEqual(byKey(bad), running, 'nothing changed')
    const fixed = await dev.reloadAfter(() => project.write('yoke.config.yaml', CONFIG(3)))
    assert.equal(fixed.ok, true)
    assert.deepEqual(fixed.restarted, ['counter'])
  })

  it('editing a local plugin module runs the new code, its imports included', async () => {
    const event = await dev.reloadAfter(() => project.write('plugins/counter.mjs', COUNTER('v2')))
    assert.deepEqual(event.restarted, ['counter'])
    assert.ok(dev.events.some((e) => e.type === 'log' && e.message === 'counter v2 step=3'))
    const viaImport = await dev.reloadAfter(() =>
      project.write('plugins/lib.mjs', `export const label = 'other v2'\n`),
    )
    assert.deepEqual(viaImport.restarted, ['other'])
    assert.ok(dev.events.some((e) => e.type === 'log' && e.message === 'other v2 hi'))
  })

  it('a syntax error in a module keeps the old code running', async () => {
    const before = byKey(dev.events.filter((e) => e.type === 'reload').at(-1)!)
    const event = await dev.reloadAfter(() =>
      project.write(
        'plugins/counter.mjs',
        COUNTER('v3').replace('apply(ctx, config) {', 'apply(ctx, config) {{'),
      ),
    )
    assert.equal(event.failed[0].instance, 'counter')
    assert.equal(event.failed[0].error.code, 'PLUGIN_IMPORT_FAILED')
    const now = byKey(event)
    assert.equal(now.counter.fiber, before.counter.fiber)
    assert.equal(now.counter.state, 'active')
    const fixed = await dev.reloadAfter(() => project.write('plugins/counter.mjs', COUNTER('v4')))
    assert.deepEqual(fixed.restarted, ['counter'])
    assert.ok(dev.events.some((e) => e.type === 'log' && e.message === 'counter v4 step=3'))
  })

  it('a dependent goes pending when its provider is disabled, and inspect explains the wait', async () => {
    const disabled = await dev.reloadAfter(() =>
      project.write(
        'yoke.config.yaml',
        CONFIG(3).replace('config: { step: 3 }', 'config: { step: 3 }\n    enabled: false'),
      ),
    )
    assert.deepEqual(disabled.removed, ['counter'])
    assert.equal(byKey(disabled).user.state, 'pending')
    assert.equal(byKey(disabled).counter.state, 'disabled')
    const snap = await inspect()
    const user = snap.instances.find((i: any) => i.key === 'user')
    assert.equal(user.state, 'pending')
    assert.deepEqual(user.waitingFor, [
      { service: 'counter', providers: [{ instance: 'counter', state: 'disabled' }] },
    ])
    const human = await runYoke(['inspect'], { cwd: project.dir, home: project.home })
    assert.match(
      human.stdout,
      /waits for service "counter": provided by instance "counter" \(disabled\)/,
    )
    const on = await dev.reloadAfter(() => project.write('yoke.config.yaml', CONFIG(3)))
    assert.deepEqual(on.added, ['counter'])
    assert.equal(byKey(on).user.state, 'active')
  })

  it('a plugin whose apply throws is failed alone; inspect shows its error, key and file:line', async () => {
    project.write(
      'plugins/thrower.mjs',
      `export default { name: 'thrower', apply() { throw new Error('kaboom') } }\n`,
    )
    const event = await dev.reloadAfter(() =>
      project.write('yoke.config.yaml', CONFIG(3, '  thrower:\n    use: ./plugins/thrower.mjs\n')),
    )
    assert.deepEqual(event.added, ['thrower'])
    assert.equal(event.failed[0].error.code, 'PLUGIN_APPLY_FAILED')
    const states = byKey(event)
    assert.equal(states.thrower.state, 'failed')
    assert.deepEqual(
      [states.counter.state, states.user.state, states.other.state],
      ['active', 'active', 'active'],
    )
    const snap = await inspect()
    const thrower = snap.instances.find((i: any) => i.key === 'thrower')
    assert.equal(thrower.error.code, 'PLUGIN_APPLY_FAILED')
    assert.equal(thrower.error.instance, 'thrower')
    assert.match(thrower.error.location, /yoke\.config\.yaml:12:10$/)
    assert.match(thrower.error.message, /kaboom/)
  })

  it('a change whose new version fails to apply is rolled back to the running version', async () => {
    const running = byKey(dev.events.filter((e) => e.type === 'reload').at(-1)!)
    project.write(
      'plugins/picky.mjs',
      `export default { name: 'picky', apply(ctx, config) { if (config.fail) throw new Error('refused'); ctx.logger.info('picky ok') } }\n`,
    )
    const added = await dev.reloadAfter(() =>
      project.write('yoke.config.yaml', CONFIG(3, '  picky:\n    use: ./plugins/picky.mjs\n')),
    )
    assert.equal(byKey(added).picky.state, 'active')
    const bad = await dev.reloadAfter(() =>
      project.write(
        'yoke.config.yaml',
        CONFIG(3, '  picky:\n    use: ./plugins/picky.mjs\n    config: { fail: true }\n'),
      ),
    )
    assert.equal(bad.failed[0].error.code, 'RELOAD_ROLLED_BACK')
    assert.match(bad.failed[0].error.message, /refused/)
    assert.equal(byKey(bad).picky.state, 'active', 'the previous version runs again')
    assert.equal(byKey(bad).counter.fiber, running.counter.fiber)
    const swapped = await dev.reloadAfter(() =>
      project.write(
        'yoke.config.yaml',
        CONFIG(3, '  picky:\n    use: ./plugins/other.mjs\n    config: { word: swapped }\n'),
      ),
    )
    assert.deepEqual(swapped.restarted, ['picky'], 'a changed use: is a change')
    assert.ok(
      dev.events.some(
        (e) => e.type === 'log' && e.instance === 'picky' && e.message === 'other v2 swapped',
      ),
    )
  })

  it('50 rapid edits end in the final state', async () => {
    const after = dev.events.length
    for (let i = 1; i <= 50; i++) {
      project.write('yoke.config.yaml', CONFIG(100 + i))
      if (i % 10 === 0) await sleep(5)
    }
    await until(
      'the final state (counter v4 step=150)',
      () =>
        dev.events
          .slice(after)
          .some((e) => e.type === 'log' && e.message === 'counter v4 step=150'),
      { ms: 20_000, every: 50 },
    )
    await sleep(400) // nothing may follow the final state
    const logs = dev.events
      .slice(after)
      .filter((e) => e.type === 'log' && e.message.startsWith('counter v4'))
    assert.equal(logs.at(-1)?.message, 'counter v4 step=150')
    const reloads = dev.events.slice(after).filter((e) => e.type === 'reload')
    assert.ok(reloads.length < 50, `debounced: ${reloads.length} reloads for 50 edits`)
    assert.ok(reloads.every((r) => r.ok))
  })

  it('removing an instance leaves no service, tap, watcher or timer of it', async () => {
    const beforeSnap = await inspect()
    assert.deepEqual(beforeSnap.resources, { tap: 1, timer: 1, watcher: 1 })
    const event = await dev.reloadAfter(() =>
      project.write(
        'yoke.config.yaml',
        `preset: minimal\nplugins:\n  other:\n    use: ./plugins/other.mjs\n    config: { word: hi }\n`,
      ),
    )
    assert.deepEqual([...event.removed].sort(), ['counter', 'user'])
    const snap = await inspect()
    assert.deepEqual(snap.resources, { tap: 0, timer: 0, watcher: 0 })
    assert.deepEqual(
      snap.services.filter((s: any) => !s.owner.startsWith('yoke:')),
      [],
    )
    assert.deepEqual(snap.hooks.find((h: any) => h.hook === 'kernel.state').taps, ['yoke dev'])
    assert.deepEqual(
      snap.instances.map((i: any) => i.key),
      ['other', 'yoke:runtime', 'yoke:project'],
    )
  })

  it('the user patch is watched by exact path, and reload never writes config files', async () => {
    const config = project.path('yoke.config.yaml')
    const stamp = statSync(config).mtimeMs
    const text = readFileSync(config, 'utf8')
    const event = await dev.reloadAfter(() =>
      project.write('.home/patch.yaml', 'plugins:\n  other:\n    config: { word: patched }\n'),
    )
    assert.deepEqual(event.restarted, ['other'])
    assert.ok(dev.events.some((e) => e.type === 'log' && e.message === 'other v2 patched'))
    assert.equal(statSync(config).mtimeMs, stamp)
    assert.equal(readFileSync(config, 'utf8'), text)
  })

  it('an editor-style atomic save (write temp, rename) reloads', async () => {
    const event = await dev.reloadAfter(() =>
      project.writeAtomic('.home/patch.yaml', 'plugins:\n  other:\n    config: { word: atomic }\n'),
    )
    assert.deepEqual(event.restarted, ['other'])
  })
})

describe('yoke dev without --events: a readable summary once ready, then every reload', () => {
  const SUMMARY_CONFIG = (extra = '') => `preset: minimal
plugins:
  endpoint:
    use: ./endpoint.mjs
  clock:
    use: ./clock.mjs
  waiter:
    use: ./waiter.mjs
  thrower:
    use: ./thrower.mjs
${extra}`
  const project = tempProject({
    // stands in for the mcp-server plugin: a plugin contributes a summary section through a control
    'endpoint.mjs': `export default { name: 'endpoint', apply(ctx) { ctx.control('endpoint/summary', () => ({ title: 'mcp endpoint', lines: ['http://127.0.0.1:7777/mcp · token yk_ab…'] })) } }\n`,
    'clock.mjs': `export default { name: 'clock', inject: ['runtime'], apply(ctx) { ctx.runtime.register({ name: 'clock_now', description: 'now', inputSchema: { type: 'object' }, execute: () => 'now' }) } }\n`,
    'waiter.mjs': `export default { name: 'waiter', inject: ['weather'], apply() {} }\n`,
    'thrower.mjs': `export default { name: 'thrower', apply() { throw new Error('kaboom') } }\n`,
    'yoke.config.yaml': SUMMARY_CONFIG(),
  })
  after(() => project.cleanup())

  it('lists instances (and why pending or failed), tools by source and the MCP endpoint; reloads follow', async () => {
    const child = spawn(process.execPath, [YOKE, 'dev'], {
      cwd: project.dir,
      env: { ...process.env, NO_COLOR: '1', YOKE_HOME: project.home, TMPDIR: project.dir },
    })
    let stdout = ''
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    child.stdout.on('data', (d) => (stdout += d))
    const exited = new Promise<number | null>((resolve) =>
      child.on('exit', (code) => resolve(code)),
    )
    const printed = (line: RegExp) =>
      until(
        () => `${line} on stdout\n${stdout}\n${stderr}`,
        () => {
          if (child.exitCode !== null)
            assert.fail(`yoke dev exited (${child.exitCode}) before ${line}\n${stdout}\n${stderr}`)
          return line.test(stdout)
        },
        { ms: 20_000 },
      )
    try {
      await printed(/ ready in [\d.]+ s · watching for changes/)
      const summary = stdout.slice(stdout.indexOf('\nconfig ') + 1)
      assert.match(
        summary,
        /^config preset yoke:presets\/minimal\.yaml · project yoke\.config\.yaml$/m,
      )
      assert.match(summary, /^instances 2 active · 1 pending · 1 failed$/m)
      assert.match(
        summary,
        /^ {2}waiter +pending +waiter ← \.\/waiter\.mjs\n {6}waits for service "weather": no instance and no built-in plugin provides it$/m,
      )
      assert.match(
        summary,
        /^ {2}thrower +failed +thrower ← \.\/thrower\.mjs\n {6}PLUGIN_APPLY_FAILED .*kaboom\n {6}at yoke\.config\.yaml:\d+:\d+/m,
      )
      assert.match(summary, /^tools 1\n {2}native +clock_now$/m)
      assert.match(summary, /^mcp endpoint\n {2}http:\/\/127\.0\.0\.1:7777\/mcp · token yk_ab…$/m)
      assert.doesNotMatch(
        summary,
        /^(skills|mcp servers)/m,
        'no skills or mcp registry in minimal: no section',
      )
      assert.ok(!stdout.includes('\u001b['), 'no colour with NO_COLOR')

      const before = stdout.length
      project.write(
        'yoke.config.yaml',
        SUMMARY_CONFIG().replace(/ {2}thrower:\n {4}use: \.\/thrower\.mjs\n/, ''),
      )
      await printed(/reload \(yoke\.config\.yaml\): removed thrower/)
      assert.doesNotMatch(stdout.slice(before), /^instances/m, 'the summary is printed once')
    } finally {
      child.kill('SIGINT')
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      assert.equal(await exited, 0, stderr)
      clearTimeout(timer)
    }
  })
})

describe('a TypeScript plugin outside a "type": "module" package', () => {
  it('an edit runs the new code and a syntax error is reported (it is loaded as ESM, not as cached CommonJS)', async () => {
    const plugin = (word: string) =>
      `import { tag } from './tag.ts'\nexport default { name: 'hi', apply(ctx: { logger: { info(m: string): void } }) { ctx.logger.info(tag + '${word}') } }\n`
    const project = tempProject({
      'plugins/tag.ts': "export const tag: string = 'hi-'\n",
      'plugins/hi.ts': plugin('one'),
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  hi:\n    use: ./plugins/hi.ts\n',
    })
    const dev = new DevProcess([], { cwd: project.dir, home: project.home })
    try {
      await dev.ready()
      assert.ok(dev.events.some((e) => e.type === 'log' && e.message === 'hi-one'))
      const edited = await dev.reloadAfter(() => project.write('plugins/hi.ts', plugin('two')))
      assert.deepEqual(edited.restarted, ['hi'])
      assert.ok(
        dev.events.some((e) => e.type === 'log' && e.message === 'hi-two'),
        'the new code ran',
      )
      const broken = await dev.reloadAfter(() =>
        project.write('plugins/hi.ts', 'export default { name: "hi", apply( }\n'),
      )
      assert.equal(broken.failed[0]?.error.code, 'PLUGIN_IMPORT_FAILED')
    } finally {
      assert.equal(await dev.stop(), 0, dev.stderr)
      project.cleanup()
    }
  })
})

describe('yoke dev with a config that is broken at start', () => {
  it('says what is wrong, waits for the fix, then runs it; Ctrl-C while waiting ends it', async () => {
    const project = tempProject({
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  p:\n    use: policy\n    enabeld: true\n',
    })
    const dev = new DevProcess([], { cwd: project.dir, home: project.home })
    try {
      const loaded = await dev.next((e) => e.type === 'loaded')
      assert.equal(loaded.ok, false)
      await dev.next((e) => e.type === 'waiting') // its files are watched from here on
      assert.match(loaded.errors[0].message, /unknown key "enabeld".*did you mean "enabled"/)
      assert.equal(dev.child.exitCode, null, 'it keeps running')
      project.write('yoke.config.yaml', 'preset: minimal\nplugins:\n  p:\n    use: policy\n')
      await dev.ready()
      assert.ok(dev.events.some((e) => e.type === 'reload' && e.ok))
    } finally {
      assert.equal(await dev.stop(), 0, dev.stderr)
    }
    project.write('yoke.config.yaml', 'preset: minimal\nplugins:\n  p:\n    use: nope-nope\n')
    const waiting = new DevProcess([], { cwd: project.dir, home: project.home })
    try {
      await waiting.next((e) => e.type === 'waiting')
    } finally {
      assert.equal(await waiting.stop(), 2, 'stopped while waiting: the config never ran')
      project.cleanup()
    }
  })
})

describe('the log file and yoke logs', () => {
  it('yoke dev writes every record to .yoke/logs/dev.log; yoke logs shows them, filtered, and -f follows', async () => {
    const talker = (word: string) =>
      `export default { name: 'talker', apply(ctx) { ctx.logger.debug('debug ${word}'); ctx.logger.warn('warn ${word}') } }\n`
    const project = tempProject({
      'talker.mjs': talker('one'),
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  talker:\n    use: ./talker.mjs\n',
    })
    const dev = new DevProcess(['--log-level', 'warn'], { cwd: project.dir, home: project.home })
    let follower: ReturnType<typeof spawn> | undefined
    let followed = ''
    try {
      await dev.ready()
      follower = spawn(process.execPath, [YOKE, 'logs', '-f', '--lines', '0'], {
        cwd: project.dir,
        env: { ...process.env, NO_COLOR: '1', YOKE_HOME: project.home },
      })
      follower.stdout!.on('data', (d) => (followed += d))
      let told = ''
      follower.stderr!.on('data', (d) => (told += d))
      await until('yoke logs -f following', () => told.includes('following'), { ms: 15_000 })
      assert.ok(
        !dev.events.some((e) => e.type === 'log' && e.level === 'debug'),
        '--log-level warn',
      )
      const all = await runYoke(['logs', '--log-level', 'debug'], {
        cwd: project.dir,
        home: project.home,
      })
      assert.match(all.stdout, /debug talker: debug one/)
      assert.match(all.stdout, /warn talker: warn one/)
      const warnings = await runYoke(['logs', '--log-level', 'warn'], {
        cwd: project.dir,
        home: project.home,
      })
      assert.doesNotMatch(warnings.stdout, /debug one/)
      assert.match(warnings.stdout, /warn talker: warn one/)
      await dev.reloadAfter(() => project.write('talker.mjs', talker('two')))
      await until(
        `yoke logs -f shows the new record:\n${followed}`,
        () => followed.includes('warn two'),
        { ms: 10_000 },
      )
      assert.doesNotMatch(followed, /warn one/, '--lines 0: only what came after')
      const bad = await runYoke(['logs', '--log-level', 'loud'], {
        cwd: project.dir,
        home: project.home,
      })
      assert.equal(bad.code, 2)
      assert.match(bad.stderr, /--log-level takes debug, info, warn, error, not "loud"/)
    } finally {
      follower?.kill('SIGINT')
      assert.equal(await dev.stop(), 0, dev.stderr)
      project.cleanup()
    }
  })
})

describe('one-shot commands act on the running dev', () => {
  it('tools call runs in the dev (its state), asks its approvals on the calling terminal; --fresh composes', async () => {
    const project = tempProject({
      'counter.mjs': `export default { name: 'counter', inject: ['runtime'], apply(ctx) {
  let n = 0
  ctx.runtime.register({ name: 'count', description: 'counts', execute: () => String(++n) })
  ctx.runtime.register({ name: 'reset', description: 'resets', risk: 'high', execute: () => { n = 0; return 'reset' } })
} }
`,
      'yoke.config.yaml': 'preset: base\nplugins:\n  counter:\n    use: ./counter.mjs\n',
    })
    const dev = new DevProcess([], { cwd: project.dir, home: project.home })
    const at = { cwd: project.dir, home: project.home }
    try {
      await dev.ready()
      assert.equal((await runYoke(['tools', 'call', 'count'], at)).stdout, '1\n')
      assert.equal((await runYoke(['tools', 'call', 'count'], at)).stdout, '2\n', 'the same state')
      assert.equal((await runYoke(['tools', 'call', 'count', '--fresh'], at)).stdout, '1\n')
      const list = JSON.parse((await runYoke(['tools', 'list', '--json'], at)).stdout)
      assert.ok(list.tools.some((t: any) => t.name === 'reset' && t.risk === 'high'))
      // the policy asks before a high-risk tool: the question comes to this terminal
      const denied = await runYokeWithInput(['tools', 'call', 'reset'], at, 'n\n')
      assert.equal(denied.code, 1)
      assert.match(denied.stderr, /\? reset \{\}[\s\S]*allow\?[\s\S]*denied/)
      assert.equal((await runYoke(['tools', 'call', 'count'], at)).stdout, '3\n', 'not reset')
      const allowed = await runYokeWithInput(['tools', 'call', 'reset'], at, 'y\n')
      assert.equal(allowed.code, 0, allowed.stderr)
      assert.equal(
        (await runYoke(['tools', 'call', 'count'], at)).stdout,
        '1\n',
        'reset in the dev',
      )
      const skills = await runYoke(['skills', 'list', '--json'], at)
      assert.equal(skills.code, 0, skills.stderr)
      assert.ok(Array.isArray(JSON.parse(skills.stdout).roots), 'the dev answers skills list')
    } finally {
      assert.equal(await dev.stop(), 0, dev.stderr)
      project.cleanup()
    }
  })
})

describe('a dev that goes without answering', () => {
  it('is a failure of the command, not "no dev": tools call does not run the call again on its own copy', async () => {
    const project = tempProject({
      'marker.mjs': `import { writeFileSync } from 'node:fs'
export default { name: 'marker', inject: ['runtime'], apply(ctx) {
  ctx.runtime.register({ name: 'mark', description: 'leaves a file', execute: () => { writeFileSync('ran-here', ''); return 'marked' } })
} }
`,
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  marker:\n    use: ./marker.mjs\n',
    })
    const dir = realpathSync(project.dir)
    const path = socketPath(dir, join(dir, 'yoke.config.yaml'))
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    rmSync(path, { force: true })
    // a "dev" that takes the request and dies before it answers
    const fake = createServer((socket) => socket.once('data', () => socket.destroy()))
    await new Promise<void>((resolve) => fake.listen(path, resolve))
    try {
      const r = await runYoke(['tools', 'call', 'mark'], { cwd: project.dir, home: project.home })
      assert.equal(r.code, 1, r.stdout + r.stderr)
      assert.match(r.stderr, /CONTROL_FAILED .*closed the connection before answering/)
      assert.ok(!existsSync(project.path('ran-here')), 'the call was not run a second time here')
      const fresh = await runYoke(['tools', 'call', 'mark', '--fresh'], {
        cwd: project.dir,
        home: project.home,
      })
      assert.equal(fresh.stdout, 'marked\n', fresh.stderr)
    } finally {
      await new Promise((resolve) => fake.close(resolve))
      rmSync(path, { force: true })
      project.cleanup()
    }
  })
})
