/**
 * Reproductions of what the cluster soak found in the replicas' shared state (issue 31), each on a
 * real redis-server and real `yoke serve` replicas, no balancer (each request's replica is chosen
 * here), printing what the client sees:
 *
 *   legacy   a 2025-era v1 SDK session (sealed id) whose GET stream is on r3 and whose requests go
 *            to r1: the approval question of a call on r1 never reaches the client (the call
 *            waits until the client's timeout, and its cancellation, sent to r2, does not end it);
 *            then a call on r3 whose answer is POSTed to r1 (round robin) is answered, and that
 *            one answer also settles r1's question of the abandoned call: it runs too
 *   restart  a task running on r3; r3 SIGKILLed and started again at once with the same
 *            YOKE_REPLICA_ID: tasks/get answers `working` through every replica, and never `failed`
 *
 *   node --import tsx --conditions=yoke-source bench/soak/cluster-repro.ts [legacy|restart]
 */
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { tempProject, type Project } from '../../test/helpers/project.ts'
import { serveHttp, type Served } from '../../test/helpers/serve.ts'
import { missing, RedisServer } from '../../test/plugins/store/redis-server.ts'
import { rpc, SESSION_KEY, TOKEN } from './cluster-work.ts'
import { sleep } from './track.ts'

const TOOLS = `export default { name: 'tools', inject: ['runtime'], apply(ctx) {
  const me = () => process.env.YOKE_REPLICA_ID
  ctx.runtime.register({ name: 'guarded', concurrency: 'safe', risk: 'high',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
    execute: ({ text }) => (console.error('RAN ' + text + ' on ' + me()), 'guarded ran on ' + me() + ': ' + text) })
  ctx.runtime.register({ name: 'long_job', concurrency: 'safe', risk: 'low', execution: { taskSupport: 'optional' },
    execute: async () => (await new Promise((r) => setTimeout(r, 60_000)), 'done on ' + me()) })
} }\n`
const env = (id: string) => ({
  YOKE_REPLICA_ID: id,
  YOKE_TRUST: '1',
  YOKE_SESSION_KEY: SESSION_KEY,
})
const t0 = Date.now()
const log = (...what: unknown[]) =>
  console.log(`${((Date.now() - t0) / 1000).toFixed(1)}s`, ...what)

async function legacy(rs: Served[]) {
  const to = (i: number) => rs[i]!.info.url
  let route = { post: 0, answer: 0 }
  const routed = async (_: string | URL | Request, init?: RequestInit) => {
    const body = typeof init?.body === 'string' ? init.body : ''
    const answer = body.includes('"result"') && !body.includes('"method"')
    const cancel = body.includes('notifications/cancelled')
    const target =
      init?.method === 'GET' ? to(2) : answer ? to(route.answer) : cancel ? to(1) : to(route.post)
    const res = await fetch(target, init)
    log(init?.method ?? 'GET', body.slice(0, 90), '->', res.status, res.headers.get('yoke-replica'))
    return res
  }
  const c = new V1Client({ name: 'repro', version: '1' }, { capabilities: { elicitation: {} } })
  c.setRequestHandler(ElicitRequestSchema, async (r) => {
    log('client asked:', r.params.message.split('\n').pop())
    return { action: 'accept', content: { decision: 'allow-once' } }
  })
  c.onerror = () => {}
  await c.connect(
    new V1Transport(new URL(to(0)), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      fetch: routed,
    }),
  )
  await sleep(500) // the GET stream opens (on r3)
  for (const [text, post, answer] of [
    ['first-on-r1', 0, 0],
    ['second-on-r3', 2, 0],
  ] as const) {
    route = { post, answer }
    try {
      const r = await c.callTool({ name: 'guarded', arguments: { text } }, undefined, {
        timeout: 5_000,
      })
      log('result:', JSON.stringify(r.content))
    } catch (err) {
      log(`${text}: ${(err as Error).message}`)
    }
  }
  await sleep(1_000)
  await c.close()
  for (const [i, r] of rs.entries())
    log(`r${i + 1} ran:`, r.stderr().match(/RAN \S+ on r\d/g) ?? 'nothing')
}

async function restart(rs: Served[], project: Project) {
  const started = await rpc(rs[2]!.info.url, 'tools/call', { name: 'long_job', arguments: {} })
  const taskId = started.result.taskId
  log('task', taskId, 'started on', started.replica)
  const port = Number(new URL(rs[2]!.info.url).port)
  rs[2]!.child.kill('SIGKILL')
  await new Promise((resolve) => rs[2]!.child.once('exit', resolve))
  rs[2] = await serveHttp(project, 30_000, env('r3'), port)
  log('r3 SIGKILLed and started again')
  for (let i = 0; i < 10; i++) {
    const reads = await Promise.all(rs.map((r) => rpc(r.info.url, 'tasks/get', { taskId })))
    log(
      'tasks/get via r1, r2, r3:',
      reads.map((r) => r.result?.status ?? r.error?.message).join(', '),
    )
    await sleep(1_500)
  }
}

const which = process.argv[2] ?? 'legacy'
if (missing) console.log(`skipped: ${missing}`)
else {
  const redis = await new RedisServer().start()
  const project = tempProject({ 'tools.mjs': TOOLS })
  project.write(
    'yoke.config.yaml',
    `preset: minimal\nplugins:\n  tools: { use: ./tools.mjs }\n  policy: { use: policy }\n  store: { use: store, config: { engine: redis, url: "${redis.url}", keyPrefix: "repro:" } }\n  gateway:\n    use: mcp-server\n    config: { token: ${TOKEN} }\n`,
  )
  const rs: Served[] = []
  try {
    for (const id of ['r1', 'r2', 'r3']) rs.push(await serveHttp(project, 30_000, env(id)))
    await (which === 'restart' ? restart(rs, project) : legacy(rs))
  } finally {
    for (const r of rs) r.child.kill('SIGKILL')
    await Promise.all(
      rs.map((r) => r.child.exitCode ?? new Promise((ok) => r.child.once('exit', ok))),
    )
    await redis.close()
    project.cleanup()
  }
}
