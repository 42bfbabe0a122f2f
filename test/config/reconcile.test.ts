// Reconcile and reload edge cases, in process (the dev e2e test covers the common path).
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Composition } from '../../src/index.ts'
import { tempProject } from '../helpers/project.ts'
import { until } from '../helpers/until.ts'

const logsOf = (c: Composition) => {
  const lines: string[] = []
  c.kernel.hooks.log.tap('test', (r) => void lines.push(`${r.fiber?.key ?? '-'}: ${r.message}`))
  return lines
}

describe('reconcile', () => {
  const projects: Array<{ cleanup(): void }> = []
  const compositions: Composition[] = []
  after(async () => {
    for (const c of compositions) await c.close().catch(() => {})
    projects.forEach((p) => p.cleanup())
  })
  const track = (c: Composition) => (compositions.push(c), c)
  const project = (files: Record<string, string>) => {
    const p = tempProject(files)
    projects.push(p)
    return p
  }

  it('a hung apply fails its instance after settleMs and does not hold up reloads of other instances', async () => {
    const p = project({
      'hang.mjs': `export default { name: 'hang', apply() { return new Promise(() => {}) } }\n`,
      'ok.mjs': `export default { name: 'ok', apply(ctx, c) { ctx.logger.info('ok ' + c.v) } }\n`,
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n  hang:\n    use: ./hang.mjs\n  ok:\n    use: ./ok.mjs\n    config: { v: 1 }\n',
    })
    const c = track(new Composition({ cwd: p.dir, home: p.home, settleMs: 300 }))
    const first = await c.start()
    assert.deepEqual(first.added, ['hang', 'ok'])
    assert.equal(c.reconciler.running.get('hang')!.fiber!.state, 'failed')
    assert.equal(c.reconciler.running.get('hang')!.fiber!.error?.code, 'PLUGIN_TIMEOUT')
    assert.equal(first.failed[0]?.instance, 'hang')
    p.write(
      'yoke.config.yaml',
      'preset: minimal\nplugins:\n  hang:\n    use: ./hang.mjs\n  ok:\n    use: ./ok.mjs\n    config: { v: 2 }\n',
    )
    const started = performance.now()
    const event = await c.reload()
    assert.deepEqual(event.restarted, ['ok'])
    assert.ok(performance.now() - started < 250, 'the hung instance was not waited for') // a hang guard, far below settleMs
    await c.close()
  })

  it('a rolled-back change is not retried by unrelated reloads', async () => {
    const p = project({
      'picky.mjs': `let applies = 0\nexport default { name: 'picky', apply(ctx, c) { applies++; ctx.logger.info('applies ' + applies); if (c.fail) throw new Error('no') } }\n`,
      'ok.mjs': `export default { name: 'ok', apply() {} }\n`,
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n  picky:\n    use: ./picky.mjs\n  ok:\n    use: ./ok.mjs\n',
    })
    const c = track(new Composition({ cwd: p.dir, home: p.home }))
    const logs = logsOf(c)
    await c.start()
    p.write(
      'yoke.config.yaml',
      'preset: minimal\nplugins:\n  picky:\n    use: ./picky.mjs\n    config: { fail: true }\n  ok:\n    use: ./ok.mjs\n',
    )
    const bad = await c.reload()
    assert.equal(bad.failed[0].error.code, 'RELOAD_ROLLED_BACK')
    const applies = logs.filter((l) => l.startsWith('picky: applies')).length
    assert.equal(applies, 2, 'first start, the failed new version (the old one kept running)')
    p.write(
      'yoke.config.yaml',
      'preset: minimal\nplugins:\n  picky:\n    use: ./picky.mjs\n    config: { fail: true }\n  ok:\n    use: ./ok.mjs\n    config: { x: 1 }\n',
    )
    const unrelated = await c.reload()
    assert.deepEqual(unrelated.restarted, ['ok'])
    assert.ok(unrelated.unchanged.includes('picky'))
    assert.equal(logs.filter((l) => l.startsWith('picky: applies')).length, applies)
    assert.equal(c.reconciler.running.get('picky')!.fiber!.state, 'active')
    await c.close()
  })

  it('a broken helper module keeps the old code, and fixing it is seen', async () => {
    const p = project({
      'a.mjs': `import { v } from './helper.mjs'\nexport default { name: 'a', apply(ctx) { ctx.logger.info('v' + v) } }\n`,
      'helper.mjs': 'export const v = 1\n',
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  a:\n    use: ./a.mjs\n',
    })
    const c = track(new Composition({ cwd: p.dir, home: p.home }))
    const logs = logsOf(c)
    await c.start()
    await c.watch()
    const events: any[] = []
    c.hooks.reload.tap('record', (e) => void events.push(e))
    p.write('helper.mjs', 'export const v = (\n')
    await until('the broken helper to be reported', () =>
      events.some((e) => e.failed[0]?.error.code === 'PLUGIN_IMPORT_FAILED'),
    )
    p.write('helper.mjs', 'export const v = 3\n')
    await until('the fixed helper to be applied', () =>
      events.some((e) => e.restarted.includes('a')),
    )
    assert.ok(logs.includes('a: v3'))
    assert.ok(logs.includes('a: v3'))
    await c.close()
  })

  it("a plugin sees every load and reload on the kernel's reload hook, with what changed", async () => {
    const p = project({
      'seer.mjs': `export default { name: 'seer', apply(ctx) { ctx.tap(ctx.hooks.reload, 'seer', (e) => ctx.logger.info(e.type + ' ' + e.ok + ' restarted=' + e.restarted + ' trigger=' + e.trigger.length)) } }\n`,
      'other.mjs': `export default { name: 'other', config: undefined, apply() {} }\n`,
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n  seer:\n    use: ./seer.mjs\n  other:\n    use: ./other.mjs\n    config: { n: 1 }\n',
    })
    const c = track(new Composition({ cwd: p.dir, home: p.home }))
    const logs = logsOf(c)
    await c.start()
    await c.watch()
    p.write(
      'yoke.config.yaml',
      'preset: minimal\nplugins:\n  seer:\n    use: ./seer.mjs\n  other:\n    use: ./other.mjs\n    config: { n: 2 }\n',
    )
    await until('the reload to reach the plugin', () =>
      logs.some((l) => l.includes('seer: reload')),
    )
    assert.ok(logs.includes('seer: reload true restarted=other trigger=1'), logs.join('\n'))
    await c.close()
  })

  it('a plugin sees which CLI command composed the kernel (ctx.command), undefined when embedded', async () => {
    const p = project({
      'who.mjs': `export default { name: 'who', apply(ctx) { ctx.logger.info('command=' + ctx.command + ' mode=' + ctx.runMode) } }\n`,
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  who:\n    use: ./who.mjs\n',
    })
    for (const [command, expected] of [
      ['dev', 'who: command=dev mode=serve'],
      [undefined, 'who: command=undefined mode=serve'],
    ] as const) {
      const c = track(new Composition({ cwd: p.dir, home: p.home, command }))
      const logs = logsOf(c)
      await c.start()
      assert.ok(logs.includes(expected), logs.join('\n'))
      await c.close()
    }
  })

  it('plugins loaded together share one copy of a local helper module', async () => {
    const p = project({
      'shared.mjs': 'export class Token {}\nexport const registry = new Set()\n',
      'a.mjs': `import { Token, registry } from './shared.mjs'\nexport default { name: 'a', provides: ['token'], apply(ctx) { registry.add('a'); ctx.provide('token', new Token()) } }\n`,
      'b.mjs': `import { Token, registry } from './shared.mjs'\nexport default { name: 'b', inject: ['token'], apply(ctx) { ctx.logger.info(String(ctx.token instanceof Token) + ' ' + registry.has('a')) } }\n`,
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n  a:\n    use: ./a.mjs\n  b:\n    use: ./b.mjs\n',
    })
    const c = track(new Composition({ cwd: p.dir, home: p.home }))
    const logs = logsOf(c)
    await c.start()
    assert.ok(logs.includes('b: true true'), logs.join('\n'))
    assert.deepEqual(c.current!.instances.find((i) => i.key === 'b')!.module!.deps, [
      p.path('shared.mjs'),
    ])
    await c.close()
  })

  it('keys named like Object.prototype members survive the merge; a disabled instance needs no use', async () => {
    const p = project({
      'ok.mjs': `export default { name: 'ok', apply() {} }\n`,
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n  constructor:\n    use: ./ok.mjs\n    config: { valueOf: 1, toString: 2, __proto__: 3 }\n',
      '.home/patch.yaml': 'plugins:\n  agent:\n    enabled: false\n',
    })
    const c = track(new Composition({ cwd: p.dir, home: p.home }))
    const event = await c.start()
    assert.equal(event.ok, true, event.errors.map((e) => e.message).join())
    const spec = c.current!.instances.find((i) => i.key === 'constructor')!
    assert.deepEqual(Object.keys(spec.raw as object), ['valueOf', 'toString', '__proto__'])
    assert.equal(
      Object.getPrototypeOf(spec.raw),
      Object.prototype,
      'no prototype was set through __proto__',
    )
    assert.equal(c.reconciler.running.get('agent')!.fiber, undefined)
    await c.close()
  })

  it('a composition closed while it reloads stays closed', async () => {
    const p = project({
      'ok.mjs': `export default { name: 'ok', apply() {} }\n`,
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  ok:\n    use: ./ok.mjs\n',
    })
    const c = track(new Composition({ cwd: p.dir, home: p.home }))
    await c.start()
    const watching = c.watch()
    await c.close()
    await watching
    await assert.rejects(c.reload(), /closed/)
    assert.deepEqual(c.kernel.fibers, [])
  })
})
