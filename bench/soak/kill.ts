/**
 * kill -9 loops on stdio MCP servers with calls in flight. One composition runs two mcp-client
 * instances: the test fixture server (SDK server; echo and a sleep that reports progress),
 * @modelcontextprotocol/server-everything, and the fixture behind a wrapper process (as npx
 * runs a server: the pid yoke knows is the wrapper, the server is its child in the same group). Callers keep calls running on both while each server
 * is SIGKILLed again and again, its pid read from the mcp hub's status. Expected: every call ends
 * with one result (ok, or SERVER_UNAVAILABLE / ABORTED / TIMEOUT), the killed process's group
 * is gone within seconds while yoke runs, the client reconnects after each kill and answers at
 * the end, and after close no server process (nor its process group)
 * and no child of this process is left.
 */
import type { McpServerStatus } from '../../plugins/mcp/api.ts'
import { Composition, tapHook } from '../../src/index.ts'
import { EVERYTHING, FIXTURE } from '../../test/helpers/mcp.ts'
import { tempProject } from '../../test/helpers/project.ts'
import {
  alive,
  groupAlive,
  orphanCheck,
  reap,
  sleep,
  Tracker,
  until,
  within,
  type Report,
} from './track.ts'

const KILLS = { victim: 40, everything: 10, wrapped: 10 }
type Name = keyof typeof KILLS
const EXPECTED = new Set(['ok', 'SERVER_UNAVAILABLE', 'ABORTED', 'TIMEOUT'])

const server = (name: string, args: string[]) =>
  `  ${name}:\n    use: mcp-client\n    config:\n      serverName: ${name}\n      command: ${JSON.stringify(process.execPath)}\n      args: ${JSON.stringify(args)}\n      callMs: 8000\n      reconnect: { initialDelayMs: 50, maxDelayMs: 250, maxAttempts: 100 }\n`
const CONFIG =
  `preset: base\nruntime: { maxConcurrent: 64, unloadGraceMs: 500 }\nplugins:\n` +
  server('victim', [FIXTURE, 'normal']) +
  server('everything', [EVERYTHING, 'stdio']) +
  server('wrapped', [FIXTURE, 'wrapper'])

