// Three `yoke serve` replicas sharing a real redis-server through the store plugin (issue 31):
// a task started on one replica is read, answered, cancelled and finished through the others; a
// 2026-07-28 approval asked on one replica is answered by a retry that reaches another; a list
// change on one replica reaches the clients of a replica that did not see it; a replica killed
// with SIGKILL leaves its tasks `failed`, saying so, while the others' go on; Redis restarted
// under load costs no stateless call, and the replicas find each other again. Requests are sent
// to each replica directly (no balancer), so which replica answers is the test's choice.
// Skips, saying which binary is missing, where redis-server is not installed.
import assert from 'node:assert/strict'
import { cpSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { modernPost } from '../../helpers/modern.ts'
import { tempProject, type Project } from '../../helpers/project.ts'
import { messagesOf, serveHttp, type Served } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'
import { missing, RedisServer } from '../store/redis-server.ts'

const TOKEN = 'cluster-token-0123456789abcdef'
/** the replicas' shared secret: a 2025-era session opened on one is resumed on another */
const SESSION_KEY = 'cluster-session-secret-0123456789abcdef'
const TOOLS = `export default {
  name: 'tools',
  inject: ['runtime'],
  apply(ctx) {
    const sleep = (ms, signal) => new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, ms)
      signal.addEventListener('abort', () => (clearTimeout(timer), reject(new Error('aborted'))), { once: true })
    })
    const ms = { type: 'object', properties: { ms: { type: 'integer' } } }
    ctx.runtime.register({ name: 'echo', concurrency: 'safe', risk: 'low', execute: (a) => 'echo ' + (a.text ?? '') })
    ctx.runtime.register({ name: 'guarded', risk: 'high', execute: () => 'guarded ran on ' + process.env.YOKE_REPLICA_ID })
    ctx.runtime.register({
      name: 'long_job', risk: 'low', execution: { taskSupport: 'optional' }, inputSchema: ms,
      execute: async ({ ms = 200 }, call) => (await sleep(ms, call.signal), 'long job done on ' + process.env.YOKE_REPLICA_ID),
    })
    ctx.runtime.register({
      name: 'guarded_job', risk: 'high', execution: { taskSupport: 'optional' },
      execute: () => 'guarded job ran on ' + process.env.YOKE_REPLICA_ID,
    })
  },
}
`
const FRESH = `export default {
  name: 'fresh',
  inject: ['runtime'],
  apply: (ctx) => void ctx.runtime.register({ name: 'fresh_tool', risk: 'low', execute: () => 'fresh' }),
}
`
/** the audience every replica's OAuth tokens carry: one API for all of them */
const AUDIENCE = 'yoke-cluster-test'
const config = (redis: string, extra = '', issuer = ISSUER.url) => `preset: minimal
plugins:
  tools: { use: ./tools.mjs }
  policy: { use: policy }
  store: { use: store, config: { engine: redis, url: "${redis}", keyPrefix: "cluster-test:" } }
  gateway:
    use: mcp-server
    config:
      token: ${TOKEN}
      oauth: { issuer: "${issuer}", audience: ${AUDIENCE} }
      changeDebounceMs: 50
      views: { limited: { rateLimit: { max: 5, windowMs: 600000 } } }
${extra}`

/**
 * An OAuth issuer of the test's own on loopback (its metadata and JWKS; jose signs): tokens for
 * named subjects, so two holders call the replicas.
 */
const ISSUER = {
  url: '',
  key: undefined as CryptoKey | undefined,
  server: undefined as Server | undefined,
  async start() {
    const pair = await generateKeyPair('ES256')
    this.key = pair.privateKey
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }
    this.server = createServer((req, res) => {
      res.writeHead(req.url === '/jwks' || req.url?.startsWith('/.well-known/') ? 200 : 404, {
        'content-type': 'application/json',
      })
      if (req.url === '/jwks') return res.end(JSON.stringify({ keys: [jwk] }))
      res.end(JSON.stringify({ issuer: this.url, jwks_uri: `${this.url}/jwks` }))
    })
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  },
  token(sub: string) {
    return new SignJWT({ scope: 'mcp:all', iss: this.url, aud: AUDIENCE, sub })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(this.key!)
  },
}

