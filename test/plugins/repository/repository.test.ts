// The repository plugin on a real kernel and runtime: define → run (approved) → call → update →
// rollback → undefine; a refused approval; an initialisation past its time limit; a call that never
// yields; a syntax error named by line; a fragment; and a session that cannot see another's plugin.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import policy from '../../../plugins/policy/index.ts'
import repository from '../../../plugins/repository/index.ts'
import type { RepositoryApi } from '../../../plugins/repository/api.ts'
import { Repository } from '../../../plugins/repository/repository.ts'
import { type ApprovalAnswer } from '../../../src/index.ts'
import { kernelWith } from '../../helpers/kernel.ts'

const weather = (answer: string) => `export default {
  name: 'weather',
  inject: ['runtime'],
  config: { type: 'object', properties: { city: { type: 'string', default: 'Oslo' } } },
  apply(ctx, config) {
    ctx.runtime.register({
      name: 'get_weather',
      description: 'The weather in the configured city',
      inputSchema: { type: 'object', properties: {} },
      execute: () => config.city + ': ${answer}',
    })
  },
}
`

async function compose(settings: Record<string, unknown> = {}) {
  const { kernel, rt } = await kernelWith([
    ['policy', policy],
    ['repository', repository, settings],
  ])
  const asked: string[] = []
  const askedIn: string[] = []
  const answers: ApprovalAnswer[] = []
  rt.approvals.register({
    name: 'test',
    ask: async ({ call, reason }) => (
      asked.push(`${call.name}: ${reason}`),
      askedIn.push(call.scope),
      answers.shift() ?? 'deny'
    ),
  })
  const call = async (name: string, args: Record<string, unknown> = {}, scope = 'global') => {
    const r = await rt.call(name, args, { scope, caller: 'test' })
    return { ...r, text: r.content.map((c) => (c as { text: string }).text).join('\n') }
  }
  const repo = kernel.services.get('repository')!.value as RepositoryApi
  return { kernel, rt, asked, askedIn, answers, call, repo, close: () => kernel.dispose() }
}

