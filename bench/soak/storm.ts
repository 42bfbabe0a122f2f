/**
 * Reload storm: 1,000 calls kept in flight (about 50 at a time) across 50 reloads of the instance
 * that owns the tool, each a config edit plus `composition.reload`. The tool takes 20–250 ms, so
 * every reload finds calls running on the old version and new calls arriving while the new one
 * starts. Expected: every call `ok`, 0 UNKNOWN_TOOL, 0 lost, 0 duplicated, and the tool registered
 * once at the end, answered by the last version.
 */
import { Composition } from '../../src/index.ts'
import { tempProject } from '../../test/helpers/project.ts'
import { sleep, Tracker, within, type Report } from './track.ts'

const CALLS = 1000
const RELOADS = 50
const WIDTH = 50

const PLUGIN = `
export default {
  name: 'echo',
  inject: ['runtime'],
  apply(ctx, config) {
    ctx.runtime.register({
      name: 'echo',
      description: 'waits ms, then says which version answered',
      inputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
      concurrency: 'safe',
      execute: (args, call) => new Promise((resolve) => {
        const timer = setTimeout(() => resolve('v' + config.version), args.ms ?? 5)
        call.signal.addEventListener('abort', () => clearTimeout(timer), { once: true })
      }),
    })
    ctx.provide('echoVersion', { version: config.version })
  },
}
`
const config = (version: number) =>
  `preset: base\nruntime: { maxConcurrent: 128 }\nplugins:\n  echo:\n    use: ./echo.mjs\n    config: { version: ${version} }\n`

export async function storm(deadlineMs: number): Promise<Report> {
  const t = new Tracker('reload storm', 15_000)
  const project = tempProject({ 'echo.mjs': PLUGIN, 'yoke.config.yaml': config(0) })
  const composition = new Composition({
    cwd: project.dir,
    home: project.home,
    // the soak wrote this project itself: it trusts its own code, as an application does
    trust: true,
  })
  const versions = new Map<string, number>()
  let reloads = 0
  try {
    await within('reload storm', deadlineMs, run())
  } catch (err) {
    t.problem(`the scenario did not finish: ${(err as Error).message}`)
  }
  await t.drain(5000)
  try {
    await within('closing the composition', 10_000, composition.close())
  } catch (err) {
    t.problem((err as Error).message)
  }
  project.cleanup()
  t.notes.push(
    `reloads ${reloads}/${RELOADS}`,
    `max in flight ${t.maxInFlight}`,
    `versions answering ${versions.size}`,
  )
  return t.report()

  async function run() {
    const started = await composition.start()
    t.expect(started.ok, `the first load failed: ${started.errors.map((e) => e.message)}`)
    const rt = composition.runtime!
    // the launcher keeps up to WIDTH calls in flight and spreads the 1,000 over the 50 reloads:
    // 20 before each reload, 20 more while it runs
    let launched = 0
    let allowed = CALLS / RELOADS
    let stop = false
    const inFlight = new Set<Promise<unknown>>()
    const launcher = (async () => {
      while (launched < CALLS && !stop) {
        if (inFlight.size >= WIDTH || launched >= allowed) {
          await Promise.race([...inFlight, sleep(5)])
          continue
        }
        const n = launched++
        const ms = 20 + ((n * 7919) % 230) // 20–250 ms, spread evenly
        const call = t
          .track(`echo#${n}`, () => rt.call('echo', { ms }))
          .then((result) => {
            if (result?.ok && result.content[0]?.type === 'text') {
              const v = result.content[0].text
              versions.set(v, (versions.get(v) ?? 0) + 1)
            } else if (result)
              t.problem(`echo#${n} ended ${result.status}: ${result.error?.message ?? ''}`)
          })
        inFlight.add(call)
        void call.finally(() => inFlight.delete(call))
      }
    })()
    try {
      for (let version = 1; version <= RELOADS; version++) {
        // this reload's share of calls is out first, so each reload has calls in flight
        while (launched < allowed && launched < CALLS) await sleep(2)
        project.write('yoke.config.yaml', config(version))
        // the next share goes out while this reload runs: calls arrive during the swap, and those
        // on the old version are still running
        allowed = Math.min(CALLS, allowed + CALLS / RELOADS)
        const event = await within(
          `reload ${version}`,
          15_000,
          composition.reload([project.path('yoke.config.yaml')]),
        )
        reloads++
        t.expect(
          event.ok && event.restarted.join() === 'echo',
          `reload ${version}: ok ${event.ok}, restarted [${event.restarted}], failed [${event.failed.map((f) => `${f.instance}: ${f.error.message}`)}]`,
        )
        const service = composition.kernel.services.get('echoVersion' as never)?.value as
          { version?: number } | undefined
        const provided = service?.version
        t.expect(provided === version, `after reload ${version} the service says ${provided}`)
      }
    } finally {
      allowed = CALLS
    }
    await within('the launcher', 30_000, launcher).catch((err) => {
      stop = true
      t.problem(err.message)
    })
    await within('the last calls', 30_000, Promise.all(inFlight)).catch((err) =>
      t.problem(err.message),
    )
    const echoes = rt.list().filter((tool) => tool.name === 'echo').length
    t.expect(echoes === 1, `the tool is registered ${echoes} times at the end`)
    const last = await rt.call('echo', { ms: 1 })
    const text = last.content[0]?.type === 'text' ? last.content[0].text : ''
    t.expect(text === `v${RELOADS}`, `the last version answers (got ${last.status} ${text})`)
    t.expect(t.made === CALLS, `${t.made} calls made, not ${CALLS}`)
    t.expect(t.status('UNKNOWN_TOOL') === 0, `${t.status('UNKNOWN_TOOL')} calls saw UNKNOWN_TOOL`)
    t.expect(t.status('ok') === t.made, `${t.made - t.status('ok')} calls did not end ok`)
    t.expect(versions.size > 10, `only ${versions.size} versions answered calls`)
  }
}
