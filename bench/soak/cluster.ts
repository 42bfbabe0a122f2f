/**
 * `npm run soak -- cluster`: three `yoke serve` replicas behind a real HAProxy (Debian's) that
 * health-checks /readyz, sharing a real redis-server through the store plugin (`engine: redis`)
 * and a YOKE_SESSION_KEY. First the throughput of 2026-07-28 `echo` calls at 32 in flight through
 * one, two and three replicas (the machine's load printed with it); then, for SOAK_CLUSTER_MS
 * (default 60 s), four kinds of work through the balancer (cluster-work.ts: echo calls, MCP tasks
 * polled to their end, 2026-07-28 approvals answered by a retry, 2025-era v1 sessions answering
 * elicitations) while a replica is killed with SIGKILL and started again every 15 s (the same id
 * and port), once drained with SIGTERM instead, and Redis is killed and started again once.
 *
 * Counted per kind: units made, answered, failed after retries, crossed (another call's answer),
 * duplicated (answered twice, or run twice by the tools' own log), lost (never settled), hung
 * (over 30 s), and the processes left. Every count but answered must be zero, except tasks that
 * read `failed` naming a replica that was SIGKILLed while they ran (listed by replica); the run
 * fails on any other. Where haproxy or redis-server is missing, the scenario says which and passes
 * without running.
 */
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { HAPROXY, NO_HAPROXY, startHaproxy } from '../../test/helpers/haproxy.ts'
import { freePort } from '../../test/helpers/mcp.ts'
import { tempProject, type Project } from '../../test/helpers/project.ts'
import { serveHttp } from '../../test/helpers/serve.ts'
import { missing as NO_REDIS, RedisServer } from '../../test/plugins/store/redis-server.ts'
import { throughput } from '../stats.ts'
import { report, type Kinds } from './cluster-report.ts'
import {
  approvalWorker,
  echoWorker,
  legacyWorker,
  modernClient,
  SESSION_KEY,
  taskWorker,
  TOKEN,
  UNIT_MS,
  Work,
  type Chaos,
} from './cluster-work.ts'
import { orphanCheck, sleep, Tracker, type Report } from './track.ts'

/** the tools; each run of a recorded one is a line of `log` (kind, label, replica) */
const tools = (log: string) => `import { appendFileSync } from 'node:fs'
const ran = (label) => appendFileSync(${JSON.stringify(log)}, label + ' ' + process.env.YOKE_REPLICA_ID + '\\n')
const sleep = (ms, signal) => new Promise((resolve, reject) => {
  const timer = setTimeout(resolve, ms)
  signal.addEventListener('abort', () => (clearTimeout(timer), reject(new Error('aborted'))), { once: true })
})
const me = () => process.env.YOKE_REPLICA_ID
export default { name: 'tools', inject: ['runtime'], apply(ctx) {
  ctx.runtime.register({ name: 'echo', concurrency: 'safe', risk: 'low',
    inputSchema: { type: 'object', properties: { text: { type: 'string' }, record: { type: 'boolean' } } },
    execute: ({ text, record }) => (record && ran(text), 'echo: ' + text) })
  ctx.runtime.register({ name: 'long_job', concurrency: 'safe', risk: 'low',
    execution: { taskSupport: 'optional' },
    inputSchema: { type: 'object', properties: { text: { type: 'string' }, ms: { type: 'integer' } } },
    execute: async ({ text, ms }, call) => (ran(text), await sleep(ms, call.signal), 'long job done on ' + me() + ': ' + text) })
  ctx.runtime.register({ name: 'guarded', concurrency: 'safe', risk: 'high',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
    execute: ({ text }) => (ran(text), 'guarded ran on ' + me() + ': ' + text) })
} }\n`
const config = (redis: string) => `preset: minimal
plugins:
  tools: { use: ./tools.mjs }
  policy: { use: policy }
  store: { use: store, config: { engine: redis, url: "${redis}", keyPrefix: "soak-cluster:" } }
  gateway:
    use: mcp-server
    config: { token: ${TOKEN} }
`
const KILL_EVERY_MS = 15_000
/** how long Redis stays down when it is killed */
const REDIS_DOWN_MS = 1_000
const WORKERS = { echo: 16, task: 4, approval: 4, legacy: 2 }

