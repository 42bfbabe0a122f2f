/**
 * A crashing plugin under `yoke dev`: `node bin/yoke.js dev --events json` on a temporary project
 * with a plugin that throws from a timer and leaves a stray rejection, one that throws from an
 * interval for as long as it runs, and a healthy tool. The crashing instance is restarted three
 * times by config edits (it crashes again each time). Expected: those instances fail with
 * PLUGIN_FAULT and dev stays up; the healthy tool answers every call made in the live dev (over
 * its control socket) and through `yoke tools call`; `yoke inspect` answers live; SIGTERM ends
 * dev with exit code 0 and leaves no process behind.
 */
import { realpathSync } from 'node:fs'
import { ask, socketPath } from '../../src/cli/control.ts'
import { loadLayers, type ToolResult } from '../../src/index.ts'
import { DevProcess, runYoke, tempProject, type DevEvent } from '../../test/helpers/project.ts'
import { alive, orphanCheck, reap, sleep, Tracker, within, type Report } from './track.ts'

const FILES = {
  // its control makes one call in the live runtime: the soak calls the tool inside the dev
  'healthy.mjs': `export default { name: 'healthy', inject: ['runtime'], apply(ctx) {
  ctx.runtime.register({ name: 'still_here', inputSchema: { type: 'object' }, concurrency: 'safe',
    execute: () => new Promise((resolve) => setTimeout(() => resolve('yes'), 5)) })
  ctx.control('healthy/call', () => ctx.runtime.call('still_here', {}))
} }\n`,
  'crashy.mjs': `export default { name: 'crashy', apply(ctx, config) {
  setTimeout(() => { throw new Error('timer boom ' + config.n) }, 50)
  setTimeout(() => Promise.reject(new Error('nobody awaited me ' + config.n)), 60)
} }\n`,
  'crashy-interval.mjs': `export default { name: 'crashy-interval', apply() {
  let n = 0
  setInterval(() => { throw new Error('interval boom ' + ++n) }, 100)
} }\n`,
}
type ControlReply = (ToolResult | { status: string; answer?: ToolResult }) | undefined

const config = (n: number) =>
  `preset: minimal\nplugins:\n  healthy: { use: ./healthy.mjs }\n  crashy: { use: ./crashy.mjs, config: { n: ${n} } }\n  crashy-interval: { use: ./crashy-interval.mjs }\n`

