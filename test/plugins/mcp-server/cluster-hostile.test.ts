// A hostile review of the replicas' shared state (issue 31), as failing-today cases where the
// review found something: three `yoke serve` replicas sharing a real redis-server, requests sent
// to each replica directly (no balancer). A case marked `todo: 'finding N'` fails today (see the
// review's report); the others hold what the review checked and found sound, or a finding fixed
// since (1 and 3: f6c83c1). Every wait on a
// reply is cut off by the client (AbortSignal), so a hang fails the case instead of the file.
// Skips, saying which binary is missing, where redis-server is not installed.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { modernPost } from '../../helpers/modern.ts'
import { tempProject, type Project } from '../../helpers/project.ts'
import { messagesOf, serveHttp, type Served } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'
import { missing, RedisServer } from '../store/redis-server.ts'

const TOKEN = 'hostile-token-0123456789abcdef'
const SESSION_KEY = 'hostile-session-secret-0123456789abcdef'
const TOOLS = `import { writeFileSync } from 'node:fs'
let runs = 0
export default {
  name: 'tools',
  inject: ['runtime'],
  apply(ctx) {
    const sleep = (ms, signal) => new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, ms)
      signal.addEventListener('abort', () => (clearTimeout(timer), reject(new Error('aborted'))), { once: true })
    })
    const ms = { type: 'object', properties: { ms: { type: 'integer' } } }
    ctx.runtime.register({
      name: 'long_job', risk: 'low', execution: { taskSupport: 'optional' }, inputSchema: ms,
      execute: async ({ ms = 200 }, call) => (await sleep(ms, call.signal), 'long job done on ' + process.env.YOKE_REPLICA_ID),
    })
    ctx.runtime.register({
      name: 'slow_guarded', risk: 'high', inputSchema: ms,
      execute: async ({ ms = 200 }, call) => {
        writeFileSync('slow-started', process.env.YOKE_REPLICA_ID)
        await sleep(ms, call.signal)
        return 'slow guarded done on ' + process.env.YOKE_REPLICA_ID
      },
    })
    ctx.runtime.register({
      name: 'counted', risk: 'high',
      execute: () => 'run ' + ++runs + ' on ' + process.env.YOKE_REPLICA_ID,
    })
  },
}
`
const config = (redis: string) => `preset: minimal
plugins:
  tools: { use: ./tools.mjs }
  policy: { use: policy }
  store: { use: store, config: { engine: redis, url: "${redis}", keyPrefix: "hostile-test:" } }
  gateway:
    use: mcp-server
    config: { token: ${TOKEN} }
`

/** One 2026-07-28 request to `url`, cut off after `ms`: its result, its error, or `hung`. */
async function rpc(url: string, method: string, params: Record<string, unknown>, ms = 30_000) {
  try {
    const { id, res } = await modernPost(url, method, params, {
      token: TOKEN,
      client: 'hostile-test',
      ms,
    })
    const reply = (await messagesOf(res)).find((m) => m.id === id)
    return {
      result: reply?.result,
      error: reply?.error as { message: string } | undefined,
      hung: false,
    }
  } catch (err) {
    if ((err as Error).name !== 'TimeoutError') throw err
    return { result: undefined, error: undefined, hung: true }
  }
}

const textOf = (r: any) =>
  (r?.content ?? r?.result?.content ?? []).map((c: { text?: string }) => c.text ?? '').join('')
const allow = (asked: any) => ({
  [Object.keys(asked.inputRequests)[0]!]: { action: 'accept', content: { decision: 'allow-once' } },
})

