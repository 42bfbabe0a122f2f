// The plugin shape of wave 3 (DESIGN §10): controls named `<plugin>/<verb>`, state a reload hands
// to the next version of an instance (`ctx.keep`), built-ins composed as children by name
// (`uses`), and the asker that travels with a call and its nested calls, asked before any bridge.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Composition } from '../../src/config/composer.ts'
import {
  Kernel,
  toPlugin,
  YokeError,
  type ApprovalRequest,
  type Asker,
  type Context,
  type Plugin,
  type Question,
  type ToolRuntime,
} from '../../src/index.ts'
import { kernelWith } from '../helpers/kernel.ts'
import { tempProject } from '../helpers/project.ts'

const codeOf = (err: unknown) => (err as YokeError).code

describe('controls are named <plugin>/<verb>', () => {
  it('the plugin’s own name and a lowercase verb register; anything else is CONTROL_NAME', async () => {
    const tried: Record<string, string> = {}
    const notes = {
      name: 'notes',
      apply(ctx: Context) {
        for (const name of ['notes/count', 'notes-count', 'other/count', 'notes/Count', 'notes/'])
          try {
            ctx.control(name, () => 1)
            tried[name] = 'ok'
          } catch (err) {
            tried[name] = codeOf(err)
          }
      },
    }
    const { kernel } = await kernelWith([['notes', notes]])
    assert.deepEqual(tried, {
      'notes/count': 'ok',
      'notes-count': 'CONTROL_NAME',
      'other/count': 'CONTROL_NAME',
      'notes/Count': 'CONTROL_NAME',
      'notes/': 'CONTROL_NAME',
    })
    assert.equal(await kernel.ask('notes/count'), 1)
    const err = new YokeError('CONTROL_NAME', { name: 'x', owner: 'o', plugin: 'notes' })
    assert.match(err.hint ?? '', /"notes\/<verb>"/)
    await kernel.dispose()
  })
})

describe('ctx.keep', () => {
  const PLUGIN = `
export default {
  name: 'counter',
  apply(ctx, config) {
    const kept = ctx.keep('state', () => ({ versions: [] }))
    kept.versions.push(config.version)
    ctx.control('counter/versions', () => kept.versions.slice())
  },
}
`
  const config = (version: number, present = true) =>
    `preset: minimal\nplugins:\n${present ? `  counter:\n    use: ./counter.mjs\n    config: { version: ${version} }\n` : '  {}\n'}`
  const project = tempProject({ 'counter.mjs': PLUGIN, 'yoke.config.yaml': config(1) })
  after(() => project.cleanup())

  it('hands the value to the next version on reload, and drops it when the instance leaves', async () => {
    const composition = new Composition({ cwd: project.dir, home: project.home })
    try {
      assert.ok((await composition.start()).ok)
      const versions = () => composition.kernel.ask('counter/versions')
      assert.deepEqual(await versions(), [1])
      project.write('yoke.config.yaml', config(2))
      assert.deepEqual((await composition.reload([project.path('yoke.config.yaml')])).restarted, [
        'counter',
      ])
      assert.deepEqual(await versions(), [1, 2], 'the restarted version got the same value')
      project.write('yoke.config.yaml', config(3, false))
      assert.deepEqual((await composition.reload([project.path('yoke.config.yaml')])).removed, [
        'counter',
      ])
      project.write('yoke.config.yaml', config(4))
      assert.deepEqual((await composition.reload([project.path('yoke.config.yaml')])).added, [
        'counter',
      ])
      assert.deepEqual(await versions(), [4], 'an instance added again starts afresh')
    } finally {
      await composition.close()
    }
  })

  it('is per instance and per plugin: another key, or another plugin under the key, starts afresh', async () => {
    const seen: unknown[] = []
    const make = (name: string) => ({
      name,
      apply(ctx: Context) {
        seen.push(ctx.keep('box', () => ({ owner: `${name}:${ctx.key}` })))
      },
    })
    const kernel = new Kernel()
    kernel.spawn(toPlugin(make('a')) as Plugin, {}, { key: 'one' })
    kernel.spawn(toPlugin(make('a')) as Plugin, {}, { key: 'two' })
    await kernel.settled()
    const first = kernel.fibers.find((f) => f.key === 'one')!
    await kernel.remove(first) // a restart: the composition does not forget the key
    kernel.spawn(toPlugin(make('a')) as Plugin, {}, { key: 'one' })
    kernel.spawn(toPlugin(make('b')) as Plugin, {}, { key: 'one' })
    await kernel.settled()
    assert.deepEqual(seen, [
      { owner: 'a:one' },
      { owner: 'a:two' },
      { owner: 'a:one' },
      { owner: 'b:one' },
    ])
    assert.equal(seen[0], seen[2], 'the same object, not a copy')
    kernel.forget('one')
    kernel.spawn(toPlugin(make('a')) as Plugin, {}, { key: 'one' })
    await kernel.settled()
    assert.notEqual(seen[4], seen[0], 'forgotten: a new value')
    await kernel.dispose()
  })
})

