// A caller's dynamic plugins across a gateway's replicas (issue 31): two (then three) kernels, each
// with the repository plugin and a store on one real redis-server, stand for replicas. A plugin
// defined on one is listed and run through the other; both run it (the run's answer says the other
// replica has it running) and answer its tool; an update defined on one is run from the other,
// numbers shared; a stop and an undefine on one end it on all; a replica that starts later runs
// what runs; a version that starts on one replica but not on another is said by that replica's
// name, and a call there answers REPOSITORY_NOT_HERE, not UNKNOWN_TOOL; a record in the store that
// is not one, or whose source does not check, is said and harms nothing else; a store that went
// away leaves each replica's own plugins working, said on its log. Another session sees none of it.
// Skips, saying which binary is missing, where redis-server is not installed.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import policy from '../../../plugins/policy/index.ts'
import repository from '../../../plugins/repository/index.ts'
import store from '../../../plugins/store/index.ts'
import type { Store } from '../../../plugins/store/api.ts'
import type { LogRecord } from '../../../src/index.ts'
import { kernelWith } from '../../helpers/kernel.ts'
import { until } from '../../helpers/until.ts'
import { missing, RedisServer } from '../store/redis-server.ts'

const weather = (sky: string) => `export default {
  name: 'weather',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({
      name: 'weather_now',
      description: 'The weather now',
      inputSchema: { type: 'object', properties: {} },
      execute: () => '${sky}',
    })
  },
}
`
/** starts on the first replica that applies it: the directory it makes is there for the second */
const once = (dir: string) => `import { mkdirSync } from 'node:fs'
export default {
  name: 'once',
  inject: ['runtime'],
  apply(ctx) {
    mkdirSync(${JSON.stringify(dir)})
    ctx.runtime.register({ name: 'once_here', description: 'Here', inputSchema: { type: 'object', properties: {} }, execute: () => 'here' })
  },
}
`
const S = 'mcp-server:gateway:main/holder-alice'

async function replica(redis: string, name: string) {
  process.env.YOKE_REPLICA_ID = name
  const { kernel, rt } = await kernelWith([
    ['store', store, { engine: 'redis', url: redis, keyPrefix: 'repo-replicas:' }],
    ['policy', policy],
    ['repository', repository, { initTimeoutMs: 20_000 }],
  ])
  delete process.env.YOKE_REPLICA_ID
  const logs: LogRecord[] = []
  kernel.hooks.log.tap('test', (r) => void logs.push(r))
  let asked = 0
  rt.approvals.register({ name: 'test', ask: async () => (asked++, 'allow-once') })
  const call = async (tool: string, args: Record<string, unknown> = {}, scope = S) => {
    if (!rt.registry.hasScope(scope)) rt.registry.createScope(scope)
    const r = await rt.call(tool, args, { scope, caller: 'test' })
    return { ...r, text: r.content.map((c) => (c as { text: string }).text).join('\n') }
  }
  const warned = (pattern: RegExp) =>
    logs.some((r) => r.level === 'warn' && pattern.test(r.message))
  return {
    name,
    call,
    warned,
    asked: () => asked,
    store: kernel.services.get('store')!.value as Store,
    /** whether `tool` is registered here (whichever session it is of) */
    has: (tool: string) => rt.registry.resolve(tool) !== undefined,
    close: () => kernel.dispose(),
  }
}
type Replica = Awaited<ReturnType<typeof replica>>