describe(
  'replicas sharing a Redis store, reviewed as an attacker and an operator',
  { skip: missing },
  () => {
    const redis = new RedisServer()
    let project: Project
    const replicas: Served[] = []
    const url = (i: number) => replicas[i]!.info.url

    before(async () => {
      await redis.start()
      project = tempProject({ 'tools.mjs': TOOLS })
      project.write('yoke.config.yaml', config(redis.url))
      replicas.push(
        ...(await Promise.all(
          [1, 2, 3].map((i) =>
            serveHttp(project, 60_000, { YOKE_REPLICA_ID: `r${i}`, YOKE_SESSION_KEY: SESSION_KEY }),
          ),
        )),
      )
    })
    after(async () => {
      if (process.env.CLUSTER_DEBUG) for (const r of replicas) console.error(r.stderr())
      for (const r of replicas)
        if (r.child.exitCode === null) {
          r.child.kill('SIGCONT')
          r.child.kill('SIGKILL')
        }
      project?.cleanup()
      await redis.close()
    })

    // these run side by side: none touches the store's process, and the frozen one is r3 alone
    describe('with every replica and the store up', { concurrency: true }, () => {
      it('a sealed requestState replayed at once, through another replica and its own, runs the call once', async () => {
        const asked = (await rpc(url(0), 'tools/call', { name: 'counted', arguments: {} })).result
        assert.equal(asked.resultType, 'input_required')
        const retry = { name: 'counted', arguments: {}, requestState: asked.requestState }
        const replies = await Promise.all(
          [1, 0, 1].map((i) =>
            rpc(url(i), 'tools/call', { ...retry, inputResponses: allow(asked) }, 20_000),
          ),
        )
        const texts = replies.map((r) => textOf(r.result)).filter((t) => t.startsWith('run '))
        assert.ok(texts.length >= 1, JSON.stringify(replies))
        // however many of the replays got the result, the tool ran once
        assert.deepEqual([...new Set(texts)], ['run 1 on r1'])
        assert.ok(replies.every((r) => !r.hung))
      })

      it("a requestState is refused with another tool's name, through another replica", async () => {
        const asked = (await rpc(url(0), 'tools/call', { name: 'counted', arguments: {} })).result
        const replay = await rpc(url(1), 'tools/call', {
          name: 'slow_guarded',
          arguments: {},
          requestState: asked.requestState,
          inputResponses: allow(asked),
        })
        assert.match(replay.error?.message ?? '', /requestState is for another call/)
      })

      it('a frozen replica (SIGSTOP) does not hang a tasks/cancel relayed to it', {}, async () => {
        const started = (
          await rpc(url(2), 'tools/call', { name: 'long_job', arguments: { ms: 60_000 } })
        ).result
        assert.equal(started.resultType, 'task')
        replicas[2]!.child.kill('SIGSTOP')
        try {
          // its heartbeat lapses in ALIVE_MS (6 s); a wait on it should end soon after, not never
          const cancelled = await rpc(url(0), 'tasks/cancel', { taskId: started.taskId }, 10_000)
          assert.equal(cancelled.hung, false, 'tasks/cancel relayed to a frozen replica hung')
        } finally {
          replicas[2]!.child.kill('SIGCONT')
        }
      })
    })

    it('a retry relayed when the store restarts gets an answer once the store is back', async () => {
      const asked = (
        await rpc(url(0), 'tools/call', { name: 'slow_guarded', arguments: { ms: 2_000 } })
      ).result
      assert.equal(asked.resultType, 'input_required')
      // r2 relays the retry to r1, where the call runs for 2 s; the store goes down once it started
      // and is back after it ended, so r1's first publish of its answer to r2 fails. Before
      // f6c83c1 that answer was lost (at most once) and r2, never told, waited while r1 lived;
      // now r1 sends it again until r2 hears it. (A SIGSTOP of the store instead lost the answer
      // only sometimes: a PUBLISH written before the pause may still run after it.)
      const retried = rpc(
        url(1),
        'tools/call',
        {
          name: 'slow_guarded',
          arguments: { ms: 2_000 },
          requestState: asked.requestState,
          inputResponses: allow(asked),
        },
        10_000,
      )
      await until(
        'the relayed call to start on r1',
        () => existsSync(project.path('slow-started')),
        {
          ms: 10_000,
        },
      )
      await redis.kill()
      await sleep(3_000)
      await redis.start()
      const reply = await retried
      if (process.env.CLUSTER_DEBUG) console.error('retry reply', JSON.stringify(reply))
      assert.equal(reply.hung, false, 'the relayed retry hung after the store came back')
    })

    it('a task running while Redis restarts empty is read again through another replica', async () => {
      // the case before this one restarted the store, and replicas may still be reconnecting:
      // a task read then was said "failed" once in CI (its owner's heartbeat record was not
      // written again yet, and a ping found no listener while subscriptions reconnected). A
      // replica whose record the store lately lost counts as running until its next beat: read
      // "failed" is a finding, anything else (an error while the store answers again) is asked again
      let started: any
      let first: any
      await until(
        () => `a task working through r2 (last: ${JSON.stringify(first)})`,
        async () => {
          started = (
            await rpc(url(0), 'tools/call', { name: 'long_job', arguments: { ms: 30_000 } })
          ).result
          assert.equal(started.resultType, 'task', JSON.stringify(started))
          const read = await rpc(url(1), 'tasks/get', { taskId: started.taskId }, 5_000)
          first = read.error ?? read.result
          assert.notEqual(first?.status, 'failed', JSON.stringify(first))
          return read.result?.status === 'working'
        },
        { ms: 15_000, every: 500 },
      )
      await redis.kill()
      await redis.start()
      let last: unknown
      await until(
        () => `the task to read "working" through r2 again (last: ${JSON.stringify(last)})`,
        async () => {
          const reply = await rpc(url(1), 'tasks/get', { taskId: started.taskId }, 5_000)
          last = reply.error ?? reply.result
          // the store lost the owner's heartbeat, not the owner: never read as failed
          assert.notEqual(reply.result?.status, 'failed', JSON.stringify(last))
          return reply.result?.status === 'working'
        },
        { ms: 8_000, every: 250 },
      )
    })
  },
)
