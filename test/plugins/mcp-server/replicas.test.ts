// Three `yoke serve` replicas behind a real HAProxy (Debian's), health-checked on /readyz:
// 2026-07-28 calls are served by any replica with no affinity (round robin, every replica answers,
// every call succeeds); 2025-era sessions work through HAProxy's stick table on Mcp-Session-Id, and,
// with the secret the replicas share, through plain round robin; a replica killed with SIGKILL under load
// costs no call a client retries; a drained replica (SIGTERM) leaves the pool through /readyz while
// its calls finish. Skips, saying so, where haproxy is not installed.
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { HAPROXY, NO_HAPROXY, startHaproxy } from '../../helpers/haproxy.ts'
import { freePort } from '../../helpers/mcp.ts'
import { tempProject, type Project } from '../../helpers/project.ts'
import { serveHttp, type Served } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'

const skip = HAPROXY ? false : NO_HAPROXY

const TOKEN = 'replicas-token-0123456789abcdef'
/** the secret the replicas share: 2025-era session ids are sealed, so any replica resumes one */
const SESSION_KEY = 'replicas-session-secret-0123456789abcdef'
const auth = { Authorization: `Bearer ${TOKEN}` }
const ECHO = `export default {
  name: 'echo',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({
      name: 'echo', concurrency: 'safe', risk: 'low',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      execute: ({ text }) => 'echo: ' + text,
    })
  },
}
`
const CONFIG = `preset: minimal
plugins:
  echo: { use: ./echo.mjs }
  gateway:
    use: mcp-server
    config: { token: ${TOKEN} }
`

/** A 2026-07-28 client that notes which replica answered each request. */
async function modernClient(url: string, seen: string[]) {
  const c = new Client(
    { name: 'replicas', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  )
  const fetchNoting = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await fetch(input, init)
    const replica = res.headers.get('yoke-replica')
    if (replica) seen.push(replica)
    return res
  }
  await c.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: auth },
      fetch: fetchNoting,
    }),
  )
  return c
}

const textOf = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]!.text

describe('three yoke serve replicas behind HAProxy', { skip }, () => {
  let project: Project
  const replicas: Served[] = []
  let lb: ChildProcess
  let lbStderr = ''
  let roundRobin = ''
  let sticky = ''
  before(async () => {
    project = tempProject({ 'echo.mjs': ECHO, 'yoke.config.yaml': CONFIG })
    for (const id of ['r1', 'r2', 'r3'])
      replicas.push(
        await serveHttp(project, 30_000, { YOKE_REPLICA_ID: id, YOKE_SESSION_KEY: SESSION_KEY }),
      )
    const servers = replicas.map((r, i) => ({
      name: `r${i + 1}`,
      port: Number(new URL(r.info.url).port),
    }))
    const [rr, st] = [await freePort(), await freePort()]
    lb = startHaproxy(join(project.dir, 'haproxy.cfg'), [
      { port: rr, servers },
      { port: st, servers, stickToSession: true },
    ])
    lb.stderr!.on('data', (d) => (lbStderr += d))
    roundRobin = `http://127.0.0.1:${rr}/mcp`
    sticky = `http://127.0.0.1:${st}/mcp`
    // every replica up in HAProxy's eyes: each answers /readyz through the balancer in turn
    const ready = new Set<string>()
    await until(
      'HAProxy to see all three replicas ready',
      async () => {
        try {
          const res = await fetch(`http://127.0.0.1:${rr}/readyz`)
          const body = (await res.json()) as { replica?: string }
          if (res.ok && body.replica) ready.add(body.replica)
        } catch {
          // not listening yet
        }
        return ready.size === 3
      },
      { ms: 20_000, every: 50 },
    )
  })
  after(() => {
    lb?.kill('SIGKILL')
    for (const r of replicas) if (r.child.exitCode === null) r.child.kill('SIGKILL')
    project?.cleanup()
  })

  it('serves 2026-07-28 calls from any replica, with no affinity', async () => {
    const seen: string[] = []
    const c = await modernClient(roundRobin, seen)
    for (let i = 0; i < 12; i++)
      assert.equal(
        textOf(await c.callTool({ name: 'echo', arguments: { text: `${i}` } })),
        `echo: ${i}`,
      )
    assert.deepEqual([...new Set(seen)].sort(), ['r1', 'r2', 'r3'], `${seen} ${lbStderr}`)
    await c.close()
  })

  it("keeps a 2025-era session on its replica through HAProxy's stick table on Mcp-Session-Id", async () => {
    const c = new V1Client({ name: 'legacy', version: '1' })
    const transport = new V1Transport(new URL(sticky), { requestInit: { headers: auth } })
    await c.connect(transport)
    assert.ok(transport.sessionId, 'a 2025 session')
    for (let i = 0; i < 6; i++) {
      const r = await c.callTool({ name: 'echo', arguments: { text: `s${i}` } })
      assert.equal(textOf(r), `echo: s${i}`)
    }
    await c.close()
  })

  it('with the shared secret, goes on with a 2025-era session on whichever replica round robin picks', async () => {
    const seen: string[] = []
    const c = new V1Client({ name: 'legacy-rr', version: '1' })
    const transport = new V1Transport(new URL(roundRobin), {
      requestInit: { headers: auth },
      fetch: async (input, init) => {
        const res = await fetch(input, init)
        const replica = res.headers.get('yoke-replica')
        if (replica) seen.push(replica)
        return res
      },
    })
    await c.connect(transport)
    for (let i = 0; i < 6; i++) {
      const r = await c.callTool({ name: 'echo', arguments: { text: `rr${i}` } })
      assert.equal(textOf(r), `echo: rr${i}`)
    }
    assert.ok(new Set(seen).size >= 2, `one session, several replicas: ${seen}`)
    await c.close()
  })

  it('a replica killed with SIGKILL under load costs no call its client retries', async () => {
    const seen: string[] = []
    const c = await modernClient(roundRobin, seen)
    let failures = 0
    let done = 0
    const callWithRetry = async (i: number) => {
      for (let attempt = 0; ; attempt++) {
        try {
          const r = await c.callTool({ name: 'echo', arguments: { text: `k${i}` } })
          assert.equal(textOf(r), `echo: k${i}`)
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
      for (let i = 0; i < 60; i++)
        await Promise.all([0, 1, 2, 3].map((k) => callWithRetry(i * 4 + k)))
    })()
    await until('some calls to land', () => done >= 20)
    replicas[2]!.child.kill('SIGKILL')
    await load
    assert.equal(done, 240, `every call answered once (failures retried: ${failures})`)
    await c.close()
  })

  it('a replica drained with SIGTERM leaves the pool through /readyz and exits 0', async () => {
    const drained = replicas[1]!
    const exited = new Promise<number | null>((resolve) => drained.child.once('exit', resolve))
    drained.child.kill('SIGTERM')
    assert.equal(await exited, 0, drained.stderr())
    assert.match(drained.stderr(), /drained in \d+ ms/)
    const seen: string[] = []
    const c = await modernClient(roundRobin, seen)
    for (let i = 0; i < 6; i++) await c.callTool({ name: 'echo', arguments: { text: `d${i}` } })
    assert.deepEqual([...new Set(seen)], ['r1'], 'only the replica left answers')
    await c.close()
  })
})
