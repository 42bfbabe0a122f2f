// The reload contract (Claude Code SDK's reloadPlugins options) with a real agent run on a model
// server speaking OpenAI's wire: a run's tool call waits on the test, so a reload lands mid-turn.
// holdOnCacheImpact holds a change that would alter the cached prompt until the run ends and then
// applies it (a later reload folds into it); refuseIfBusy is refused with RELOAD_BUSY naming the
// run; a reload without options applies at once; the turn-guard config gives the default.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import '../plugins/agent-loop/api.ts'
import '../plugins/turn-guard/api.ts'
import { createYoke, type ReloadEvent, type Yoke } from '../src/index.ts'
import { modelServer, type ModelServer } from './helpers/model-server.ts'
import { suiteProjects, type Project } from './helpers/project.ts'

const EXTRA = `import { definePlugin } from 'yoke'
export default definePlugin({
  name: 'extra',
  inject: ['runtime'],
  apply(ctx, config) {
    ctx.runtime.register({
      name: config.tool ?? 'extra_tool',
      description: 'A tool a reload adds.',
      inputSchema: { type: 'object' },
      execute: () => ({ content: [{ type: 'text', text: 'extra' }] }),
    })
  },
})
`

const config = (url: string, guard = '{}') => `preset: base
plugins:
  model:
    use: openai
    config: { model: gpt-test, apiKeyEnv: TEST_OPENAI_KEY, baseUrl: "${url}", maxRetries: 0 }
  agent:
    use: agent-loop
  guard:
    use: turn-guard
    config: ${guard}
`

