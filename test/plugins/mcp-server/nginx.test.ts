// Three `yoke serve` replicas behind a real nginx (Debian's open-source build), configured as the
// README's "Running several replicas" shows (test/helpers/nginx.ts): round robin with no affinity
// for 2026-07-28 clients and for 2025-era sessions sealed with the replicas' shared secret; their
// streams (a 2025 session's GET, a subscriptions/listen) carry a hot reload's list_changed; a
// replica draining on SIGTERM is passed over (its 503 to a POST is asked of another replica, once)
// while its own call finishes; a replica killed with SIGKILL under load costs no call its client
// retries, and after it nginx alone passes over the dead one. Skips, saying so, where nginx is not
// installed. The replicas are started once and shared by the cases, which run in order.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { freePort, stop } from '../../helpers/mcp.ts'
import { NGINX, NO_NGINX, nginxSite, startNginx, type Nginx } from '../../helpers/nginx.ts'
import { ROOT, tempProject, type Project } from '../../helpers/project.ts'
import { serveHttp, type Served } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'

const skip = NGINX ? false : NO_NGINX

const TOKEN = 'nginx-token-0123456789abcdef'
/** the secret the replicas share: 2025-era session ids are sealed, so any replica resumes one */
const SESSION_KEY = 'nginx-session-secret-0123456789abcdef'
const auth = { Authorization: `Bearer ${TOKEN}` }
// echo, and hold: a call that stays in flight on its replica until the test writes `release`
// (it marks which replica holds it with a file: held-by-<replica>)
const TOOLS = `import { existsSync, writeFileSync } from 'node:fs'
export default {
  name: 'tools',
  inject: ['runtime'],
  apply(ctx) {
    const object = { type: 'object', properties: { text: { type: 'string' } } }
    ctx.runtime.register({
      name: 'echo', concurrency: 'safe', risk: 'low', inputSchema: object,
      execute: ({ text }) => 'echo: ' + text,
    })
    ctx.runtime.register({
      name: 'hold', concurrency: 'safe', risk: 'low', inputSchema: object,
      async execute() {
        const me = process.env.YOKE_REPLICA_ID
        writeFileSync('held-by-' + me, '')
        while (!existsSync('release')) await new Promise((resolve) => setTimeout(resolve, 20))
        return 'held by ' + me
      },
    })
  },
}
`
const FRESH = `export default {
  name: 'fresh',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({
      name: 'fresh', concurrency: 'safe', risk: 'low',
      inputSchema: { type: 'object', properties: {} },
      execute: () => 'fresh',
    })
  },
}
`
const CONFIG = `preset: minimal
plugins:
  tools: { use: ./tools.mjs }
  gateway:
    use: mcp-server
    config: { token: ${TOKEN} }
`

/** What a client saw: which replica answered each request, and the streams it opened. */
interface Seen {
  replicas: string[]
  /** `GET` (a 2025 session's stream) or `listen` (a 2026-07-28 subscriptions/listen), once open */
  streams: string[]
}
const seen = (): Seen => ({ replicas: [], streams: [] })

/** A fetch that notes the `yoke-replica` header of each answer and each SSE stream it opened. */
const noting = (into: Seen) => async (input: string | URL | Request, init?: RequestInit) => {
  const res = await fetch(input, init)
  const replica = res.headers.get('yoke-replica')
  if (replica) into.replicas.push(replica)
  if (res.ok && res.headers.get('content-type')?.includes('text/event-stream')) {
    if ((init?.method ?? 'GET') === 'GET') into.streams.push('GET')
    else if (String(init?.body).includes('"subscriptions/listen"')) into.streams.push('listen')
  }
  return res
}

/** A 2026-07-28 client (SDK v2); with `onTools`, it listens for list changes. */
async function modernClient(url: string, into = seen(), onTools?: () => void) {
  const c = new Client(
    { name: 'nginx', version: '1' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      ...(onTools && { listChanged: { tools: { onChanged: onTools, debounceMs: 0 } } }),
    },
  )
  await c.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: auth },
      fetch: noting(into),
    }),
  )
  return c
}

