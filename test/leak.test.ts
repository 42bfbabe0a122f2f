// 200 reload cycles of a plugin that registers services, taps, watchers, timers and a child plugin:
// nothing may be left behind, and the heap must stay bounded (the growth is printed).
import assert from 'node:assert/strict'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { after, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Composition } from '../src/index.ts'
import { tempProject } from './helpers/project.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const LEAKY = `
const child = { name: 'leaky-child', apply(ctx) { ctx.setTimeout(() => {}, 60000); ctx.provide('child-' + ctx.key.split('/')[0], {}) } }
export default {
  name: 'leaky',
  provides: ['leaky'],
  apply(ctx, config) {
    const big = new Array(10000).fill(config.n) // something worth leaking
    ctx.provide('leaky', { big })
    ctx.tap(ctx.hooks.state, 'leaky', () => big.length)
    ctx.tap(ctx.hooks.log, 'leaky', () => {})
    ctx.setInterval(() => {}, 60000)
    ctx.setTimeout(() => {}, 60000)
    ctx.watch(new URL('./leaky.mjs', import.meta.url).pathname, () => {})
    ctx.plugin(child, {}, { key: 'child' })
    ctx.effect('custom', () => { big.length = 0 })
  },
}
`
const USER = `export default { name: 'user', inject: ['leaky'], apply(ctx) { ctx.tap(ctx.hooks.state, 'user', () => {}) } }\n`
const config = (n: number) =>
  `preset: minimal\nplugins:\n  leaky:\n    use: ./leaky.mjs\n    config: { n: ${n} }\n  user:\n    use: ./user.mjs\n`

const project = tempProject({ 'leaky.mjs': LEAKY, 'user.mjs': USER, 'yoke.config.yaml': config(0) })
after(() => project.cleanup())

/** Long-lived handles only: file watchers and timers (in-flight fs requests come and go). */
function handles() {
  const counts: Record<string, number> = {}
  for (const kind of process.getActiveResourcesInfo())
    if (['FSEventWrap', 'StatWatcher', 'Timeout'].includes(kind))
      counts[kind] = (counts[kind] ?? 0) + 1
  return counts
}

it('200 reload cycles leave no registrations behind and a bounded heap', async () => {
  const composition = new Composition({ cwd: project.dir, home: project.home })
  try {
    await cycles(composition)
  } finally {
    await composition.close()
  }
  assert.deepEqual(composition.kernel.resources(), { tap: 0, timer: 0, watcher: 0 })
  assert.equal(composition.kernel.fibers.length, 0)
})

async function cycles(composition: Composition) {
  const first = await composition.start()
  assert.equal(first.ok, true)
  const { kernel } = composition
  const expected = {
    resources: kernel.resources(),
    services: kernel.services.list().length,
    fibers: kernel.fibers.length,
  }
  assert.deepEqual(expected.resources, { tap: 3, timer: 3, watcher: 1 })
  assert.equal(expected.services, 2 + 4) // leaky, its child, the core runtime's three and project
  let baseline = { heap: 0, handles: handles() }
  for (let n = 1; n <= 200; n++) {
    project.write('yoke.config.yaml', config(n))
    const event = await composition.reload()
    assert.deepEqual(event.restarted, ['leaky'], `cycle ${n}`)
    if (n === 20) {
      await sleep(300) // chokidar opens its fs watch a moment after the plugin asked for it
      gc()
      baseline = { heap: process.memoryUsage().heapUsed, handles: handles() }
    }
  }
  await sleep(300)
  gc()
  const heap = process.memoryUsage().heapUsed
  const growth = (heap - baseline.heap) / 1024 / 1024
  console.log(
    `heap growth from cycle 20 to 200: ${growth.toFixed(2)} MiB (${((growth * 1024) / 180).toFixed(1)} KiB per cycle)`,
  )
  assert.deepEqual(kernel.resources(), expected.resources)
  assert.equal(kernel.services.list().length, expected.services)
  assert.equal(kernel.fibers.length, expected.fibers)
  assert.ok(
    kernel.fibers.every((f) => f.state === 'active'),
    kernel.fibers.map((f) => `${f.key} ${f.state}`).join(', '),
  )
  const stateTaps = kernel.hooksInUse().find((h) => h.hook === 'kernel.state')!.taps
  assert.deepEqual(stateTaps.sort(), ['leaky', 'user'])
  assert.deepEqual(handles(), baseline.handles, 'no timers, watchers or sockets accumulate')
  // each cycle allocates an 80 KB array in the plugin; a leak would keep all 180 of them (14 MB)
  assert.ok(growth < 8, `heap grew ${growth.toFixed(2)} MiB`)
}