describe("a caller's dynamic plugins on every replica", { skip: missing }, () => {
  const redis = new RedisServer()
  const open: Replica[] = []
  let a: Replica
  let b: Replica
  let dir: string

  before(async () => {
    await redis.start()
    dir = mkdtempSync(join(tmpdir(), 'yoke-replicas-'))
    a = await replica(redis.url, 'ra')
    b = await replica(redis.url, 'rb')
    open.push(a, b)
  })
  after(async () => {
    for (const r of open) await r.close()
    await redis.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('defined on one replica, it is run through the other, and both run it', async () => {
    const defined = await a.call('repository_define', {
      name: 'weather',
      purpose: 'the weather',
      source: weather('sunny'),
    })
    assert.equal(defined.status, 'ok', defined.text)
    assert.match((await b.call('repository_self')).text, /^weather: defined \(1 version/)

    const ran = await b.call('repository_run', { plugin: 'weather' })
    assert.equal(ran.status, 'ok', ran.text)
    assert.match(ran.text, /repo:weather@1 is running; .* 1 other replica\(s\) have it running\./)
    assert.equal(b.asked(), 1, 'the person was asked once, on the replica that ran it')
    assert.equal(a.asked(), 0)
    assert.equal((await a.call('weather_now')).text, 'sunny')
    assert.equal((await b.call('weather_now')).text, 'sunny')
    // another session sees none of it, on either replica
    assert.equal((await a.call('weather_now', {}, 'someone-else')).status, 'DENIED')
    assert.match((await b.call('repository_self', {}, 'someone-else')).text, /no dynamic plugins/)
  })

  it('an update defined on one is run from the other; a stop and an undefine end it everywhere', async () => {
    const second = await b.call('repository_define', {
      name: 'weather',
      purpose: 'the weather, later',
      source: weather('rainy'),
    })
    assert.match(second.text, /Defined repo:weather@2 /, 'the numbers are shared')
    const updated = await a.call('repository_run', { plugin: 'weather', mode: 'update' })
    assert.match(updated.text, /repo:weather@2 is running \(was version 1\).* 1 other replica/)
    assert.equal((await b.call('weather_now')).text, 'rainy')

    const stopped = await a.call('repository_stop', { plugin: 'weather' })
    assert.match(stopped.text, /^Stopped weather .* 1 other replica\(s\) have it stopped\./)
    assert.equal((await b.call('weather_now')).status, 'UNKNOWN_TOOL')
    assert.match((await b.call('repository_self')).text, /^weather: stopped \(version 2 of 2\)/)

    const gone = await b.call('repository_undefine', { plugin: 'weather' })
    assert.match(
      gone.text,
      /Removed weather and its 2 version\(s\)\. 1 other replica\(s\) forgot it/,
    )
    assert.match((await a.call('repository_self')).text, /no dynamic plugins/)
  })

  it('a replica that starts later runs what runs', async () => {
    await a.call('repository_define', { name: 'late', purpose: 'late', source: weather('late') })
    assert.equal((await a.call('repository_run', { plugin: 'late' })).status, 'ok')
    const c = await replica(redis.url, 'rc')
    open.push(c)
    await until('the third replica to run the plugin', () => c.has('weather_now'), { ms: 30_000 })
    assert.equal((await c.call('weather_now')).text, 'late')
    assert.equal(c.asked(), 0, 'the approval given on the first replica holds')
    await c.call('repository_undefine', { plugin: 'late' })
    assert.ok(!a.has('weather_now') && !b.has('weather_now'))
  })

  it('a version that does not start on one replica is said by its name, and a call there says why', async () => {
    const claim = join(dir, 'claimed')
    await a.call('repository_define', { name: 'once', purpose: 'once', source: once(claim) })
    const ran = await a.call('repository_run', { plugin: 'once' })
    assert.equal(ran.status, 'ok', ran.text)
    assert.match(ran.text, /on replica r[bc]\/\w+ it is defined: .*EEXIST/)
    const elsewhere = [b, ...open.slice(2)].find((r) => !r.has('once_here'))!
    const answer = await elsewhere.call('once_here')
    assert.equal(answer.status, 'REPOSITORY_NOT_HERE', answer.text)
    assert.match(answer.text, /once_here is a tool of repo:once@1, which does not run on replica r/)
    await a.call('repository_undefine', { plugin: 'once' })
  })

  it('a record that is not one, or whose source does not check, is said and harms nothing else', async () => {
    await a.store.put('repo:session:garbage', 'not a record')
    assert.match((await b.call('repository_self', {}, 'garbage')).text, /no dynamic plugins/)
    assert.ok(b.warned(/session garbage's dynamic plugins in the shared store are not a record/))

    const good = await a.call('repository_define', {
      name: 'good',
      purpose: 'good',
      source: weather('good'),
    })
    assert.equal(good.status, 'ok')
    const key = `repo:session:${S}`
    const record = (await a.store.get<any>(key))!
    record.value.plugins.bad = {
      id: 'forged',
      purpose: 'bad',
      versions: [
        { ...record.value.plugins.good.versions[0], name: 'bad', source: 'export default {' },
      ],
      approved: [],
      desired: { seq: 0, state: 'defined' },
    }
    await a.store.put(key, record.value)
    const listed = await b.call('repository_self')
    assert.match(listed.text, /^good: defined/m)
    assert.doesNotMatch(listed.text, /^bad:/m)
    assert.ok(b.warned(/dynamic plugin bad from the shared store was not applied here: .*bad@1/))
    await a.call('repository_undefine', { plugin: 'good' })
  })

  it('a replica that starts while the store does not answer joins the others once it does', async () => {
    redis.pause()
    const late = replica(redis.url, 'rd')
    // it starts alone (its first connection times out), and says it will try again
    const d = await late
    open.push(d)
    await until(
      'the replica to say it could not join',
      () => d.warned(/could not join the other replicas through the shared store/),
      { ms: 30_000 },
    )
    redis.resume()
    await a.call('repository_define', { name: 'joined', purpose: 'j', source: weather('joined') })
    assert.equal((await a.call('repository_run', { plugin: 'joined' })).status, 'ok')
    await until('the late replica to run it', () => d.has('weather_now'), { ms: 30_000 })
    assert.equal((await d.call('weather_now')).text, 'joined')
    await a.call('repository_undefine', { plugin: 'joined' })
    await until('the late replica to end it', () => !d.has('weather_now'), { ms: 30_000 })
  })

  it('a store that went away leaves each replica its own plugins, and says so', async () => {
    await redis.kill()
    const defined = await a.call('repository_define', {
      name: 'alone',
      purpose: 'alone',
      source: weather('alone'),
    })
    assert.equal(defined.status, 'ok', defined.text)
    assert.equal((await a.call('repository_run', { plugin: 'alone' })).status, 'ok')
    assert.equal((await a.call('weather_now')).text, 'alone')
    assert.ok(a.warned(/could not be shared with the other replicas/))
  })
})
