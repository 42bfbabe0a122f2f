// Project trust beyond the project's config: what `yoke add` installed in the project (yoke.lock,
// .yoke/installed) and the stdio servers of a project's .mcp.json wait until the project is
// trusted, even when an instance of the user's own layers (the base preset's installs, mcp-json in
// the user patch) would run them; yoke.lock counts as project config, so an edited lock asks again;
// the user's own installs run; and a trust change in another project reloads nothing here.
import assert from 'node:assert/strict'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { Composition, type ReloadEvent } from '../src/index.ts'
import { projectFiles, recordTrust, trustState } from '../src/config/trust.ts'
import { add } from '../plugins/installs/install.ts'
import { projectScope, userScope } from '../plugins/installs/lock.ts'
import { FIXTURE } from './helpers/mcp.ts'
import { ROOT, suiteProjects, type Project } from './helpers/project.ts'
import { until } from './helpers/until.ts'

// test/run.js trusts every project of the suite; these tests are about not being trusted
delete process.env.YOKE_TRUST

const INSTALLS = join(ROOT, 'test', 'fixtures', 'installs')
/** exec-tools in the user's own patch: the service the installed packages go to */
const USER_PACKAGES = 'plugins:\n  packages:\n    use: exec-tools\n    config: { dirs: [] }\n'