export async function kill(deadlineMs: number): Promise<Report> {
  const t = new Tracker('kill -9 loop', 20_000)
  const project = tempProject({ 'yoke.config.yaml': CONFIG })
  const composition = new Composition({
    cwd: project.dir,
    home: project.home,
    // the soak wrote this project itself: it trusts its own code, as an application does
    trust: true,
  })
  const pids = new Set<number>()
  const killed: Record<string, number> = { victim: 0, everything: 0, wrapped: 0 }
  const inFlightAtKill: number[] = []
  const running: Record<string, number> = { victim: 0, everything: 0, wrapped: 0 }
  const lastKilled: Record<string, number | undefined> = {}
  let stop = false
  try {
    await within('kill -9 loop', deadlineMs - 15_000, run())
  } catch (err) {
    t.problem(`the scenario did not finish: ${(err as Error).message}`)
  }
  stop = true
  await t.drain(10_000)
  try {
    await within('closing the composition', 15_000, composition.close())
  } catch (err) {
    t.problem((err as Error).message)
  }
  await orphanCheck(t, pids, project.dir, 5000)
  reap(t.orphans)
  project.cleanup()
  t.notes.push(
    `kills ${Object.entries(KILLS)
      .map(([name, n]) => `${name} ${killed[name]}/${n}`)
      .join(' ')}`,
    `server pids seen ${pids.size}`,
    `calls in flight on the server at a kill: min ${Math.min(...inFlightAtKill)} max ${Math.max(...inFlightAtKill)}`,
  )
  return t.report()

  async function run() {
    const started = await composition.start()
    t.expect(started.ok, `the first load failed: ${started.errors.map((e) => e.message)}`)
    const rt = composition.runtime!
    const hub = composition.get('mcp')!
    const status = (name: string): McpServerStatus | undefined =>
      hub.list().find((s) => s.name === name)
    const note = (s: McpServerStatus) => void (s.pid && pids.add(s.pid))
    const untap = tapHook(hub.hooks.change, 'soak', note)
    const poller = setInterval(() => hub.list().forEach(note), 10)
    try {
      for (const name of Object.keys(KILLS))
        t.expect(
          await until(() => status(name)?.state === 'connected', 30_000),
          `${name} never connected: ${status(name)?.detail}`,
        )
      const caller = async (id: string, call: (n: number) => Promise<unknown>) => {
        for (let n = 0; !stop; n++) {
          const result = (await call(n)) as { status?: string } | undefined
          // an outage answers at once: do not spin on it
          if (result?.status !== 'ok') await sleep(15)
          else await sleep(3)
        }
        void id
      }
      const track = (label: string, name: string, args: Record<string, unknown>) => {
        const owner = name.split('__')[1]!
        running[owner]!++
        return t
          .track(label, () => rt.call(name, args))
          .then((result) => {
            running[owner]!--
            if (result && !EXPECTED.has(result.status))
              t.problem(`${label} ended ${result.status}: ${result.error?.message ?? ''}`)
            return result
          })
      }
      const callers = [
        ...Array.from({ length: 8 }, (_, i) =>
          caller(`victim-sleep-${i}`, (n) =>
            track(`victim-sleep-${i}#${n}`, 'mcp__victim__sleep', { ms: 40 + ((n * 37) % 300) }),
          ),
        ),
        ...Array.from({ length: 4 }, (_, i) =>
          caller(`victim-echo-${i}`, (n) =>
            track(`victim-echo-${i}#${n}`, 'mcp__victim__echo', { text: `${i}:${n}` }),
          ),
        ),
        ...Array.from({ length: 4 }, (_, i) =>
          caller(`everything-${i}`, (n) =>
            track(`everything-${i}#${n}`, 'mcp__everything__echo', { message: `${i}:${n}` }),
          ),
        ),
        ...Array.from({ length: 3 }, (_, i) =>
          caller(`wrapped-${i}`, (n) =>
            track(`wrapped-${i}#${n}`, 'mcp__wrapped__sleep', { ms: 40 + ((n * 41) % 200) }),
          ),
        ),
        ...Array.from({ length: 4 }, (_, i) =>
          caller(`everything-long-${i}`, (n) =>
            track(`everything-long-${i}#${n}`, 'mcp__everything__trigger-long-running-operation', {
              duration: 0.1 + ((n * 7) % 4) / 10,
              steps: 2,
            }),
          ),
        ),
      ]
      const killLoop = async (name: Name) => {
        let last: number | undefined
        for (let k = 0; k < KILLS[name]; k++) {
          const back = await until(() => {
            const s = status(name)
            return s?.state === 'connected' && !!s.pid && s.pid !== last
          }, 20_000)
          if (!back) {
            t.problem(`${name} did not reconnect after kill ${k}: ${status(name)?.detail}`)
            return
          }
          const pid = status(name)!.pid!
          pids.add(pid)
          await sleep(120 + ((k * 53) % 250)) // calls are running on it now
          await until(() => running[name]! > 0, 3000, 2) // at least one, to be sure
          inFlightAtKill.push(running[name]!)
          try {
            process.kill(pid, 'SIGKILL')
            killed[name]!++
          } catch (err) {
            t.problem(`kill -9 ${pid} (${name}): ${(err as Error).message}`)
          }
          last = lastKilled[name] = pid
          t.expect(await until(() => !alive(pid), 3000), `${name} pid ${pid} survived kill -9`)
          // and what it started in its process group (the wrapper's server) goes with it
          t.expect(
            await until(() => !groupAlive(pid), 5000),
            `${name}: the process group of killed pid ${pid} is still alive (an orphan while yoke runs)`,
          )
        }
      }
      await Promise.all((Object.keys(KILLS) as Name[]).map(killLoop))
      // the client reconnects: both answer once more
      for (const [name, tool, args] of [
        ['victim', 'mcp__victim__echo', { text: 'back' }],
        ['wrapped', 'mcp__wrapped__echo', { text: 'back' }],
        ['everything', 'mcp__everything__echo', { message: 'back' }],
      ] as const) {
        const up = await until(() => {
          const s = status(name)
          return s?.state === 'connected' && !!s.pid && s.pid !== lastKilled[name]
        }, 20_000)
        t.expect(up, `${name} is not connected at the end: ${status(name)?.detail}`)
        const result = await t.track(`${name}-final`, () => rt.call(tool, args))
        t.expect(result?.ok === true, `${name} does not answer at the end: ${result?.status}`)
      }
      stop = true
      await within('the callers', 20_000, Promise.all(callers)).catch((err) =>
        t.problem(err.message),
      )
      t.expect(t.status('ok') > 0, 'no call succeeded')
      t.expect(t.status('SERVER_UNAVAILABLE') > 0, 'no call saw a server go (were any in flight?)')
      t.expect(
        inFlightAtKill.every((n) => n > 0),
        `${inFlightAtKill.filter((n) => n === 0).length} kills found no call in flight on their server`,
      )
    } finally {
      stop = true
      clearInterval(poller)
      untap()
    }
  }
}