describe('repository plugin', () => {
  const open: Array<() => Promise<void>> = []
  after(() => Promise.all(open.map((c) => c())))

  it('runs the self-modification loop: define, run (approved), call, define again, update, roll back, undefine', async () => {
    const y = await compose()
    open.push(y.close)
    const d1 = await y.call('repository_define', {
      name: 'weather',
      purpose: 'says the weather',
      source: weather('sunny'),
    })
    assert.equal(d1.status, 'ok', d1.text)
    assert.match(d1.text, /Defined repo:weather@1 \(sha256:[0-9a-f]{12}\): it is not running/)
    assert.equal(y.asked.length, 0, 'define asks nothing and runs nothing')
    assert.equal((await y.call('get_weather')).status, 'UNKNOWN_TOOL')

    y.answers.push('allow-once')
    const r1 = await y.call('repository_run', { plugin: 'weather' })
    assert.equal(r1.status, 'ok', r1.text)
    assert.match(r1.text, /repo:weather@1 is running; its tools: get_weather/)
    assert.equal(y.asked.length, 1)
    assert.match(
      y.asked[0]!,
      /^run_repo_s1_weather_v1: repo:weather@1 \(sha256:[0-9a-f]{12}\) is code a model wrote/,
    )
    const got = await y.call('get_weather')
    assert.equal(got.text, 'Oslo: sunny')
    const tool = y.rt.list().find((t) => t.name === 'get_weather')!
    assert.equal(tool.source, 'repo:weather')
    assert.ok(
      !y.rt.list().some((t) => t.name.startsWith('run_repo_')),
      'the approval tool is never listed',
    )

    const self = await y.call('repository_self', { plugin: 'weather' })
    assert.match(self.text, /state: running version 1; its tools: get_weather/)
    assert.match(self.text, /```js\nexport default \{[\s\S]*': sunny'/)

    await y.call('repository_define', {
      name: 'weather',
      purpose: 'says the weather',
      source: weather('rainy'),
      config: { city: 'Bergen' },
    })
    y.answers.push('allow-once')
    const r2 = await y.call('repository_run', { plugin: 'weather', version: 2, mode: 'update' })
    assert.match(r2.text, /repo:weather@2 is running \(was version 1\)/)
    assert.equal((await y.call('get_weather')).text, 'Bergen: rainy')

    const r3 = await y.call('repository_run', { plugin: 'weather', version: 1 })
    assert.match(r3.text, /repo:weather@1 is running \(was version 2\)/)
    assert.equal(
      y.asked.length,
      2,
      'version 1 was approved in this session before: not asked again',
    )
    assert.equal((await y.call('get_weather')).text, 'Oslo: sunny')
    assert.deepEqual(
      y.repo.versions().map((v) => v.id),
      ['repo:weather@1', 'repo:weather@2'],
    )

    const u = await y.call('repository_undefine', { plugin: 'weather' })
    assert.match(u.text, /Removed weather and its 2 version/)
    assert.equal((await y.call('get_weather')).status, 'UNKNOWN_TOOL')
    assert.equal(y.repo.versions().length, 0)
  })

  it('a refused approval is rejected and applies nothing', async () => {
    const y = await compose()
    open.push(y.close)
    await y.call('repository_define', { name: 'weather', purpose: 'p', source: weather('sunny') })
    y.answers.push('deny')
    const r = await y.call('repository_run', { plugin: 'weather' })
    assert.equal(r.status, 'TOOL_ERROR')
    assert.match(
      r.text,
      /^rejected: running repo:weather@1 was not approved: .*refused through "test"; weather stays defined/,
    )
    assert.equal((await y.call('get_weather')).status, 'UNKNOWN_TOOL')
    assert.equal(y.repo.plugins()[0]!.state, 'defined')
    assert.equal(y.repo.plugins()[0]!.lastRun?.outcome, 'rejected')
  })

  it('an initialisation past initTimeoutMs fails the run and the current version keeps running', async () => {
    const y = await compose({ initTimeoutMs: 3_000 })
    open.push(y.close)
    await y.call('repository_define', { name: 'weather', purpose: 'p', source: weather('sunny') })
    y.answers.push('allow-session', 'allow-once')
    assert.equal((await y.call('repository_run', { plugin: 'weather' })).status, 'ok')
    const stuck = `export default { name: 'weather', inject: ['runtime'], apply(ctx) {
  ctx.runtime.register({ name: 'get_weather', execute: () => 'never' })
  for (;;) {}
} }`
    await y.call('repository_define', { name: 'weather', purpose: 'p', source: stuck })
    const r = await y.call('repository_run', { plugin: 'weather', mode: 'update' })
    assert.equal(r.status, 'TOOL_ERROR')
    assert.match(
      r.text,
      /^failed: repo:weather@2 did not start: .*did not finish within 3000 ms \(initTimeoutMs\).*; version 1 keeps running/,
    )
    assert.equal((await y.call('get_weather')).text, 'Oslo: sunny')
    const info = y.repo.plugins()[0]!
    assert.equal(info.current, 1)
    assert.equal(info.state, 'running')
  })

  it('a call that never yields times out and its worker is terminated', async () => {
    const y = await compose({ callTimeoutMs: 200 })
    open.push(y.close)
    const loop = `export default { name: 'spin', inject: ['runtime'], apply(ctx) {
  ctx.runtime.register({ name: 'spin', execute: () => { for (;;) {} } })
} }`
    await y.call('repository_define', { name: 'spin', purpose: 'p', source: loop })
    y.answers.push('allow-once')
    assert.equal((await y.call('repository_run', { plugin: 'spin' })).status, 'ok')
    const r = await y.call('spin')
    assert.equal(r.status, 'TIMEOUT')
    for (let i = 0; i < 100 && y.repo.plugins()[0]!.state !== 'failed'; i++)
      await new Promise((resolve) => setTimeout(resolve, 50))
    const info = y.repo.plugins()[0]!
    assert.equal(info.state, 'failed')
    assert.match(info.diagnostics.join('\n'), /did not answer within 1000 ms .*terminated/)
    assert.equal((await y.call('spin')).status, 'UNKNOWN_TOOL')
  })

  it('a worker that sends too much is terminated: one oversized result, or a flood of messages', async () => {
    const y = await compose({ initTimeoutMs: 5_000 })
    open.push(y.close)
    const big = `export default { name: 'big', inject: ['runtime'], apply(ctx) {
  ctx.runtime.register({ name: 'big', execute: () => 'x'.repeat(9 * 1024 * 1024) })
} }`
    await y.call('repository_define', { name: 'big', purpose: 'p', source: big })
    y.answers.push('allow-once')
    assert.equal((await y.call('repository_run', { plugin: 'big' })).status, 'ok')
    const r = await y.call('big')
    assert.notEqual(r.status, 'ok')
    assert.match(r.text, /larger than 16 MB: its worker was terminated/)
    assert.equal(y.repo.plugins()[0]!.state, 'failed')

    const flood = `export default { name: 'flood', inject: ['runtime'], apply() {
  for (let i = 0; i < 20000; i++) process.send({ type: 'noise', i })
} }`
    await y.call('repository_define', { name: 'flood', purpose: 'p', source: flood })
    y.answers.push('allow-once')
    const run = await y.call('repository_run', { plugin: 'flood' })
    assert.equal(run.status, 'TOOL_ERROR')
    assert.match(run.text, /more than 5000 messages within a second: its worker was terminated/)
  })

  it('a define with a syntax error names the line, and stores nothing', async () => {
    const y = await compose()
    open.push(y.close)
    const broken = `export default {
  name: 'weather',
  apply(ctx) { return (1 + }
}`
    const r = await y.call('repository_define', { name: 'weather', purpose: 'p', source: broken })
    assert.equal(r.status, 'TOOL_ERROR')
    assert.match(r.text, /^REPOSITORY_SOURCE_INVALID: weather@1\.mjs:3:28: Expression expected/)
    const ts = await y.call('repository_define', {
      name: 'w',
      purpose: 'p',
      language: 'typescript',
      source: `import x from 'lodash'\nexport default { name: 'w', apply() {} }`,
    })
    assert.match(
      ts.text,
      /w@1\.ts:1:1: it imports "lodash": a dynamic plugin may import only Node's built-in modules/,
    )
    const shape = await y.call('repository_define', {
      name: 'w',
      purpose: 'p',
      source: `export default { name: 'w' }`,
    })
    assert.match(shape.text, /w@1\.mjs:1:16: the plugin has no apply function/)
    const cfg = await y.call('repository_define', {
      name: 'weather',
      purpose: 'p',
      source: weather('x'),
      config: { city: 3 },
    })
    assert.match(cfg.text, /config\.city must be string/)
    assert.deepEqual(y.repo.versions(), [])
  })

  it('another session sees nothing of it: not listed, not callable, not runnable', async () => {
    const y = await compose()
    open.push(y.close)
    for (const s of ['session-a', 'session-b']) y.rt.registry.createScope(s)
    await y.call(
      'repository_define',
      { name: 'weather', purpose: 'p', source: weather('sunny') },
      'session-a',
    )
    y.answers.push('allow-once')
    assert.equal((await y.call('repository_run', { plugin: 'weather' }, 'session-a')).status, 'ok')
    assert.equal((await y.call('get_weather', {}, 'session-a')).text, 'Oslo: sunny')
    assert.ok(y.rt.list('session-a').some((t) => t.name === 'get_weather'))
    assert.ok(!y.rt.list('session-b').some((t) => t.name === 'get_weather'))
    assert.ok(!y.rt.list().some((t) => t.name === 'get_weather'), 'nor from the global scope')
    const byName = await y.call('get_weather', {}, 'session-b')
    assert.equal(byName.status, 'DENIED')
    assert.match(byName.text, /belongs to a dynamic plugin of another session/)
    assert.match((await y.call('repository_self', {}, 'session-b')).text, /no dynamic plugins/)
    assert.match(
      (await y.call('repository_run', { plugin: 'weather' }, 'session-b')).text,
      /no dynamic plugin weather in this session/,
    )
    const listed = (await y.call('repository_list', {}, 'session-b')).structured as {
      instances: Array<{ key: string }>
    }
    assert.ok(
      !listed.instances.some((i) => i.key.startsWith('repository/s')),
      'its instance is not listed',
    )
    assert.ok(
      (await y.call('repository_list', {}, 'session-a')).text.includes('repository/s1/weather'),
    )
  })

  it('two defines of one plugin at once take versions 1 and 2', async () => {
    // the define tool runs alone anyway (exclusive); the repository must not rely on that
    const repo = new Repository({} as never, {
      initTimeoutMs: 1,
      callTimeoutMs: 1,
      maxOldGenerationSizeMb: 16,
      maxToolsPerPlugin: 256,
    })
    const define = (answer: string) =>
      repo.define('global', { name: 'weather', purpose: 'p', source: weather(answer) }, 'test')
    const versions = await Promise.all([define('a'), define('b')])
    assert.deepEqual(
      versions.map((v) => v.id),
      ['repo:weather@1', 'repo:weather@2'],
    )
    assert.deepEqual(
      repo.list('global')[0]!.versions.map((v) => v.version),
      [1, 2],
    )
  })

  it('a scope sees its own plugins and its subagents’, never sessions under it; approvals are asked and kept per scope', async () => {
    const y = await compose()
    open.push(y.close)
    // a gateway view's stateless scope, one of its sessions, and a subagent the view spawned
    for (const s of ['view', 'view/sess-1', 'view/spawn-1']) y.rt.registry.createScope(s)
    await y.call(
      'repository_define',
      { name: 'weather', purpose: 'p', source: weather('sun') },
      'view',
    )
    y.answers.push('allow-session')
    assert.equal((await y.call('repository_run', { plugin: 'weather' }, 'view')).status, 'ok')
    assert.deepEqual(y.askedIn, ['view'], 'asked in the caller’s scope, not the global one')

    assert.ok(!y.rt.list('view/sess-1').some((t) => t.name === 'get_weather'))
    assert.equal((await y.call('get_weather', {}, 'view/sess-1')).status, 'DENIED')
    for (const tool of ['repository_run', 'repository_stop', 'repository_undefine'])
      assert.match(
        (await y.call(tool, { plugin: 'weather' }, 'view/sess-1')).text,
        /no dynamic plugin weather in this session/,
        tool,
      )
    assert.equal(y.repo.plugins('view/sess-1').length, 0)
    assert.match((await y.call('repository_self', {}, 'view/sess-1')).text, /no dynamic plugins/)

    assert.equal((await y.call('get_weather', {}, 'view/spawn-1')).text, 'Oslo: sun')
    assert.equal(
      (await y.call('repository_stop', { plugin: 'weather' }, 'view/spawn-1')).status,
      'ok',
    )
    // the view's approval is the view's: the subagent is asked for itself, in its own scope
    const refused = await y.call('repository_run', { plugin: 'weather' }, 'view/spawn-1')
    assert.match(refused.text, /not approved/)
    assert.deepEqual(y.askedIn, ['view', 'view/spawn-1'])
    y.answers.push('allow-once')
    assert.equal(
      (await y.call('repository_run', { plugin: 'weather' }, 'view/spawn-1')).status,
      'ok',
    )
    assert.equal(y.askedIn.length, 3)
  })
})
