/**
 * Apply and dispose 1,000 plugin instances through the kernel, against the same work done by hand
 * in the same run (a Map for services, raw tapable taps spliced out, plain timers).
 */
import { SyncHook } from 'tapable'
import { Kernel, toPlugin, type Context, type Plugin } from '../src/index.ts'
import { row } from './stats.ts'

const N = 1000

function byHand(): [number, number] {
  const services = new Map<string, unknown>()
  const hook = new SyncHook<[number]>(['n'])
  const undo: Array<() => void> = []
  const t0 = performance.now()
  for (let i = 0; i < N; i++) {
    services.set(`s${i}`, { i })
    const fn = () => {}
    hook.tap(`p${i}`, fn)
    const timer = setInterval(() => {}, 60_000)
    undo.push(() => {
      services.delete(`s${i}`)
      hook.taps.splice(
        hook.taps.findIndex((t) => t.fn === fn),
        1,
      )
      ;(hook as any)._resetCompilation()
      clearInterval(timer)
    })
  }
  const t1 = performance.now()
  for (const u of undo.reverse()) u()
  return [t1 - t0, performance.now() - t1]
}

async function withKernel(): Promise<[number, number]> {
  const kernel = new Kernel()
  const hook = new SyncHook<[number]>(['n'])
  const plugin = toPlugin({
    name: 'bench',
    apply(ctx: Context, config: { i: number }) {
      ctx.provide(`s${config.i}`, config)
      ctx.tap(hook, ctx.key, () => {})
      ctx.setInterval(() => {}, 60_000)
    },
  }) as Plugin
  const t0 = performance.now()
  for (let i = 0; i < N; i++) kernel.spawn(plugin, { i }, { key: `p${i}` })
  await kernel.settled()
  const t1 = performance.now()
  if (kernel.fibers.some((f) => f.state !== 'active')) throw new Error('not all active')
  await kernel.dispose()
  return [t1 - t0, performance.now() - t1]
}

export async function lifecycleBench() {
  byHand() // warm up both paths
  await withKernel()
  const hand = byHand()
  const kernel = await withKernel()
  console.log(`\napply and dispose ${N} plugin instances (each: a service, a tap, a timer)`)
  console.log(row(['', 'by hand (ms)', 'kernel (ms)', 'per instance', 'ratio']))
  console.log(
    row([
      'apply',
      hand[0],
      kernel[0],
      `${((kernel[0] / N) * 1000).toFixed(0)} µs`,
      `${(kernel[0] / hand[0]).toFixed(1)}×`,
    ]),
  )
  console.log(
    row([
      'dispose',
      hand[1],
      kernel[1],
      `${((kernel[1] / N) * 1000).toFixed(0)} µs`,
      `${(kernel[1] / hand[1]).toFixed(1)}×`,
    ]),
  )
}
