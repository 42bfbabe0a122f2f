// When the console runs and when it costs nothing: under `yoke dev` (command 'dev') by default,
// with `enabled: true` in another long-running composition, never in a one-shot command, and
// `enabled: false` is no listener and no tap. Its host is loopback unless allowRemote; its port
// and token survive a reload; a browser that does not read its events is dropped.
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import type { ServerResponse } from 'node:http'
import { describe, it } from 'node:test'
import { EventHub } from '../../../plugins/console/events.ts'
import { CONFIG, http, launcher, bearer } from './helpers.ts'

const launch = launcher()

const consoleFiber = (l: { composition: { reconciler: { running: Map<string, any> } } }) =>
  l.composition.reconciler.running.get('console')!.fiber

describe('console: when it runs', () => {
  it('enabled: false listens nowhere and taps nothing; `yoke console` is told why', async () => {
    const l = await launch(CONFIG('    config: { enabled: false }'))
    assert.equal(l.url.listening, false)
    assert.match(l.url.why!, /enabled: false/)
    const effects = consoleFiber(l)
      .effects()
      .map((e: any) => e.label)
    assert.deepEqual(effects, ['control console/url'], 'no server, no tap, no bridge')
  })

  it('a one-shot command never listens, even with enabled: true', async () => {
    const l = await launch(CONFIG('    config: { enabled: true }'), { runMode: 'once' })
    assert.equal(l.url.listening, false)
    assert.match(l.url.why!, /one-shot/)
    assert.deepEqual(
      consoleFiber(l)
        .effects()
        .map((e: any) => e.label),
      ['control console/url'],
    )
  })

  it('by default it runs under `yoke dev` only; enabled: true runs it when embedded', async () => {
    const embedded = await launch(CONFIG('    config: {}'), { command: undefined })
    assert.equal(embedded.url.listening, false)
    assert.match(embedded.url.why!, /yoke dev/)
    const asked = await launch(CONFIG('    config: { enabled: true, uiDir: ./ui }'), {
      command: undefined,
    })
    assert.equal(asked.url.listening, true)
    assert.equal(
      (await http(asked.port, '/api/snapshot', { headers: bearer(asked.token) })).status,
      200,
    )
  })

  it('a non-loopback host is a config error with the fix, unless allowRemote', async () => {
    await assert.rejects(
      launch(CONFIG('    config: { host: 0.0.0.0 }')),
      /"0\.0\.0\.0" is not a loopback address.*allowRemote: true/s,
    )
  })

  it('a reload that restarts it keeps its port and token (an open page keeps working)', async () => {
    const l = await launch()
    l.project.write('yoke.config.yaml', CONFIG('    config: { uiDir: ./ui, heartbeatMs: 20000 }'))
    const event = await l.composition.reload([l.project.path('yoke.config.yaml')])
    assert.deepEqual(event.restarted, ['console'])
    const again = (await l.composition.kernel.ask('console/url', {})) as any
    assert.equal(again.url, l.url.url)
    assert.equal((await http(l.port, '/api/snapshot', { headers: bearer(l.token) })).status, 200)
  })
})

/** A response whose socket never drains. */
function stuckResponse() {
  const res = new EventEmitter() as EventEmitter & Record<string, any>
  res.written = [] as string[]
  res.destroyed = false
  res.writeHead = () => res
  res.write = (text: string) => (res.written.push(text), false)
  res.end = () => {}
  res.destroy = () => {
    res.destroyed = true
    res.emit('close')
  }
  return res
}

describe('console: the event stream', () => {
  it('a browser that does not read is dropped once its queue is full; sending never waits', () => {
    const hub = new EventHub(3, 60_000)
    const res = stuckResponse()
    hub.open(res as unknown as ServerResponse, { at: '', about: {} as any })
    assert.equal(hub.count, 1)
    for (let i = 0; i < 3; i++) hub.send('log', { at: '', level: 'warn', message: `m${i}` })
    assert.equal(hub.count, 1, 'queued up to the bound')
    hub.send('log', { at: '', level: 'warn', message: 'one too many' })
    assert.equal(res.destroyed, true)
    assert.equal(hub.count, 0)
    hub.close()
  })
})

describe('console: why an instance waits', () => {
  it('an instance waiting for `yoke trust` says so, with the fix, in the instances and the doctor', async () => {
    const l = await launch(CONFIG('    config: {}'), { trust: false })
    const snap = (await http(l.port, '/api/snapshot', { headers: bearer(l.token) })).json()
    const tools = snap.instances.find((i: any) => i.key === 'tools')
    assert.equal(tools.state, 'pending')
    assert.equal(tools.trust, true)
    assert.equal(tools.error.code, 'PLUGIN_WAITING')
    assert.match(tools.error.hint, /`yoke trust`/)
    const check = snap.doctor.checks.find((c: any) => c.topic === 'trust')
    assert.equal(check.level, 'warn')
    assert.match(check.message, /instance "tools".*waits/)
    assert.match(check.hint, /`yoke trust`/)
    assert.equal(snap.doctor.level, 'warn')
  })
})