/** One replica: `yoke serve --http 127.0.0.1:PORT` (the same id and port again when it restarts). */
class Replica {
  child?: ChildProcess
  port = 0
  readonly pids: number[] = []

  constructor(
    readonly id: string,
    readonly project: Project,
  ) {}

  async start(): Promise<void> {
    // YOKE_TRUST: the soak wrote this project
    const env = { YOKE_REPLICA_ID: this.id, YOKE_TRUST: '1', YOKE_SESSION_KEY: SESSION_KEY }
    const served = await serveHttp(this.project, 30_000, env, this.port)
    this.child = served.child
    this.pids.push(served.child.pid!)
    this.port = Number(new URL(served.info.url).port)
  }

  exited(): Promise<void> {
    const child = this.child
    if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
    return new Promise((resolve) => child.once('exit', () => resolve()))
  }
}

const load = () =>
  `load ${loadavg()
    .map((l) => l.toFixed(1))
    .join('/')}`

export async function cluster(deadlineMs: number): Promise<Report> {
  const t = new Tracker('cluster', UNIT_MS)
  const absent = !HAPROXY ? NO_HAPROXY : NO_REDIS
  if (absent) {
    t.notes.push(`skipped: ${absent}`)
    return t.report()
  }
  const soakMs = Math.min(Number(process.env.SOAK_CLUSTER_MS ?? 60_000), deadlineMs - 90_000)
  const redis = new RedisServer()
  const logs = mkdtempSync(join(tmpdir(), 'yoke-soak-runs-'))
  const runLog = join(logs, 'runs.log')
  const project = tempProject({ 'tools.mjs': tools(runLog) })
  const replicas = ['r1', 'r2', 'r3'].map((id) => new Replica(id, project))
  const pids: number[] = []
  let kinds: Kinds | undefined
  let lb: ChildProcess | undefined
  try {
    await redis.start()
    project.write('yoke.config.yaml', config(redis.url))
    for (const r of replicas) await r.start()
    const fronts = [await freePort(), await freePort(), await freePort()]
    const servers = replicas.map((r) => ({ name: r.id, port: r.port }))
    lb = startHaproxy(
      join(project.dir, 'haproxy.cfg'),
      fronts.map((port, i) => ({ port, servers: servers.slice(0, i + 1) })),
    )
    pids.push(lb.pid!)
    lb.stderr!.resume()
    const url = (n: number) => `http://127.0.0.1:${fronts[n - 1]}/mcp`
    await ready(fronts)
    t.notes.push(await rates(url))
    kinds = await soak(t, replicas, redis, url(3), soakMs)
  } catch (err) {
    t.problem(`the scenario did not finish: ${(err as Error).message}`)
  } finally {
    lb?.kill('SIGTERM')
    for (const r of replicas) r.child?.kill('SIGTERM')
    await Promise.all(replicas.map((r) => r.exited()))
    await redis.close()
    await orphanCheck(t, [...pids, ...replicas.flatMap((r) => r.pids)], project.dir)
    project.cleanup()
  }
  let runs = ''
  try {
    runs = readFileSync(runLog, 'utf8')
  } catch {}
  rmSync(logs, { recursive: true, force: true })
  return report(t, kinds, runs)
}

/** Waits until HAProxy's first checks passed (rise 1, every 200 ms) on every frontend. */
async function ready(fronts: number[]) {
  for (const end = Date.now() + 20_000; Date.now() < end; await sleep(50)) {
    const answers = await Promise.all(
      fronts.map((port) =>
        fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.ok,
          () => false,
        ),
      ),
    )
    if (answers.every(Boolean)) return
  }
  throw new Error('HAProxy never saw the replicas ready')
}

/**
 * The throughput through 1, 2 and 3 replicas, 32 in flight from 4 clients; a note. On a loaded
 * machine HAProxy may find every replica's /readyz late for a moment (503, no server available):
 * such a call is made again after 200 ms, and counted.
 */