/** One 2026-07-28 request to `url` as `bearer` (the static token by default): its result, or its error. */
async function rpc(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  bearer = TOKEN,
) {
  const { reply } = await rpcWithHeaders(url, method, params, bearer)
  return reply
}

/** The same, with the answer's HTTP status and headers. */
async function rpcWithHeaders(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  bearer = TOKEN,
) {
  const { id, res } = await modernPost(url, method, params, {
    token: bearer,
    client: 'cluster-test',
  })
  // a refusal before the request was read (429) answers with id null
  const message = (await messagesOf(res)).find((m) => m.id === id || m.id === null)
  const reply = {
    result: message?.result,
    error: message?.error as { message: string } | undefined,
  }
  return { reply, status: res.status, headers: res.headers }
}

/**
 * A 2025-era v1 SDK client with form elicitation, answering every question with `decision`, whose
 * requests `routed` sends where the test says (its session id is sealed: any replica resumes it);
 * `asked` collects the questions' last lines.
 */
async function legacyClient(
  base: string,
  routed: (input: string | URL | Request, init?: RequestInit) => Promise<Response>,
  decision: 'allow-once' | 'allow-session',
) {
  const client = new V1Client(
    { name: 'legacy-cluster', version: '1' },
    { capabilities: { elicitation: {} } },
  )
  const asked: string[] = []
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message.split('\n').pop()!)
    return { action: 'accept', content: { decision } }
  })
  await client.connect(
    new V1Transport(new URL(base), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      fetch: routed,
    }),
  )
  return { client, asked }
}

const textOf = (r: any) =>
  (r?.content ?? r?.result?.content ?? []).map((c: { text?: string }) => c.text ?? '').join('')