/** A 2025-era client (SDK v1): a session, its id sealed by whichever replica opened it. */
async function legacyClient(url: string, into = seen(), onTools?: () => void) {
  const c = new V1Client({ name: 'legacy', version: '1' })
  if (onTools) c.setNotificationHandler(ToolListChangedNotificationSchema, onTools)
  const transport = new V1Transport(new URL(url), {
    requestInit: { headers: auth },
    fetch: noting(into),
  })
  await c.connect(transport)
  assert.ok(transport.sessionId, 'a 2025 session')
  return c
}

type Caller = Pick<Client, 'callTool'> | Pick<V1Client, 'callTool'>
const textOf = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]!.text
const echo = async (c: Caller, text: string) =>
  assert.equal(textOf(await c.callTool({ name: 'echo', arguments: { text } })), `echo: ${text}`)

interface Replica extends Served {
  id: string
  /** HOST:PORT, as nginx's log names it */
  address: string
}

describe('three yoke serve replicas behind nginx', { skip }, () => {
  let project: Project
  const replicas: Replica[] = []
  let nginx: Nginx | undefined
  let url = ''
  const live = () =>
    replicas.filter((r) => r.child.exitCode === null && r.child.signalCode === null)
  before(async () => {
    project = tempProject({ 'tools.mjs': TOOLS, 'fresh.mjs': FRESH, 'yoke.config.yaml': CONFIG })
    // started side by side; every one that started is kept, so `after` stops it if another failed
    const started = await Promise.allSettled(
      ['r1', 'r2', 'r3'].map((id) =>
        serveHttp(project, 30_000, { YOKE_REPLICA_ID: id, YOKE_SESSION_KEY: SESSION_KEY }).then(
          (served) => replicas.push({ ...served, id, address: new URL(served.info.url).host }),
        ),
      ),
    )
    for (const s of started) if (s.status === 'rejected') throw s.reason
    const port = await freePort()
    nginx = await startNginx(project.path('nginx'), {
      listen: `127.0.0.1:${port}`,
      servers: replicas.map((r) => r.address),
    })
    url = `http://127.0.0.1:${port}/mcp`
  })
  after(async () => {
    await nginx?.stop()
    await Promise.all(replicas.map((r) => stop(r.child)))
    project?.cleanup()
  })

  it('serves 2026-07-28 calls from every replica, with no affinity', async () => {
    const saw = seen()
    const c = await modernClient(url, saw)
    for (let i = 0; i < 12; i++) await echo(c, `${i}`)
    const by = saw.replicas
    assert.deepEqual([...new Set(by)].sort(), ['r1', 'r2', 'r3'], `${by} ${nginx!.errors()}`)
    await c.close()
  })

  it('goes on with a 2025-era session on whichever replica round robin picks (shared secret)', async () => {
    const saw = seen()
    const c = await legacyClient(url, saw)
    for (let i = 0; i < 6; i++) await echo(c, `rr${i}`)
    assert.ok(new Set(saw.replicas).size >= 2, `one session, several replicas: ${saw.replicas}`)
    await c.close()
  })

  it("streams pass through: a hot reload's tools/list_changed reaches clients of both eras", async () => {
    let [legacyHeard, modernHeard] = [0, 0]
    const saw = seen()
    const legacy = await legacyClient(url, saw, () => void legacyHeard++)
    const modern = await modernClient(url, saw, () => void modernHeard++)
    await modern.listTools()
    // both streams open at their replicas (the answer's headers came through nginx)
    await until(
      () => `a GET stream and a subscriptions/listen stream: ${saw.streams}`,
      () => saw.streams.includes('GET') && saw.streams.includes('listen'),
    )
    project.writeAtomic('yoke.config.yaml', `${CONFIG}  fresh: { use: ./fresh.mjs }\n`)
    const listed = async (c: Pick<Client, 'listTools'> | Pick<V1Client, 'listTools'>) =>
      (await c.listTools()).tools.some((t) => t.name === 'fresh')
    await until(
      () => `both eras to hear tools/list_changed (legacy ${legacyHeard}, modern ${modernHeard})`,
      async () =>
        legacyHeard > 0 && modernHeard > 0 && (await listed(legacy)) && (await listed(modern)),
      { ms: 30_000, every: 100 },
    )
    await Promise.all([legacy.close(), modern.close()])
  })

  it('passes over a draining replica: its 503 to a POST is asked of another, and its own call finishes', async () => {
    const holder = await modernClient(url)
    const held = holder.callTool({ name: 'hold', arguments: {} })
    held.catch(() => {}) // awaited below; a failure before that must not go unhandled
    let draining: Replica | undefined
    await until('the hold call to run on a replica', () => {
      draining = replicas.find((r) => existsSync(project.path(`held-by-${r.id}`)))
      return draining !== undefined
    })
    const exited = new Promise((resolve) => draining!.child.once('exit', resolve))
    const logged = nginx!.log().length
    draining!.child.kill('SIGTERM')
    await until(`${draining!.id} to fail readiness`, async () => {
      const res = await fetch(`http://${draining!.address}/readyz`)
      return res.status === 503
    })
    const saw = seen()
    const [modern, legacy] = [await modernClient(url, saw), await legacyClient(url, saw)]
    for (let i = 0; i < 6; i++) {
      await echo(modern, `d${i}`) // no retry by the client: each call is answered the first time
      await echo(legacy, `dl${i}`)
    }
    const by = saw.replicas
    assert.ok(!by.includes(draining!.id), `nothing answered by ${draining!.id}: ${by}`)
    const askedTwice = nginx!
      .log()
      .slice(logged)
      .filter((l) => l.method === 'POST' && l.upstreams[0] === draining!.address)
    assert.ok(askedTwice.length > 0, 'round robin sent POSTs to the draining replica')
    for (const l of askedTwice) {
      assert.equal(l.statuses[0], '503', JSON.stringify(l))
      assert.ok(l.status >= 200 && l.status < 300, JSON.stringify(l))
      assert.notEqual(l.upstreams.at(-1), draining!.address, JSON.stringify(l))
    }
    project.write('release', '')
    assert.equal(textOf(await held), `held by ${draining!.id}`, 'the call in flight finished')
    assert.equal(await exited, 0, draining!.stderr())
    assert.match(draining!.stderr(), /drained in \d+ ms: 1 finished/)
    await Promise.all([holder.close(), modern.close(), legacy.close()])
  })

  it('a replica killed with SIGKILL under load costs no call its client retries', async () => {
    const [modern, legacy] = [await modernClient(url), await legacyClient(url)]
    let [failures, done] = [0, 0]
    const withRetry = async (c: Caller, text: string) => {
      for (let attempt = 0; ; attempt++) {
        try {
          await echo(c, text)
          done++
          return
        } catch (err) {
          failures++
          if (attempt === 5) throw err
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      }
    }
    const load = (async () => {
      for (let i = 0; i < 40; i++)
        await Promise.all([
          ...[0, 1, 2].map((k) => withRetry(modern, `k${i}.${k}`)),
          withRetry(legacy, `kl${i}`),
        ])
    })()
    await until('some calls to land', () => done >= 20)
    const [victim, survivor] = live()
    victim!.child.kill('SIGKILL')
    await load
    assert.equal(done, 160, `every call answered (failures retried: ${failures})`)
    // the dead replica is nginx's to pass over now: no client retries
    const after = seen()
    const c = await modernClient(url, after)
    for (let i = 0; i < 6; i++) await echo(c, `after${i}`)
    const by = after.replicas
    assert.deepEqual([...new Set(by)], [survivor!.id], 'only the replica left answers')
    await Promise.all([modern.close(), legacy.close(), c.close()])
  })
})

it("the README's nginx configuration is the one this test runs", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const shown = nginxSite({
    listen: '3920',
    servers: ['10.0.0.1:3920', '10.0.0.2:3920', '10.0.0.3:3920'],
  })
  assert.ok(readme.includes(shown), `README.md shows, in a nginx block:\n${shown}`)
})