async function rates(url: (n: number) => string): Promise<string> {
  const rates: string[] = []
  const before = load()
  let again = 0
  const persist = async <T>(work: () => Promise<T>): Promise<T> => {
    for (let tries = 1; ; tries++)
      try {
        return await work()
      } catch (err) {
        if (tries === 25 || !/\b503\b/.test((err as Error).message)) throw err
        again++
        await sleep(200)
      }
  }
  for (const n of [1, 2, 3]) {
    const clients = await Promise.all([0, 1, 2, 3].map(() => persist(() => modernClient(url(n)))))
    let k = 0
    const call = () =>
      persist(() => clients[k++ % 4]!.callTool({ name: 'echo', arguments: { text: 'x' } }))
    await throughput(call, 500, 32)
    rates.push(`${n}: ${Math.round(await throughput(call, 4000, 32))}/s`)
    await Promise.all(clients.map((c) => c.close()))
  }
  const retried = again ? `; ${again} calls made again after HAProxy's 503` : ''
  return `calls/s @32 through ${rates.join(', ')} replicas (store: redis; ${before} before, ${load()} after${retried})`
}

/** The kinds of work through the balancer while replicas and Redis are killed; their counts. */
async function soak(
  t: Tracker,
  replicas: Replica[],
  redis: RedisServer,
  url: string,
  ms: number,
): Promise<Kinds> {
  const end = Date.now() + ms
  const chaos: Chaos = { killed: new Map(), drained: new Map() }
  const kinds = {
    echo: new Work('echo'),
    task: new Work('task'),
    approval: new Work('approval'),
    legacy: new Work('legacy'),
  }
  const range = (n: number) => Array.from({ length: n }, (_, i) => i)
  const workers = [
    ...range(WORKERS.echo).map((n) => echoWorker(kinds.echo, url, n, end)),
    ...range(WORKERS.task).map((n) => taskWorker(kinds.task, url, n, end, chaos)),
    ...range(WORKERS.approval).map((n) => approvalWorker(kinds.approval, url, n, end)),
    ...range(WORKERS.legacy).map((n) => legacyWorker(kinds.legacy, url, n, end)),
  ].map((w) => w.catch((err: unknown) => t.problem(`a worker stopped: ${(err as Error).message}`)))
  const loads: number[] = []
  const sampler = setInterval(() => loads.push(loadavg()[0]!), 5_000)
  const events = await faults(replicas, redis, end, chaos)
  // a unit begun before the end runs out; one that never settles is lost, not waited on forever
  const settled = await Promise.race([
    Promise.all(workers).then(() => true),
    sleep(UNIT_MS + 15_000).then(() => false),
  ])
  clearInterval(sampler)
  if (!settled) t.problem('some workers were still running 45 s after the soak ended')
  const mean = loads.length ? loads.reduce((a, b) => a + b, 0) / loads.length : loadavg()[0]!
  t.notes.push(
    `${events}; ${(ms / 1000).toFixed(0)} s, 1-min load during it ${mean.toFixed(1)} (max ${Math.max(...loads, 0).toFixed(1)})`,
  )
  return kinds
}

/**
 * Every KILL_EVERY_MS a replica is sent SIGKILL (once SIGTERM: a drain) and started again; Redis
 * is killed and started again once, halfway between the first two.
 */
async function faults(replicas: Replica[], redis: RedisServer, end: number, chaos: Chaos) {
  let kills = 0
  let drains = 0
  let redisRestarts = 0
  for (let round = 0; Date.now() + KILL_EVERY_MS < end; round++) {
    await sleep(KILL_EVERY_MS / 2)
    if (round === 1) {
      await redis.kill()
      await sleep(REDIS_DOWN_MS)
      await redis.start()
      redisRestarts++
    }
    await sleep(KILL_EVERY_MS / 2)
    const victim = replicas[round % replicas.length]!
    const drain = round === 1
    const times = (drain ? chaos.drained : chaos.killed).get(victim.id) ?? []
    times.push(Date.now())
    ;(drain ? chaos.drained : chaos.killed).set(victim.id, times)
    victim.child!.kill(drain ? 'SIGTERM' : 'SIGKILL')
    await victim.exited()
    if (drain) drains++
    else kills++
    await victim.start()
  }
  return `${kills} SIGKILLs, ${drains} drain and ${redisRestarts} Redis restart under load, each restarted`
}
