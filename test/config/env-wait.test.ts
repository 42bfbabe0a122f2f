// A `${VAR}` with no value inside one instance's entry makes only that instance wait (pending,
// PLUGIN_WAITING naming the variable and its file:line); the rest of the config loads, and a
// reload after the entry gets its value starts it. Elsewhere (a top-level key) it is still a
// config error (CONFIG_ENV_MISSING) at its file:line. In process, through `yoke inspect` and
// through a running `yoke dev`.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Composition } from '../../src/index.ts'
import type { YokeError } from '../../src/errors.ts'
import { DevProcess, runYoke, tempProject, type Project } from '../helpers/project.ts'

const ZOD = import.meta.resolve('zod')
const UNSET = 'YOKE_ENV_WAIT_SURELY_UNSET'

const FILES = {
  // typed: a schema the placeholder could not pass (port must be a number), so a waiting
  // instance's config must not be validated yet
  'typed.mjs': `import { z } from '${ZOD}'\nexport default { name: 'typed', config: z.object({ port: z.coerce.number().int(), token: z.string() }), apply(ctx, c) { ctx.logger.info('typed ' + c.port + ' ' + c.token) } }\n`,
  'ok.mjs': `export default { name: 'ok', apply() {} }\n`,
  'provider.mjs': `export default { name: 'provider', provides: ['secret'], apply(ctx, c) { ctx.provide('secret', c.key) } }\n`,
  'consumer.mjs': `export default { name: 'consumer', inject: ['secret'], apply() {} }\n`,
}

const CONFIG = [
  'preset: minimal',
  'plugins:',
  '  ok:',
  '    use: ./ok.mjs',
  '  needy:',
  '    use: ./typed.mjs',
  '    config:',
  `      port: \${${UNSET}_PORT}`,
  `      token: "Bearer \${${UNSET}}"`,
  '',
].join('\n')