describe('trust: installs and .mcp.json', () => {
  const project = suiteProjects()
  const compositions: Composition[] = []
  after(async () => {
    for (const c of compositions) await c.close().catch(() => {})
  })
  const compose = async (p: Project) => {
    const c = new Composition({ cwd: p.dir, home: p.home, env: {}, runMode: 'serve' })
    compositions.push(c)
    const event = await c.start()
    assert.equal(event.ok, true, event.errors.map((e) => e.message).join('\n'))
    await c.watch()
    return c
  }
  const where = (p: Project) => ({ home: p.home, env: {} })
  const trustAsNow = async (c: Composition, p: Project) => {
    const stack = c.current!.stack
    await recordTrust({ dir: stack.projectDir, files: projectFiles(stack, {}) }, true, where(p))
  }
  const installOf = (c: Composition, name: string) =>
    c
      .get('installs')
      ?.list()
      .find((s) => s.entry.name === name)
  const fiberOf = (c: Composition, key: string) => c.kernel.fibers.find((f) => f.key === key)
  const hasTool = (c: Composition, name: string) =>
    c.runtime?.list().some((t) => t.name === name) === true

  it("the project's installed package and Claude Code plugin wait; the user's run; trust starts them; an edited lock asks again", async () => {
    const p = project({ 'yoke.config.yaml': 'preset: base\n' })
    p.write('.home/patch.yaml', USER_PACKAGES)
    const scope = projectScope(p.dir)
    const options = { scope, scopes: [scope, userScope(p.home)], cwd: p.dir }
    await add(join(INSTALLS, 'echo-package'), options)
    await add(join(INSTALLS, 'claude-plugin'), { ...options, name: 'project-kit' })
    const user = userScope(p.home)
    await add(join(INSTALLS, 'claude-plugin'), { ...options, scope: user })

    const c = await compose(p)
    const echo = installOf(c, 'echo-package')!
    assert.equal(echo.state, 'waiting')
    assert.match(echo.why!, /is not trusted yet, and it runs the project's code: .*`yoke trust`/)
    assert.equal(installOf(c, 'project-kit')!.state, 'waiting')
    assert.equal(installOf(c, 'review-kit')!.state, 'registered', 'the user install runs')
    assert.equal(hasTool(c, 'echo_text'), false)
    assert.deepEqual(
      (c.get('claudePlugins')?.list() ?? []).map((f) => f.name),
      ['review-kit'],
      "only the user's Claude Code plugin is loaded",
    )
    // each waiting install is a pending child, as inspect shows it, naming `yoke trust`
    const child = fiberOf(c, 'installs/echo-package')!
    assert.equal(child.state, 'pending')
    assert.equal(child.error?.code, 'PLUGIN_WAITING')
    assert.match(child.error!.message, /the install echo-package \(exec-package, yoke\.lock\)/)
    assert.match(child.error!.hint, /`yoke trust` in /)

    // the lock counts as project config
    assert.deepEqual(projectFiles(c.current!.stack, {}), [
      p.path('yoke.config.yaml'),
      p.path('yoke.lock'),
    ])
    await trustAsNow(c, p)
    await until('the installed package to load after trust', () => hasTool(c, 'echo_text'))
    assert.equal(installOf(c, 'project-kit')!.state, 'registered')
    assert.equal(fiberOf(c, 'installs/echo-package'), undefined, 'its stand-in is gone')

    // a pulled lock (edited by someone else): asked again, and the package stops
    const lock = JSON.parse(readFileSync(p.path('yoke.lock'), 'utf8'))
    lock.marketplaces.extra = { name: 'extra', source: '/elsewhere', addedAt: '2026-01-01' }
    writeFileSync(p.path('yoke.lock'), JSON.stringify(lock, null, 2) + '\n')
    await until('the package to wait again', () => !hasTool(c, 'echo_text'))
    assert.match(installOf(c, 'echo-package')!.why!, /yoke\.lock changed since the project/)
    assert.equal(
      trustState({ dir: p.dir, files: [p.path('yoke.config.yaml'), p.path('yoke.lock')] }, where(p))
        .state,
      'changed',
    )
  })

  it("an edited lock puts the project's local plugin back to waiting too", async () => {
    const p = project({
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  hello:\n    use: ./hello.mjs\n',
      'hello.mjs': "export default { name: 'hello', apply() {} }\n",
      'yoke.lock': '{"lockfileVersion": 1, "installs": {}, "marketplaces": {}}\n',
    })
    await recordTrust(
      { dir: p.dir, files: [p.path('yoke.config.yaml'), p.path('yoke.lock')] },
      true,
      where(p),
    )
    const c = await compose(p)
    assert.equal(c.reconciler.running.get('hello')?.fiber?.state, 'active')
    p.write('yoke.lock', '{"lockfileVersion": 1, "installs": {}, "marketplaces": {"m": {}}}\n')
    await until(
      'the local plugin to wait',
      () => c.reconciler.running.get('hello')?.fiber?.state === 'pending',
    )
    assert.match(
      c.reconciler.running.get('hello')!.fiber!.error!.message,
      /yoke\.lock changed since/,
    )
  })

  it("mcp-json in the user's patch: the project's .mcp.json stdio servers wait for trust; a file outside the project runs", async () => {
    const p = project({ 'yoke.config.yaml': 'preset: base\n' })
    const marks = p.path('started.txt')
    const server = (name: string) => ({
      command: process.execPath,
      args: [FIXTURE],
      env: { MARK_FILE: marks, WHO: name },
    })
    p.write('.mcp.json', JSON.stringify({ mcpServers: { proj: server('proj') } }))
    const elsewhere = project() // the user's own file, outside the project
    elsewhere.write('mine.json', JSON.stringify({ mcpServers: { mine: server('mine') } }))
    p.write(
      '.home/patch.yaml',
      [
        'plugins:',
        '  fromproject:',
        '    use: mcp-json',
        '  fromhome:',
        '    use: mcp-json',
        `    config: { file: ${JSON.stringify(elsewhere.path('mine.json'))} }`,
        '',
      ].join('\n'),
    )
    const c = await compose(p)
    await until('the home server to start', () => fiberOf(c, 'fromhome/mine')?.state === 'active')
    const waiting = fiberOf(c, 'fromproject/proj')!
    assert.equal(waiting.state, 'pending')
    assert.equal(waiting.error?.code, 'PLUGIN_WAITING')
    assert.match(
      waiting.error!.message,
      /not trusted yet, and \.mcp\.json runs this server's command/,
    )
    assert.match(waiting.error!.hint, /`yoke trust`/)
    const started = () =>
      existsSync(marks) ? readFileSync(marks, 'utf8').trim().split('\n').length : 0
    assert.equal(started(), 1, 'only the server of the home file was started')

    await trustAsNow(c, p)
    await until(
      'the project server to start',
      () => fiberOf(c, 'fromproject/proj')?.state === 'active',
    )
    assert.equal(started(), 2)
  })

  it("`yoke trust` in another project reloads nothing here; this project's trust does", async () => {
    const body = 'preset: minimal\nplugins:\n  hello:\n    use: ./hello.mjs\n'
    const hello = "export default { name: 'hello', apply() {} }\n"
    const p = project({ 'yoke.config.yaml': body, 'hello.mjs': hello })
    const other = project({ 'yoke.config.yaml': body, 'hello.mjs': hello })
    const home = { home: p.home, env: {} } // one $YOKE_HOME for both, as on one machine
    const c = await compose(p)
    const events: ReloadEvent[] = []
    c.hooks.reload.tap('test', (e) => void events.push(e))
    const store = join(p.home, 'trust.json')

    await recordTrust({ dir: other.dir, files: [other.path('yoke.config.yaml')] }, true, home)
    // a change that does reload, after it: had the store's change reloaded, it shows in a trigger
    p.write('.home/patch.yaml', '# mine\n')
    await until('the patch reload', () =>
      events.some((e) => e.trigger.includes(p.path('.home/patch.yaml'))),
    )
    assert.ok(
      events.every((e) => !e.trigger.includes(store)),
      `no reload for another project's trust: ${JSON.stringify(events.map((e) => e.trigger))}`,
    )
    assert.equal(c.reconciler.running.get('hello')?.fiber?.state, 'pending')

    await recordTrust({ dir: p.dir, files: [p.path('yoke.config.yaml')] }, true, home)
    await until('the trusted reload', () => events.some((e) => e.trigger.includes(store)))
    await until('hello to run', () => c.reconciler.running.get('hello')?.fiber?.state === 'active')
  })
})