describe('replicas sharing a Redis store', { skip: missing }, () => {
  const redis = new RedisServer()
  let shared: Project
  let apart: Project
  const replicas: Served[] = []
  const url = (i: number) => replicas[i]!.info.url

  before(async () => {
    await Promise.all([redis.start(), ISSUER.start()])
    shared = tempProject({ 'tools.mjs': TOOLS, 'fresh.mjs': FRESH })
    shared.write('yoke.config.yaml', config(redis.url))
    // the third replica reads a copy of the project: a change to the shared one is news to it
    // only through the store
    apart = tempProject({})
    cpSync(shared.dir, apart.dir, { recursive: true })
    const started = await Promise.all(
      [shared, shared, apart].map((project, i) =>
        serveHttp(project, 60_000, { YOKE_REPLICA_ID: `r${i + 1}`, YOKE_SESSION_KEY: SESSION_KEY }),
      ),
    )
    replicas.push(...started)
  })
  after(async () => {
    // CLUSTER_DEBUG=1 prints what each replica said, for a failure to be read
    if (process.env.CLUSTER_DEBUG)
      for (const r of replicas) console.error(r.child.exitCode, r.stderr())
    for (const r of replicas) if (r.child.exitCode === null) r.child.kill('SIGKILL')
    shared?.cleanup()
    apart?.cleanup()
    await redis.close()
    ISSUER.server?.close()
  })

  /** Reads task `id` through replica `i` until it ended (or is in one of `states`); its state then. */
  const settled = async (i: number, id: string, states = ['completed', 'failed', 'cancelled']) => {
    let task: any
    let last: unknown
    await until(
      () =>
        `task ${id} to be ${states.join(' or ')} (read through r${i + 1}; last read: ${JSON.stringify(last)})`,
      async () => {
        const reply = await rpc(url(i), 'tasks/get', { taskId: id })
        last = reply.error ?? reply.result
        task = reply.result
        return states.includes(task?.status)
      },
      { ms: 30_000, every: 100 },
    )
    return task
  }

  it('a task started on one replica is read and finished through another', async () => {
    const started = (await rpc(url(0), 'tools/call', { name: 'long_job', arguments: { ms: 300 } }))
      .result
    assert.equal(started.resultType, 'task')
    const task = await settled(1, started.taskId)
    assert.equal(task.status, 'completed')
    assert.equal(textOf(task.result), 'long job done on r1')
  })

  it("a task's question is read on one replica and answered on another", async () => {
    // the approval is asked as the call starts: the task is made waiting for it already
    const started = (await rpc(url(0), 'tools/call', { name: 'guarded_job', arguments: {} })).result
    assert.equal(started.resultType, 'task')
    const asking = await settled(1, started.taskId, ['input_required', 'completed'])
    assert.equal(asking.status, 'input_required')
    const [key] = Object.keys(asking.inputRequests)
    const answered = await rpc(url(2), 'tasks/update', {
      taskId: started.taskId,
      inputResponses: { [key!]: { action: 'accept', content: { decision: 'allow-once' } } },
    })
    assert.equal(answered.error, undefined)
    const done = await settled(1, started.taskId)
    assert.equal(done.status, 'completed')
    assert.equal(textOf(done.result), 'guarded job ran on r1')
  })

  it('a task cancelled through another replica ends where it runs', async () => {
    const started = (
      await rpc(url(0), 'tools/call', { name: 'long_job', arguments: { ms: 60_000 } })
    ).result
    assert.equal((await rpc(url(2), 'tasks/cancel', { taskId: started.taskId })).error, undefined)
    assert.equal((await settled(1, started.taskId)).status, 'cancelled')
  })

  it('an approval asked on one replica is answered by a retry that reaches another', async () => {
    for (const [decision, expect] of [
      ['allow-once', /^guarded ran on r1$/],
      ['deny', /DENIED/],
    ] as const) {
      const asked = (await rpc(url(0), 'tools/call', { name: 'guarded', arguments: {} })).result
      assert.equal(asked.resultType, 'input_required')
      const [key] = Object.keys(asked.inputRequests)
      const retried = await rpc(url(1), 'tools/call', {
        name: 'guarded',
        arguments: {},
        requestState: asked.requestState,
        inputResponses: { [key!]: { action: 'accept', content: { decision } } },
      })
      assert.equal(retried.error, undefined, retried.error?.message)
      assert.match(textOf(retried.result), expect)
    }
  })

  it("a 2025-era client's questions reach it on their calls' streams, and its answers, sent anywhere, settle each its own", async () => {
    // its GET stream is on r3, its calls go to r1 then r3, and all its answers to r2: each question
    // must come on its call's own stream, and each answer reach the replica that asked it
    let callsTo = 0
    const answeredOn: string[] = []
    const routed = async (input: string | URL | Request, init?: RequestInit) => {
      const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined
      const answer = body && !('method' in body)
      const target = init?.method === 'GET' ? 2 : answer ? 1 : callsTo
      const res = await fetch(url(target), init)
      if (answer) answeredOn.push(res.headers.get('yoke-replica') ?? '?')
      return res
    }
    const { client, asked } = await legacyClient(url(0), routed, 'allow-once')
    try {
      const first = await client.callTool({ name: 'guarded', arguments: {} }, undefined, {
        timeout: 20_000,
      })
      callsTo = 2
      const second = await client.callTool({ name: 'guarded', arguments: {} }, undefined, {
        timeout: 20_000,
      })
      assert.equal(textOf(first), 'guarded ran on r1')
      assert.equal(textOf(second), 'guarded ran on r3')
      assert.equal(asked.length, 2)
      // the answers' own responses (202) may come after the calls' results
      await until('both answers to be accepted', () => answeredOn.length === 2, { ms: 10_000 })
      assert.deepEqual(answeredOn, ['r2', 'r2'])
    } finally {
      await client.close()
    }
  })

  it('"allow for this session" given on one replica holds for the session on another', async () => {
    // every request goes to r1 until the grant is given, then to r2 (the sealed session resumes there)
    let target = 0
    const routed = (input: string | URL | Request, init?: RequestInit) => fetch(url(target), init)
    const { client, asked } = await legacyClient(url(0), routed, 'allow-session')
    try {
      assert.equal(
        textOf(await client.callTool({ name: 'guarded', arguments: {} })),
        'guarded ran on r1',
      )
      target = 1
      assert.equal(
        textOf(await client.callTool({ name: 'guarded', arguments: {} })),
        'guarded ran on r2',
      )
      assert.equal(asked.length, 1, 'the person was asked once, on r1')
    } finally {
      await client.close()
    }
  })

  it("one OAuth holder's task and waiting call are nobody else's, on any replica", async () => {
    const [alice, bob] = await Promise.all([ISSUER.token('alice'), ISSUER.token('bob')])
    const task = (
      await rpc(url(0), 'tools/call', { name: 'long_job', arguments: { ms: 60_000 } }, alice)
    ).result
    assert.equal(task.resultType, 'task')
    assert.equal(
      (await rpc(url(1), 'tasks/get', { taskId: task.taskId }, alice)).result?.status,
      'working',
    )
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update'])
      assert.match(
        (await rpc(url(1), method, { taskId: task.taskId, inputResponses: {} }, bob)).error
          ?.message ?? '',
        /no task ".*" in the MCP view "default"/,
        `${method} by another holder`,
      )
    // nor the static token's holders
    assert.match(
      (await rpc(url(2), 'tasks/get', { taskId: task.taskId })).error?.message ?? '',
      /no task/,
    )
    // her task ends (through a third replica) before her next call, which would wait for it: both
    // run alone in her scope
    assert.equal(
      (await rpc(url(2), 'tasks/cancel', { taskId: task.taskId }, alice)).error,
      undefined,
    )
    const asked = (await rpc(url(0), 'tools/call', { name: 'guarded', arguments: {} }, alice))
      .result
    assert.equal(asked.resultType, 'input_required')
    const [key] = Object.keys(asked.inputRequests)
    const stolen = await rpc(
      url(1),
      'tools/call',
      {
        name: 'guarded',
        arguments: {},
        requestState: asked.requestState,
        inputResponses: { [key!]: { action: 'accept', content: { decision: 'allow-once' } } },
      },
      bob,
    )
    assert.match(stolen.error?.message ?? '', /requestState is for another call/)
    const own = await rpc(
      url(1),
      'tools/call',
      {
        name: 'guarded',
        arguments: {},
        requestState: asked.requestState,
        inputResponses: { [key!]: { action: 'accept', content: { decision: 'allow-once' } } },
      },
      alice,
    )
    assert.equal(textOf(own.result), 'guarded ran on r1')
    assert.equal(
      (await rpc(url(2), 'tasks/cancel', { taskId: task.taskId }, alice)).error,
      undefined,
    )
  })

  it("a view's rate limit is one budget across the replicas", async () => {
    const remaining: string[] = []
    for (const i of [0, 0, 1, 2, 1]) {
      const { reply, status, headers } = await rpcWithHeaders(`${url(i)}/limited`, 'tools/call', {
        name: 'echo',
        arguments: { text: 'y' },
      })
      assert.equal(status, 200)
      assert.equal(textOf(reply.result), 'echo y')
      remaining.push(headers.get('ratelimit-remaining')!)
    }
    assert.deepEqual(remaining, ['4', '3', '2', '1', '0'])
    const refused = await rpcWithHeaders(`${url(2)}/limited`, 'tools/call', {
      name: 'echo',
      arguments: { text: 'y' },
    })
    assert.equal(refused.status, 429)
    assert.ok(Number(refused.headers.get('retry-after')) > 0)
    assert.match(refused.reply.error!.message, /at most 5 per 10 minutes in the MCP view "limited"/)
    // the default view has no limit: its answers carry no RateLimit headers
    const free = await rpcWithHeaders(url(2), 'tools/call', { name: 'echo', arguments: {} })
    assert.equal(free.status, 200)
    assert.equal(free.headers.get('ratelimit-limit'), null)
  })

  it('a list change on one replica reaches the clients of a replica that did not see it', async () => {
    const heard = replicas.map(() => 0)
    const clients = await Promise.all(
      replicas.map(async (r, i) => {
        const c = new Client({ name: `listener-${i}`, version: '1' })
        c.setNotificationHandler('notifications/tools/list_changed', () => void heard[i]!++)
        await c.connect(
          new StreamableHTTPClientTransport(new URL(r.info.url), {
            requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
          }),
        )
        return c
      }),
    )
    try {
      shared.write('yoke.config.yaml', config(redis.url, `  fresh: { use: ./fresh.mjs }\n`))
      await until(
        "every replica's client to hear that the tools changed",
        () => heard.every((n) => n > 0),
        { ms: 30_000, every: 50 },
      )
      // r3 reads its own copy: its list did not change, its client heard it from the others
      const third = await clients[2]!.listTools()
      assert.ok(!third.tools.some((t) => t.name === 'fresh_tool'))
      const first = await clients[0]!.listTools()
      assert.ok(first.tools.some((t) => t.name === 'fresh_tool'))
    } finally {
      await Promise.all(clients.map((c) => c.close().catch(() => {})))
    }
  })

  it('Redis restarted under load costs no stateless call, and the replicas find each other again', async () => {
    let calls = 0
    let failed = 0
    let stop = false
    const load = (async () => {
      while (!stop) {
        const i = calls % 2
        const reply = await rpc(url(i), 'tools/call', { name: 'echo', arguments: { text: 'x' } })
        calls++
        if (textOf(reply.result) !== 'echo x') failed++
      }
    })()
    await until('some calls before the outage', () => calls > 20, { ms: 30_000, every: 20 })
    await redis.kill()
    const during = calls
    await until('calls during the outage', () => calls > during + 20, { ms: 30_000, every: 20 })
    await redis.start()
    // a retry relayed between replicas works again once both are back in the store
    await until(
      'a retry relayed from r2 to r1 after the restart',
      async () => {
        const asked = (await rpc(url(0), 'tools/call', { name: 'guarded', arguments: {} })).result
        const [key] = Object.keys(asked?.inputRequests ?? {})
        if (!key) return false
        const retried = await rpc(url(1), 'tools/call', {
          name: 'guarded',
          arguments: {},
          requestState: asked.requestState,
          inputResponses: { [key]: { action: 'accept', content: { decision: 'allow-once' } } },
        })
        return textOf(retried.result) === 'guarded ran on r1'
      },
      { ms: 30_000, every: 250 },
    )
    stop = true
    await load
    assert.equal(failed, 0, `${failed} of ${calls} calls failed`)
  })

  it("a replica killed with SIGKILL: its task reads failed, naming it; another's task goes on", async () => {
    const doomed = (
      await rpc(url(2), 'tools/call', { name: 'long_job', arguments: { ms: 60_000 } })
    ).result
    const living = (await rpc(url(0), 'tools/call', { name: 'long_job', arguments: { ms: 1_000 } }))
      .result
    // the case before this one restarted the store: r3 may still be reconnecting, and its task's
    // id goes out once its record is written or that wait's bound has passed (seen in a CI run
    // under load: killed before the write landed, the task was unknown everywhere). The case is
    // about a task the store knows, so r3 dies once another replica reads it
    await until(
      'the doomed task readable through r2',
      async () =>
        (await rpc(url(1), 'tasks/get', { taskId: doomed.taskId })).result?.status === 'working',
      { ms: 15_000, every: 100 },
    )
    replicas[2]!.child.kill('SIGKILL')
    const lost = await settled(1, doomed.taskId)
    assert.equal(lost.status, 'failed')
    assert.match(lost.error.message, /replica running this task \(r3\) stopped/)
    const kept = await settled(1, living.taskId)
    assert.equal(kept.status, 'completed')
    assert.equal(textOf(kept.result), 'long job done on r1')
  })

  it('a drained replica finishes its task within the bound, and another replica reads the result', async () => {
    const started = (
      await rpc(url(1), 'tools/call', { name: 'long_job', arguments: { ms: 1_500 } })
    ).result
    const r2 = replicas[1]!
    const exited = new Promise((resolve) => r2.child.once('exit', resolve))
    r2.child.kill('SIGTERM')
    assert.equal(await exited, 0)
    assert.match(r2.stderr(), /MCP tasks: 1 ended/)
    const task = await settled(0, started.taskId)
    assert.equal(task.status, 'completed')
    assert.equal(textOf(task.result), 'long job done on r2')
  })
})