describe('the reload contract', () => {
  const project = suiteProjects()
  let model: ModelServer
  before(async () => {
    model = await modelServer([])
    process.env.TEST_OPENAI_KEY = 'sk-test'
  })
  after(() => model?.close())

  /** A yoke whose host tool `wait_here` waits until `release()`; `entered` once a call is in it. */
  async function start(p: Project) {
    const yoke = createYoke({ cwd: p.dir, home: p.home, trust: true, onLog: () => {} })
    await yoke.ready
    let release!: () => void
    let enter!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    const entered = new Promise<void>((resolve) => (enter = resolve))
    yoke.runtime.register({
      name: 'wait_here',
      description: 'Waits for the test.',
      inputSchema: { type: 'object' },
      execute: async () => {
        enter()
        await released
        return { content: [{ type: 'text', text: 'released' }] }
      },
    })
    return { yoke, release, entered }
  }

  /** An agent run that calls wait_here, then answers. */
  function run(yoke: Yoke) {
    model.push({ toolCalls: [{ name: 'wait_here', args: {} }] }, { text: 'done' })
    return yoke.get('agent')!.run('wait, then answer')
  }

  /** The next reload event that `match`es. */
  const nextReload = (yoke: Yoke, match: (e: ReloadEvent) => boolean) =>
    new Promise<ReloadEvent>((resolve) => {
      const events: ReloadEvent[] = []
      yoke.composition.hooks.reload.tap('test', (e) => {
        events.push(e)
        if (match(e)) resolve(e)
      })
    })

  it('holds a change to the tools while a run is in flight, says why, and applies it when the run ends', async () => {
    const p = project({ 'yoke.config.yaml': config(model.openaiBaseUrl), 'extra.mjs': EXTRA })
    const { yoke, release, entered } = await start(p)
    try {
      assert.deepEqual([...yoke.reloadCapabilities].sort(), [
        'add-plugins',
        'cache-impact-report',
        'hold-on-cache-impact',
        'refuse-if-busy',
      ])
      const agentRun = run(yoke)
      await entered
      const held = await yoke.reload({
        holdOnCacheImpact: true,
        addPlugins: { extra: { use: './extra.mjs' } },
      })
      assert.equal(held.held, true)
      assert.deepEqual(held.added, [])
      assert.deepEqual(held.cacheImpact, [
        { instance: 'extra', change: 'added', why: 'it may register tools' },
      ])
      assert.match(held.busy!.join(), /^run \S+ \(global\)$/)
      assert.ok(!yoke.tools().some((t) => t.name === 'extra_tool'), 'nothing applied mid-turn')
      // while held, the doctor check says so
      const checks = (await yoke.composition.kernel.ask('turn-guard/doctor')) as Array<{
        level: string
        message: string
      }>
      assert.equal(checks[0]!.level, 'warn')
      assert.match(checks[0]!.message, /a reload is held .* extra \(added: it may register tools\)/)
      // a later reload folds into the held one: still held, one apply at the end
      const again = await yoke.reload({
        holdOnCacheImpact: true,
        addPlugins: { more: { use: './extra.mjs', config: { tool: 'more_tool' } } },
      })
      assert.equal(again.held, true)
      assert.deepEqual(
        again.cacheImpact!.map((i) => i.instance),
        ['extra', 'more'],
      )
      const applied = nextReload(yoke, (e) => !e.held && e.trigger.includes('(held)'))
      release()
      const result = await agentRun.result
      assert.equal(result.status, 'done', result.reason)
      const event = await applied
      assert.equal(event.ok, true)
      assert.deepEqual(event.added.sort(), ['extra', 'more'])
      assert.deepEqual(
        event.cacheImpact!.map((i) => i.instance),
        ['extra', 'more'],
      )
      const names = yoke.tools().map((t) => t.name)
      assert.ok(names.includes('extra_tool') && names.includes('more_tool'))
      assert.equal(yoke.composition.held, undefined)
      const after = (await yoke.composition.kernel.ask('turn-guard/doctor')) as Array<{
        level: string
      }>
      assert.equal(after[0]!.level, 'ok')
    } finally {
      release()
      await yoke.close()
    }
  })

  it('refuses a reload with refuseIfBusy while a run is in flight, naming it; idle, it applies', async () => {
    const p = project({ 'yoke.config.yaml': config(model.openaiBaseUrl), 'extra.mjs': EXTRA })
    const { yoke, release, entered } = await start(p)
    try {
      const agentRun = run(yoke)
      await entered
      await assert.rejects(
        yoke.reload({ refuseIfBusy: true, addPlugins: { extra: { use: './extra.mjs' } } }),
        (err: Error & { code?: string }) =>
          err.code === 'RELOAD_BUSY' &&
          /refuseIfBusy\): run \S+ \(global\) in flight/.test(err.message),
      )
      assert.ok(!yoke.tools().some((t) => t.name === 'extra_tool'))
      release()
      await agentRun.result
      // what a refused reload would have added was not kept
      const idle = await yoke.reload({ refuseIfBusy: true })
      assert.equal(idle.ok, true)
      assert.deepEqual(idle.added, [])
      assert.ok(!yoke.tools().some((t) => t.name === 'extra_tool'))
    } finally {
      release()
      await yoke.close()
    }
  })

  it('applies at once without options, mid-turn; a change that leaves the cached prompt alone is never held', async () => {
    const p = project({ 'yoke.config.yaml': config(model.openaiBaseUrl), 'extra.mjs': EXTRA })
    const { yoke, release, entered } = await start(p)
    try {
      const agentRun = run(yoke)
      await entered
      const now = await yoke.reload({ addPlugins: { extra: { use: './extra.mjs' } } })
      assert.equal(now.held, undefined)
      assert.deepEqual(now.added, ['extra'])
      assert.ok(
        yoke.tools().some((t) => t.name === 'extra_tool'),
        'applied mid-turn',
      )
      // the guard's own config changes nothing the model sees: applied at once, even when held is asked
      p.write('yoke.config.yaml', config(model.openaiBaseUrl, '{ refuseIfBusy: false }'))
      const quiet = await yoke.reload({ holdOnCacheImpact: true })
      assert.equal(quiet.held, undefined)
      assert.deepEqual(quiet.restarted, ['guard'])
      // its new version still counts the run the old one saw begin
      await assert.rejects(yoke.reload({ refuseIfBusy: true }), { code: 'RELOAD_BUSY' })
      release()
      assert.equal((await agentRun.result).status, 'done')
    } finally {
      release()
      await yoke.close()
    }
  })

  it("takes the turn-guard config's default when a reload names no options", async () => {
    const guard = '{ holdOnCacheImpact: true }'
    const p = project({
      'yoke.config.yaml': config(model.openaiBaseUrl, guard),
      'extra.mjs': EXTRA,
    })
    const { yoke, release, entered } = await start(p)
    try {
      const agentRun = run(yoke)
      await entered
      const held = await yoke.reload({ addPlugins: { extra: { use: './extra.mjs' } } })
      assert.equal(held.held, true)
      // an explicit false overrides the default
      const now = await yoke.reload({ holdOnCacheImpact: false })
      assert.equal(now.held, undefined)
      assert.deepEqual(now.added, ['extra'])
      release()
      await agentRun.result
    } finally {
      release()
      await yoke.close()
    }
  })
})
