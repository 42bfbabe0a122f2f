/**
 * An instance that fails is shown at its YAML line and at the line of its own code that threw
 * (issue 27: "an apply that throws is located at its YAML line with no frame in the plugin's
 * code"). The frame is the first of the cause's stack outside yoke's kernel: a helper the apply
 * called, a TypeScript plugin's own line (source-mapped), a timer callback that threw later.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DevProcess, runYoke, suiteProjects } from './helpers/project.ts'

const projects = suiteProjects()

const BOOM = `function helper() {
  throw new Error('kaboom in helper')
}
export default {
  name: 'boom',
  apply() {
    helper()
  },
}
`

const BOOM_TS = `interface Shape {
  size: number
}
const fail = (shape: Shape): never => {
  throw new Error(\`ts kaboom \${shape.size}\`)
}
export default {
  name: 'boomts',
  apply() {
    fail({ size: 1 })
  },
}
`

const LATE = `export default {
  name: 'late',
  apply(ctx) {
    ctx.setTimeout(() => {
      throw new Error('late kaboom')
    }, 50)
  },
}
`

describe('a failing instance: its YAML line and its own frame', () => {
  const p = projects({
    'boom.mjs': BOOM,
    'boom-ts.ts': BOOM_TS,
    'yoke.config.yaml': [
      'preset: minimal',
      'plugins:',
      '  boom:',
      '    use: ./boom.mjs',
      '  boomts:',
      '    use: ./boom-ts.ts',
      '',
    ].join('\n'),
  })

  it('one-shot commands print `thrown at FILE:LINE:COL` beside the config line', async () => {
    const r = await runYoke(['tools', 'list'], { cwd: p.dir, home: p.home, timeoutMs: 90_000 })
    assert.equal(r.code, 1, r.stderr)
    assert.match(
      r.stderr,
      /PLUGIN_APPLY_FAILED instance "boom" .*\n {2}at .*yoke\.config\.yaml:4:10 \(instance "boom", plugin boom\) · thrown at .*boom\.mjs:2:9\n/,
    )
    // the TypeScript plugin's own line, not the compiled one
    assert.match(r.stderr, /\n {2}at .*yoke\.config\.yaml:6:10 .* · thrown at .*boom-ts\.ts:5:9\n/)
  })

  it('doctor --json and inspect --json carry the frame', async () => {
    const doctor = await runYoke(['doctor', '--json'], {
      cwd: p.dir,
      home: p.home,
      timeoutMs: 90_000,
    })
    const checks = (JSON.parse(doctor.stdout) as { checks: Array<{ message: string }> }).checks
    assert.ok(
      checks.some((c) => /yoke\.config\.yaml:4:10, from .*boom\.mjs:2:9\)/.test(c.message)),
      JSON.stringify(checks),
    )
    const inspect = await runYoke(['inspect', '--json'], {
      cwd: p.dir,
      home: p.home,
      timeoutMs: 90_000,
    })
    const snap = JSON.parse(inspect.stdout) as {
      instances: Array<{ key: string; error?: { frame?: string } }>
    }
    assert.match(
      snap.instances.find((i) => i.key === 'boomts')?.error?.frame ?? '',
      /boom-ts\.ts:5:9$/,
    )
  })
})

it("yoke dev: a plugin's timer that throws later is shown with its frame", async (t) => {
  const p = projects({
    'late.mjs': LATE,
    'yoke.config.yaml': 'preset: minimal\nplugins:\n  late:\n    use: ./late.mjs\n',
  })
  const dev = new DevProcess([], { cwd: p.dir, home: p.home })
  t.after(() => dev.stop())
  await dev.ready(90_000)
  const failed = await dev.next(
    (e) => e.type === 'state' && e.instance === 'late' && e.state === 'failed',
    30_000,
    0,
  )
  assert.equal(failed.error?.code, 'PLUGIN_FAULT')
  assert.match(failed.error?.frame ?? '', /late\.mjs:5:13$/)
})