export async function crash(deadlineMs: number): Promise<Report> {
  const t = new Tracker('crash under dev', 10_000)
  const project = tempProject({ ...FILES, 'yoke.config.yaml': config(0) })
  const dir = realpathSync(project.dir)
  const dev = new DevProcess(
    // the soak wrote this project and edits its config as it runs: it trusts the run, as
    // `npm start` does (a remembered `yoke trust` would be asked again after each edit)
    ['--trust'],
    { cwd: dir, home: project.home },
  )
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    dev.child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  let restarts = 0
  try {
    await within('crash under dev', deadlineMs - 20_000, run())
  } catch (err) {
    t.problem(`the scenario did not finish: ${(err as Error).message}`)
  }
  await t.drain(5000)
  // SIGTERM: dev closes and exits 0
  const pid = dev.child.pid!
  if (dev.child.exitCode === null && dev.child.signalCode === null) dev.child.kill('SIGTERM')
  const end = await within('yoke dev after SIGTERM', 15_000, exited).catch((err) => {
    t.problem(err.message)
    dev.child.kill('SIGKILL')
    return undefined
  })
  t.expect(
    end?.code === 0,
    `yoke dev ended with code ${end?.code} signal ${end?.signal} after SIGTERM (stderr: ${dev.stderr.slice(-300)})`,
  )
  t.expect(
    dev.events.some((e) => e.type === 'stopped'),
    'yoke dev did not say it stopped',
  )
  await orphanCheck(t, [pid], dir, 5000)
  reap(t.orphans)
  project.cleanup()
  const faults = dev.events.filter((e) => e.type === 'state' && e.state === 'failed').length
  t.notes.push(`instance faults ${faults}`, `crashy restarts ${restarts}`)
  return t.report()

  async function run() {
    await dev.ready(30_000)
    const failedNow = (instance: string, after: number) =>
      dev.next(
        (e: DevEvent) => e.type === 'state' && e.instance === instance && e.state === 'failed',
        10_000,
        after,
      )
    for (const instance of ['crashy', 'crashy-interval']) {
      const failed = await failedNow(instance, 0)
      t.expect(
        failed.error?.code === 'PLUGIN_FAULT',
        `${instance} failed with ${failed.error?.code}, not PLUGIN_FAULT: ${failed.error?.message}`,
      )
    }
    const up = () => dev.child.exitCode === null && dev.child.signalCode === null
    // the socket the dev listens on, found as the CLI finds it (its project dir and config file)
    const stack = await loadLayers({ cwd: dir, home: project.home })
    const socket = socketPath(stack.projectDir, stack.projectFile)
    let stop = false
    // calls in the live dev, 8 at a time, all along
    const live = (label: string) =>
      t.track(label, async () => {
        const reply = (await ask(
          socket,
          { cmd: 'healthy/call' },
          { connectMs: 8000 },
        )) as unknown as ControlReply
        // { status: 'ok', answer } (or, from an older dev, the answer itself)
        const answer = reply && 'answer' in reply ? reply.answer : reply
        if (answer && 'callId' in answer) return answer
        // no answer: the dev is gone or its control socket stopped answering
        return {
          callId: `none-${label}`,
          tool: 'still_here',
          status: reply?.status === 'error' ? 'CONTROL_ERROR' : 'NO_ANSWER',
          ok: false,
          content: [],
          durationMs: 0,
        } as unknown as ToolResult
      })
    const callers = Array.from({ length: 8 }, async (_, i) => {
      for (let n = 0; !stop; n++) {
        const result = await live(`live-${i}#${n}`)
        if (result && !result.ok) t.problem(`live-${i}#${n} ended ${result.status}`)
        await sleep(20)
      }
    })
    try {
      // the crashing instance restarted by config edits: it crashes again each time
      for (let n = 1; n <= 3; n++) {
        const after = dev.events.length
        project.write('yoke.config.yaml', config(n))
        const failed = await failedNow('crashy', after)
        restarts++
        t.expect(
          /timer boom|nobody awaited me/.test(String(failed.error?.message)),
          `crashy restart ${n} failed for another reason: ${failed.error?.message}`,
        )
        t.expect(up(), `yoke dev exited after crashy restart ${n}`)
      }
      // one-shot commands beside the live dev
      const call = await runYoke(['tools', 'call', 'still_here', '--json', '--cwd', dir], {
        home: project.home,
        timeoutMs: 30_000,
      })
      let status = `exit ${call.code}`
      try {
        const result = JSON.parse(call.stdout) as ToolResult
        status = result.status
        t.external(status) // its call id is that process's own: not compared with the dev's
      } catch {
        t.external(status)
      }
      t.expect(
        call.code === 0 && status === 'ok',
        `yoke tools call still_here: exit ${call.code}, ${status} (${call.stderr.slice(-300)})`,
      )
      const inspect = await runYoke(['inspect', '--json', '--cwd', dir], {
        home: project.home,
        timeoutMs: 30_000,
      })
      let snapshot: { source?: string; instances?: Array<{ key: string; state: string }> } = {}
      try {
        snapshot = JSON.parse(inspect.stdout)
      } catch {}
      const state = (key: string) => snapshot.instances?.find((i) => i.key === key)?.state
      t.expect(
        inspect.code === 0 && snapshot.source === 'live from yoke dev',
        `yoke inspect did not answer live: exit ${inspect.code}, source ${snapshot.source}`,
      )
      t.expect(state('healthy') === 'active', `inspect: healthy is ${state('healthy')}`)
      t.expect(state('crashy') === 'failed', `inspect: crashy is ${state('crashy')}`)
      // the interval keeps throwing into a failed instance for a while: dev must shrug it off
      await sleep(1500)
      t.expect(up(), 'yoke dev exited while a failed plugin kept throwing')
      t.expect(alive(dev.child.pid!), 'the yoke dev process is gone')
    } finally {
      stop = true
      await within('the live callers', 15_000, Promise.all(callers)).catch((err) =>
        t.problem(err.message),
      )
    }
    t.expect(t.status('ok') === t.made, `${t.made - t.status('ok')} calls did not end ok`)
  }
}