describe('children by name (uses)', () => {
  const child = toPlugin({
    name: 'child',
    apply: (ctx: Context) => ctx.control('child/hi', () => 'hi'),
  }) as Plugin

  it('a declared built-in is composed by name; an undeclared or unknown one is PLUGIN_INVALID', async () => {
    const outcome: Record<string, string> = {}
    const parent = (uses: string[]) =>
      toPlugin({
        name: 'parent',
        uses,
        apply(ctx: Context) {
          for (const name of ['child', 'ghost'])
            try {
              ctx.plugin(name, {}, { key: name })
              outcome[`${uses.join()}:${name}`] = 'ok'
            } catch (err) {
              outcome[`${uses.join()}:${name}`] = `${codeOf(err)} ${(err as Error).message}`
            }
        },
      }) as Plugin
    const kernel = new Kernel({ pluginNamed: (name) => (name === 'child' ? child : undefined) })
    kernel.spawn(parent(['child', 'ghost']), {}, { key: 'p' })
    kernel.spawn(parent([]), {}, { key: 'q' })
    await kernel.settled()
    assert.equal(outcome['child,ghost:child'], 'ok')
    assert.match(
      outcome['child,ghost:ghost']!,
      /^PLUGIN_INVALID .*no built-in plugin has that name/,
    )
    assert.match(outcome[':child']!, /^PLUGIN_INVALID .*does not declare it in `uses`/)
    assert.equal(await kernel.ask('child/hi'), 'hi')
    assert.ok(kernel.fibers.some((f) => f.key === 'p/child' && f.parent?.key === 'p'))
    await kernel.dispose()
  })

  it('the composition imports what a plugin uses; a name that is no built-in fails its import', async () => {
    const project = tempProject({
      'parent.mjs': `export default { name: 'parent', uses: ['policy'], apply(ctx) { ctx.plugin('policy', {}, { key: 'guard' }) } }\n`,
      'bad.mjs': `export default { name: 'bad', uses: ['no-such-plugin'], apply() {} }\n`,
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  parent: { use: ./parent.mjs }\n',
    })
    const composition = new Composition({ cwd: project.dir, home: project.home })
    try {
      assert.ok((await composition.start()).ok)
      const guard = composition.kernel.fibers.find((f) => f.key === 'parent/guard')
      assert.equal(
        guard?.state,
        'active',
        JSON.stringify(composition.kernel.fibers.map((f) => [f.key, f.state, f.error?.message])),
      )
      assert.equal(guard?.plugin.name, 'policy')
      project.write('yoke.config.yaml', 'preset: minimal\nplugins:\n  bad: { use: ./bad.mjs }\n')
      const event = await composition.reload([project.path('yoke.config.yaml')])
      const failure = [...event.errors, ...event.failed.map((f) => f.error)]
      assert.ok(
        failure.some(
          (e) =>
            e.code === 'PLUGIN_NOT_FOUND' && /`uses` names built-in plugins only/.test(e.message),
        ),
        failure.map((e) => e.message).join('\n'),
      )
    } finally {
      await composition.close()
      project.cleanup()
    }
  })
})

describe('the asker travels with the call', () => {
  let runtime: ToolRuntime
  const tools = {
    name: 'tools',
    inject: ['runtime'],
    apply(ctx: Context & { runtime: ToolRuntime }) {
      ctx.runtime.register({ name: 'risky', risk: 'high', execute: () => 'done' })
      ctx.runtime.register({
        name: 'outer',
        execute: async (_args, call) => {
          const nested = await runtime.call('risky', {}, { parent: call.call })
          const answer = await runtime.approvals.question({
            from: 'a far side',
            call: call.call,
            mode: 'form',
            message: 'name?',
            signal: call.signal,
          })
          return JSON.stringify({ nested: nested.status, answer })
        },
      })
    },
  }

  it('is asked before any bridge, for the call, its nested calls and their questions', async () => {
    const { kernel, rt } = await kernelWith([['tools', tools]])
    rt.hooks.preExecute.tapPromise('ask for risky', async (decision, call) =>
      call.name === 'risky' ? { kind: 'ask', reason: 'a test asks' } : decision,
    )
    runtime = rt
    const bridgeAsked: string[] = []
    rt.approvals.register({
      name: 'global',
      ask: async ({ call }: ApprovalRequest) => (bridgeAsked.push(call.name), 'deny'),
      answer: async () => ({ action: 'decline' }),
    })
    const asked: string[] = []
    const asker: Asker = {
      name: 'session 7',
      ask: async ({ call }) => (asked.push(`${call.name}:${call.asker === asker}`), 'allow-once'),
      answer: async (q: Question) => (
        asked.push(`question:${q.message}`),
        { action: 'accept', content: { name: 'ada' } }
      ),
    }
    const direct = await rt.call('risky', {}, { asker })
    assert.equal(direct.status, 'ok', JSON.stringify(direct))
    const outer = await rt.call('outer', {}, { asker })
    assert.equal(outer.status, 'ok', JSON.stringify(outer))
    assert.deepEqual(JSON.parse((outer.content[0] as { text: string }).text), {
      nested: 'ok',
      answer: { action: 'accept', content: { name: 'ada' }, by: 'session 7' },
    })
    assert.deepEqual(asked, ['risky:true', 'risky:true', 'question:name?'])
    assert.deepEqual(bridgeAsked, [], 'no bridge was asked while the call carried an asker')
    const without = await rt.call('risky', {})
    assert.equal(without.status, 'DENIED')
    assert.deepEqual(bridgeAsked, ['risky'], 'a call without an asker goes to the bridges')
    await kernel.dispose()
  })
})
