// A plugin's failure is that plugin's (issue 14, item 2): stray rejections and exceptions fail the
// instance they come from, process.exit() from plugin code does not end yoke, a hung import or
// apply fails its instance after its time limit, and one-shot commands say which instance failed.
// Each case runs in a child process of its own: the process guard installs process-wide handlers.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { after, describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { DevProcess, ROOT, runYoke, tempProject } from '../helpers/project.ts'

const project = tempProject({
  // healthy: its tool must keep working whatever the others do
  'healthy.mjs': `export default { name: 'healthy', inject: ['runtime'], apply(ctx) {
    ctx.runtime.register({ name: 'still_here', inputSchema: { type: 'object' }, execute: () => 'yes' })
  } }\n`,
  'timer-throws.mjs': `export default { name: 'timer-throws', apply() { setTimeout(() => { throw new Error('tick boom') }, 20) } }\n`,
  'stray-rejection.mjs': `export default { name: 'stray-rejection', apply() { setTimeout(() => Promise.reject(new Error('nobody awaited me')), 20) } }\n`,
  'async-timer.mjs': `export default { name: 'async-timer', apply(ctx) { ctx.setTimeout(async () => { throw new Error('async tick') }, 20) } }\n`,
  'exit-in-apply.mjs': `export default { name: 'exit-in-apply', apply() { process.exit(0) } }\n`,
  'exit-at-import.mjs': `process.exit(3)\nexport default { name: 'never', apply() {} }\n`,
  'import-hangs.mjs': `await new Promise(() => {})\nexport default { name: 'never', apply() {} }\n`,
  'apply-hangs.mjs': `export default { name: 'apply-hangs', apply: () => new Promise(() => {}) }\n`,
  'apply-throws.mjs': `export default { name: 'apply-throws', apply() { throw new Error('kaboom') } }\n`,
  // a tool whose body leaves a rejection behind: its owner is blamed, not the caller
  'leaky-tool.mjs': `export default { name: 'leaky-tool', inject: ['runtime'], apply(ctx) {
    ctx.runtime.register({ name: 'leaky', inputSchema: { type: 'object' }, execute: () => { setTimeout(() => Promise.reject(new Error('left behind')), 5); return 'done' } })
  } }\n`,
})
after(() => project.cleanup())

const config = (...names: string[]) =>
  `preset: minimal\nplugins:\n  healthy: { use: ./healthy.mjs }\n${names.map((n) => `  ${n}: { use: ./${n}.mjs }\n`).join('')}`

/** Composes `names` beside `healthy` under the process guard, in a child process; its report. */
function compose(names: string[], options: { call?: string; timeouts?: boolean } = {}) {
  project.write('yoke.config.yaml', config(...names))
  const src = (f: string) => pathToFileURL(`${ROOT}src/${f}`).href
  const script = `
    import { Composition } from '${src('config/composer.ts')}'
    import { guardProcess } from '${src('kernel/faults.ts')}'
    guardProcess()
    const c = new Composition({ cwd: ${JSON.stringify(project.dir)}, home: ${JSON.stringify(project.home)}${options.timeouts ? ', settleMs: 300, importTimeoutMs: 300' : ''} })
    const event = await c.start()
    ${options.call ? `await c.runtime.call(${JSON.stringify(options.call)}, {})` : ''}
    await new Promise((r) => setTimeout(r, 150)) // the timers fire, the strays surface
    const states = Object.fromEntries([...c.reconciler.running].map(([k, r]) => [k, { state: r.fiber?.state ?? 'failed', code: (r.fiber?.error ?? r.spec.error)?.code, message: (r.fiber?.error ?? r.spec.error)?.message }]))
    const still = await c.runtime.call('still_here', {})
    process.stdout.write(JSON.stringify({ ok: event.ok, states, still: still.ok }))
    await c.close()
    process.exit(0)
  `
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--conditions=yoke-source', '--input-type=module', '-e', script],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 30_000,
    },
  )
  assert.equal(run.status, 0, `the process survived (stderr: ${run.stderr})`)
  return JSON.parse(run.stdout) as {
    ok: boolean
    states: Record<string, { state: string; code?: string; message?: string }>
    still: boolean
  }
}

