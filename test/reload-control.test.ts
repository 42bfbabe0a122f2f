// The reload control of a running `yoke dev` (its socket's `reload` command) takes the reload
// contract's options: while a project plugin's agent run waits on the model server, refuseIfBusy
// is refused with RELOAD_BUSY naming the run, holdOnCacheImpact answers held (with the
// capabilities a caller tests) and the dev applies the change when the run ends.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ask, socketPath } from '../src/cli/control.ts'
import { modelServer, type ModelServer } from './helpers/model-server.ts'
import { DevProcess, runYoke, suiteProjects } from './helpers/project.ts'

const RUNNER = `import { definePlugin } from 'yoke'
export default definePlugin({
  name: 'runner',
  inject: ['agent'],
  apply(ctx) {
    void ctx.agent.run('answer when the model does').result
  },
})
`

const EXTRA = `import { definePlugin } from 'yoke'
export default definePlugin({
  name: 'extra',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({
      name: 'extra_tool',
      description: 'A tool a reload adds.',
      inputSchema: { type: 'object' },
      execute: () => ({ content: [{ type: 'text', text: 'extra' }] }),
    })
  },
})
`

describe('the reload control of yoke dev', () => {
  const project = suiteProjects()
  let model: ModelServer
  let answer!: () => void
  const answered = new Promise<void>((resolve) => (answer = resolve))
  before(async () => {
    // the run's one model request waits until the test answers it
    model = await modelServer(async () => {
      await answered
      return { text: 'done' }
    })
  })
  after(async () => {
    answer()
    await model?.close()
  })

  it('refuses with refuseIfBusy and holds with holdOnCacheImpact while a run is in flight', async () => {
    const p = project({
      'yoke.config.yaml': `preset: base
plugins:
  model:
    use: openai
    config: { model: gpt-test, apiKeyEnv: TEST_OPENAI_KEY, baseUrl: "${model.openaiBaseUrl}", maxRetries: 0 }
  agent:
    use: agent-loop
  guard:
    use: turn-guard
  runner:
    use: ./runner.mjs
`,
      'runner.mjs': RUNNER,
      'extra.mjs': EXTRA,
    })
    const dev = new DevProcess(['--trust'], {
      cwd: p.dir,
      home: p.home,
      env: { TEST_OPENAI_KEY: 'sk-test' },
    })
    try {
      await dev.ready()
      const path = socketPath(p.dir, join(p.dir, 'yoke.config.yaml'))
      // the run is in flight once its request reached the model server
      while (!model.requests.length) await new Promise((resolve) => setImmediate(resolve))
      const refused = await ask(path, { cmd: 'reload', refuseIfBusy: true })
      assert.equal(refused.status, 'error')
      assert.equal(refused.status === 'error' && refused.error.code, 'RELOAD_BUSY')
      assert.match(refused.status === 'error' ? refused.error.message : '', /run \S+ \(global\)/)
      // the same from the command line: `yoke reload --refuse-if-busy` beside the dev
      const cli = await runYoke(['reload', '--refuse-if-busy'], { cwd: p.dir, home: p.home })
      assert.equal(cli.code, 1, cli.stderr)
      assert.match(cli.stderr, /RELOAD_BUSY/)
      const held = await ask(path, {
        cmd: 'reload',
        holdOnCacheImpact: true,
        addPlugins: { extra: { use: './extra.mjs' } },
      })
      assert.equal(held.status, 'ok')
      const event = (held.status === 'ok' ? held.answer : {}) as {
        held?: boolean
        capabilities?: string[]
        cacheImpact?: Array<{ instance: string }>
      }
      assert.equal(event.held, true)
      assert.deepEqual(
        event.cacheImpact?.map((i) => i.instance),
        ['extra'],
      )
      assert.ok(event.capabilities?.includes('refuse-if-busy'))
      // yoke doctor says the held reload, as the running dev's (its own copy holds none)
      const doctor = await runYoke(['doctor', '--json'], {
        cwd: p.dir,
        home: p.home,
        env: { TEST_OPENAI_KEY: 'sk-test' },
      })
      const checks = (
        JSON.parse(doctor.stdout) as { checks: Array<{ level: string; message: string }> }
      ).checks
      assert.ok(
        checks.some(
          (c) =>
            c.level === 'warn' &&
            /^in the running yoke dev: turn-guard: a reload is held since .* until run \S+ \(global\) end/.test(
              c.message,
            ),
        ),
        doctor.stdout,
      )
      const seen = dev.events.length
      answer()
      const applied = await dev.next(
        (e) => e.type === 'reload' && (e.trigger as string[]).includes('(held)'),
        60_000,
        seen,
      )
      assert.equal(applied.ok, true)
      assert.deepEqual(applied.added, ['extra'])
      // idle now: `yoke reload --hold` applies at once (nothing changed) and lists the capabilities
      const now = await runYoke(['reload', '--hold', '--json'], { cwd: p.dir, home: p.home })
      assert.equal(now.code, 0, now.stderr)
      const reply = JSON.parse(now.stdout)
      assert.equal(reply.held, undefined)
      assert.ok(reply.capabilities.includes('hold-on-cache-impact'))
    } finally {
      answer()
      await dev.stop()
    }
  })
})