describe('a missing ${VAR} fails only its instance', () => {
  const projects: Project[] = []
  const compositions: Composition[] = []
  after(async () => {
    for (const c of compositions) await c.close().catch(() => {})
    projects.forEach((p) => p.cleanup())
  })
  const project = (config: string) => {
    const p = tempProject({ ...FILES, 'yoke.config.yaml': config })
    projects.push(p)
    return p
  }
  const compose = (p: Project, env: NodeJS.ProcessEnv = {}, extra = {}) => {
    const c = new Composition({ cwd: p.dir, home: p.home, env, ...extra })
    compositions.push(c)
    return c
  }
  const fiberOf = (c: Composition, key: string) => c.reconciler.running.get(key)?.fiber

  it('the instance waits, naming the variables and where they are; the others run', async () => {
    const p = project(CONFIG)
    const c = compose(p)
    const event = await c.start()
    assert.equal(event.ok, true, event.errors.map((e) => e.message).join('\n'))
    assert.deepEqual(event.errors, [])
    assert.deepEqual(event.failed, [], 'waiting is not failing')
    assert.equal(fiberOf(c, 'ok')?.state, 'active')
    const needy = fiberOf(c, 'needy')!
    assert.equal(needy.state, 'pending')
    const error = needy.error as YokeError
    assert.equal(error.code, 'PLUGIN_WAITING')
    assert.match(error.message, new RegExp(`${UNSET}_PORT, ${UNSET} are not set`))
    assert.match(error.message, /config\.port, config\.token/)
    assert.equal(error.location, `${p.path('yoke.config.yaml')}:8:13`)
    assert.equal(error.site.instance, 'needy')
    assert.equal(error.site.plugin, 'typed', 'the plugin is named, its module was loaded')
    assert.match(error.hint, new RegExp(`set ${UNSET}_PORT, ${UNSET}`))
  })

  it('a reload after the variables are set starts it with their values', async () => {
    const p = project(CONFIG)
    const env: NodeJS.ProcessEnv = {}
    const c = compose(p, env)
    const logs: string[] = []
    c.kernel.hooks.log.tap('test', (r) => void logs.push(r.message))
    await c.start()
    assert.equal(fiberOf(c, 'needy')?.state, 'pending')
    env[`${UNSET}_PORT`] = '8080'
    env[UNSET] = 's3cret'
    const event = await c.reload()
    assert.deepEqual(event.restarted, ['needy'])
    assert.equal(fiberOf(c, 'needy')?.state, 'active')
    assert.deepEqual(fiberOf(c, 'needy')?.config, { port: 8080, token: 'Bearer s3cret' })
    assert.ok(logs.includes('typed 8080 Bearer s3cret'), logs.join('\n'))
  })

  it('a reload after the config is fixed starts it; breaking it again makes it wait again', async () => {
    const p = project(CONFIG)
    const c = compose(p)
    await c.start()
    p.write(
      'yoke.config.yaml',
      CONFIG.replace(`\${${UNSET}_PORT}`, '9090').replace(`\${${UNSET}}`, `\${${UNSET}:-dev}`),
    )
    const fixed = await c.reload()
    assert.deepEqual(fixed.restarted, ['needy'])
    assert.deepEqual(fiberOf(c, 'needy')?.config, { port: 9090, token: 'Bearer dev' })
    p.write('yoke.config.yaml', CONFIG)
    const broken = await c.reload()
    assert.equal(broken.ok, true)
    assert.equal(fiberOf(c, 'needy')?.state, 'pending')
    assert.equal(fiberOf(c, 'needy')?.error?.code, 'PLUGIN_WAITING')
    assert.equal(fiberOf(c, 'ok')?.state, 'active')
  })

  it('a value from a higher layer, or a disabled entry, does not wait', async () => {
    const p = project(CONFIG)
    const overridden = compose(
      p,
      {},
      {
        sets: ['plugins.needy.config.port=1', 'plugins.needy.config.token=t'],
      },
    )
    const event = await overridden.start()
    assert.deepEqual(event.errors, [])
    assert.equal(fiberOf(overridden, 'needy')?.state, 'active')
    const disabled = compose(p, {}, { sets: ['plugins.needy.enabled=false'] })
    assert.equal((await disabled.start()).ok, true)
    assert.equal(disabled.reconciler.running.get('needy')?.fiber, undefined)
    assert.equal(disabled.reconciler.running.get('needy')?.spec.waiting, undefined)
  })

  it('a service the waiting instance provides is missing; who injects it waits for it', async () => {
    const p = project(
      `preset: minimal\nplugins:\n  provider:\n    use: ./provider.mjs\n    config: { key: "\${${UNSET}}" }\n  consumer:\n    use: ./consumer.mjs\n`,
    )
    const c = compose(p)
    assert.equal((await c.start()).ok, true)
    assert.equal(fiberOf(c, 'provider')?.error?.code, 'PLUGIN_WAITING')
    assert.equal(fiberOf(c, 'consumer')?.state, 'pending')
    assert.equal(c.get('secret' as never), undefined)
  })

  it('a variable in use: waits too, named by the use as written', async () => {
    const p = project(
      `preset: minimal\nplugins:\n  ok:\n    use: ./ok.mjs\n  later:\n    use: \${${UNSET}}/ok.mjs\n`,
    )
    const c = compose(p)
    const event = await c.start()
    assert.equal(event.ok, true, event.errors.map((e) => e.message).join('\n'))
    assert.equal(fiberOf(c, 'later')?.state, 'pending')
    assert.match(fiberOf(c, 'later')!.error!.message, new RegExp(`${UNSET} is not set \\(use\\)`))
    assert.equal(fiberOf(c, 'ok')?.state, 'active')
  })

  it('at a top-level key it is still a config error at its file:line, and nothing is applied', async () => {
    const p = project(`preset: \${${UNSET}}\nplugins:\n  ok:\n    use: ./ok.mjs\n`)
    const c = compose(p)
    const event = await c.start()
    assert.equal(event.ok, false)
    assert.equal(event.errors[0]?.code, 'CONFIG_ENV_MISSING')
    assert.equal(event.errors[0]?.location, `${p.path('yoke.config.yaml')}:1:9`)
    assert.deepEqual(event.added, [])
    const runtime = project(`runtime:\n  timeoutMs: \${${UNSET}}\n`)
    const r = await compose(runtime).start()
    assert.equal(r.errors[0]?.code, 'CONFIG_ENV_MISSING')
    assert.equal(r.errors[0]?.location, `${runtime.path('yoke.config.yaml')}:2:14`)
  })

  it('an x-… anchor holding a variable counts where an alias uses it', async () => {
    const p = project(
      `x-auth: &auth { token: "\${${UNSET}}", port: 1 }\npreset: minimal\nplugins:\n  needy:\n    use: ./typed.mjs\n    config: *auth\n  ok:\n    use: ./ok.mjs\n`,
    )
    const c = compose(p)
    const event = await c.start()
    assert.equal(event.ok, true, event.errors.map((e) => e.message).join('\n'))
    assert.equal(fiberOf(c, 'needy')?.error?.code, 'PLUGIN_WAITING')
    assert.equal(fiberOf(c, 'ok')?.state, 'active')
  })

  it('yoke inspect shows the instance waiting for the variable; the rest is active', async () => {
    const p = project(CONFIG)
    const json = await runYoke(['inspect', '--json', '--fresh'], { cwd: p.dir, home: p.home })
    assert.equal(json.code, 0, json.stderr)
    const out = JSON.parse(json.stdout)
    const needy = out.instances.find((i: any) => i.key === 'needy')
    assert.equal(needy.state, 'pending')
    assert.equal(needy.plugin, 'typed')
    assert.equal(needy.error.code, 'PLUGIN_WAITING')
    assert.match(needy.error.message, new RegExp(`${UNSET}_PORT, ${UNSET} are not set`))
    assert.equal(needy.error.location, `${p.path('yoke.config.yaml')}:8:13`)
    assert.equal(out.instances.find((i: any) => i.key === 'ok').state, 'active')
    const text = await runYoke(['inspect', '--fresh'], { cwd: p.dir, home: p.home })
    assert.equal(text.code, 0, text.stderr)
    assert.match(text.stdout, /needy\s+pending\s+typed/)
    assert.match(text.stdout, new RegExp(`PLUGIN_WAITING instance "needy" is waiting: .*${UNSET}`))
    assert.match(text.stdout, /at yoke\.config\.yaml:8:13/)
  })

  it('under yoke dev: the edit that adds the variable makes one instance wait, the fix starts it', async () => {
    const p = project('preset: minimal\nplugins:\n  ok:\n    use: ./ok.mjs\n')
    const dev = new DevProcess([], { cwd: p.dir, home: p.home })
    try {
      await dev.ready()
      const states = (e: any) => Object.fromEntries(e.instances.map((i: any) => [i.key, i.state]))
      const waiting = await dev.reloadAfter(() => p.write('yoke.config.yaml', CONFIG))
      assert.equal(waiting.ok, true, JSON.stringify(waiting.errors))
      assert.deepEqual(states(waiting), { ok: 'active', needy: 'pending' })
      const fixed = await dev.reloadAfter(() =>
        p.write('yoke.config.yaml', CONFIG.replace(/\$\{(\w+)\}/g, '${$1:-7}')),
      )
      assert.deepEqual(fixed.restarted, ['needy'])
      assert.deepEqual(states(fixed), { ok: 'active', needy: 'active' })
    } finally {
      assert.equal(await dev.stop(), 0, dev.stderr)
    }
  })
})