describe('fault isolation', () => {
  it('a timer that throws, a stray rejection and an async ctx timer fail their instance alone', () => {
    const report = compose(['timer-throws', 'stray-rejection', 'async-timer'])
    for (const name of ['timer-throws', 'stray-rejection', 'async-timer']) {
      assert.equal(report.states[name]?.state, 'failed', name)
      assert.equal(report.states[name]?.code, 'PLUGIN_FAULT', name)
    }
    assert.match(report.states['timer-throws']!.message!, /tick boom/)
    assert.match(report.states['stray-rejection']!.message!, /nobody awaited me/)
    assert.equal(report.states.healthy?.state, 'active')
    assert.ok(report.still, 'the healthy tool still answers')
  })

  it('process.exit in apply or at import fails that instance, named; yoke goes on', () => {
    const report = compose(['exit-in-apply', 'exit-at-import'])
    assert.equal(report.states['exit-in-apply']?.state, 'failed')
    assert.match(report.states['exit-in-apply']!.message!, /"exit-in-apply".*called process\.exit/)
    assert.equal(report.states['exit-at-import']?.code, 'PLUGIN_IMPORT_FAILED')
    assert.match(
      report.states['exit-at-import']!.message!,
      /exit-at-import\.mjs called process\.exit\(3\)/,
    )
    assert.ok(report.still)
  })

  it('an import that never settles and an apply that never settles fail after their limits', () => {
    const started = performance.now()
    const report = compose(['import-hangs', 'apply-hangs'], { timeouts: true })
    assert.equal(report.states['import-hangs']?.code, 'PLUGIN_TIMEOUT')
    assert.match(
      report.states['import-hangs']!.message!,
      /import of .*import-hangs\.mjs did not finish within 300 ms/,
    )
    assert.equal(report.states['apply-hangs']?.state, 'failed')
    assert.equal(report.states['apply-hangs']?.code, 'PLUGIN_TIMEOUT')
    assert.ok(report.still)
    assert.ok(performance.now() - started < 20_000)
  })

  it("a tool body's stray error fails the tool's owner, not its caller", () => {
    const report = compose(['leaky-tool'], { call: 'leaky' })
    assert.equal(report.states['leaky-tool']?.state, 'failed')
    assert.match(report.states['leaky-tool']!.message!, /left behind/)
    assert.equal(report.states.healthy?.state, 'active')
  })

  it('yoke tools list says which instance failed, on stderr, and exits 1', async () => {
    project.write('yoke.config.yaml', config('apply-throws'))
    const { code, stdout, stderr } = await runYoke(['tools', 'list', '--cwd', project.dir], {
      home: project.home,
    })
    assert.equal(code, 1)
    assert.match(stderr, /PLUGIN_APPLY_FAILED .*kaboom/)
    assert.match(stdout, /still_here/, 'the tools that exist are still listed')
  })

  it('yoke dev keeps running when a plugin throws from a timer', async () => {
    project.write('yoke.config.yaml', config('timer-throws'))
    const dev = new DevProcess([], { cwd: project.dir, home: project.home })
    try {
      await dev.ready()
      const failed = await dev.next(
        (e) => e.type === 'state' && e.instance === 'timer-throws' && e.state === 'failed',
        10_000,
        0, // the timer may fire before ready is printed: every event counts
      )
      assert.equal(failed.error?.code, 'PLUGIN_FAULT')
      const { code, stdout } = await runYoke(['inspect', '--json', '--cwd', project.dir], {
        home: project.home,
      })
      assert.equal(code, 0)
      const live = JSON.parse(stdout)
      assert.equal(live.source, 'live from yoke dev', 'the dev still answers')
      assert.equal(
        live.instances.find((i: { key: string }) => i.key === 'healthy')?.state,
        'active',
      )
    } finally {
      assert.equal(await dev.stop(), 0)
    }
  })
})
