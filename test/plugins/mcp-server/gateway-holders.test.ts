// Who a stateless (2026-07-28) request is decides where it runs: each OAuth token holder in a scope
// of its own under the view's, the static token in the view's (plugins/mcp-server/stateless.ts).
// A real gateway, an issuer of our own on loopback whose key signs tokens for two subjects (jose),
// and v2 SDK clients; then the holder table itself: least recently used out, its scope with it.
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import mcpServer, { type McpServerApi } from '../../../plugins/mcp-server/index.ts'
import { STATIC_HOLDER } from '../../../plugins/mcp-server/oauth/access.ts'
import { StatelessHandlers } from '../../../plugins/mcp-server/stateless.ts'
import type { View } from '../../../plugins/mcp-server/views.ts'
import { spawnActive } from '../../helpers/kernel.ts'
import { mcpHarness, type McpHarness } from '../../helpers/mcp.ts'
import { tempProject, type Project } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const PIN = { versionNegotiation: { mode: { pin: '2026-07-28' as const } } }
const STATIC = 'static-token-0123456789abcdef'

/** the `wait` calls in flight: each resolves when the test lets it go */
const waiting: Array<() => void> = []

/** `whoami` answers the scope and the caller the call ran as; `wait`, its scope once let go. */
const whoami = {
  name: 'whoami',
  inject: ['runtime'],
  apply(ctx: any) {
    ctx.runtime.register({
      name: 'whoami',
      risk: 'low',
      concurrency: 'safe', // beside a `wait` in flight
      execute: (_args: unknown, c: any) =>
        JSON.stringify({ scope: c.call.scope, caller: c.call.caller }),
    })
    ctx.runtime.register({
      name: 'wait',
      risk: 'low',
      concurrency: 'safe',
      execute: async (_args: unknown, c: any) => {
        await new Promise<void>((resolve) => waiting.push(resolve))
        return c.call.scope
      },
    })
  },
}

describe('stateless requests run per token holder', () => {
  let project: Project
  let h: McpHarness
  let issuerServer: Server
  let issuer: string
  let privateKey: CryptoKey
  let url: string
  const clients: Client[] = []

  before(async () => {
    const pair = await generateKeyPair('ES256')
    privateKey = pair.privateKey
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }
    issuerServer = createServer((req, res) => {
      res.writeHead(req.url === '/jwks' || req.url?.startsWith('/.well-known/') ? 200 : 404, {
        'content-type': 'application/json',
      })
      if (req.url === '/jwks') return res.end(JSON.stringify({ keys: [jwk] }))
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }))
    })
    await new Promise<void>((resolve) => issuerServer.listen(0, '127.0.0.1', resolve))
    issuer = `http://127.0.0.1:${(issuerServer.address() as AddressInfo).port}`

    project = tempProject()
    h = await mcpHarness(project.dir)
    for (const [plugin, config, key] of [
      [whoami, {}, 'tools'],
      [mcpServer, { token: STATIC, oauth: { issuer }, maxHolders: 1 }, 'gateway'],
    ] as const) {
      await spawnActive(h.kernel, plugin, config, key)
    }
    url = (h.kernel.services.get('mcpServer')!.value as McpServerApi).url!
  })
  after(async () => {
    for (const c of clients) await c.close().catch(() => {})
    await h?.close()
    await new Promise<void>((resolve) => issuerServer?.close(() => resolve()))
    project?.cleanup()
  })

  const tokenOf = (sub: string) =>
    new SignJWT({ scope: 'mcp:all', iss: issuer, aud: url, sub })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey)
  /** Where a 2026-07-28 call with this bearer token ran: its scope and caller. */
  const whereRuns = async (bearer: string) => {
    const client = new Client({ name: 'holder', version: '1' }, PIN)
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
      }),
    )
    clients.push(client)
    const result = await client.callTool({ name: 'whoami', arguments: {} })
    const [content] = result.content as Array<{ text: string }>
    return JSON.parse(content!.text) as { scope: string; caller: string }
  }

  it("two OAuth subjects run in scopes of their own under the view's; one subject keeps its scope", async () => {
    const alice = await whereRuns(await tokenOf('alice'))
    const bob = await whereRuns(await tokenOf('bob'))
    const aliceAgain = await whereRuns(await tokenOf('alice')) // a new token, the same holder
    assert.match(alice.scope, /^mcp-server:gateway:default\/holder-[0-9a-f]{16}$/)
    assert.match(bob.scope, /^mcp-server:gateway:default\/holder-[0-9a-f]{16}$/)
    assert.notEqual(
      alice.scope,
      bob.scope,
      "one user's grants and dynamic plugins are not another's",
    )
    assert.equal(aliceAgain.scope, alice.scope)
    assert.match(alice.caller, /^mcp:default:holder-[0-9a-f]{16}#\d+$/)
    assert.ok(
      !alice.scope.includes('alice') && !alice.caller.includes('alice'),
      'no claim in a name',
    )
  })

  it('a holder with a call in flight is never let go; an idle one is, and comes back with its scope', async () => {
    // maxHolders: 1 here
    const client = async (sub: string) => {
      const c = new Client({ name: sub, version: '1' }, PIN)
      await c.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { Authorization: `Bearer ${await tokenOf(sub)}` } },
        }),
      )
      clients.push(c)
      return c
    }
    const carol = await client('carol')
    const before = waiting.length
    const call = carol.callTool({ name: 'wait', arguments: {} })
    await until('the call to be in flight', () => waiting.length > before)
    const dave = await whereRuns(await tokenOf('dave')) // past the limit while carol is busy
    waiting.splice(before, 1)[0]!()
    const [content] = (await call).content as Array<{ text: string }>
    assert.match(content!.text, /holder-/, 'the call finished in its own scope')
    assert.notEqual(content!.text, dave.scope)
    // carol is idle now: the next holder past the limit lets go of her, and she comes back
    await whereRuns(await tokenOf('erin'))
    const again = await carol.callTool({ name: 'whoami', arguments: {} })
    const [text] = again.content as Array<{ text: string }>
    assert.equal(JSON.parse(text!.text).scope, content!.text, 'the same scope key again')
  })

  it("the static token runs in the view's scope: one token does not tell its holders apart", async () => {
    const shared = await whereRuns(STATIC)
    assert.equal(shared.scope, 'mcp-server:gateway:default')
    assert.match(shared.caller, /^mcp:default:http#\d+$/)
  })
})

describe('the holder table', () => {
  /** A view whose session scopes are recorded, created and disposed. */
  const fakeView = () => {
    const live = new Set<string>()
    const view = {
      name: 'v',
      scope: { key: 'view' },
      sessionScope(tag: string) {
        const key = `view/${tag}`
        assert.ok(!live.has(key), `${key} exists`)
        live.add(key)
        return { key, dispose: async () => void live.delete(key) }
      },
    }
    return { view: view as unknown as View, live }
  }
  const handlers = (closed: string[]) =>
    new StatelessHandlers(
      (_view, served) =>
        ({
          close: async () => void closed.push(served.callerBase),
          notify: {},
        }) as any,
      2,
    )

  it('keeps the holders used most recently; one that comes back at once gets its scope again', async () => {
    const { view, live } = fakeView()
    const closed: string[] = []
    const table = handlers(closed)
    table.of(view, 'a')
    table.of(view, 'b')
    table.of(view, 'a') // the same holder: no new scope (the fake view would throw)
    table.of(view, 'c') // b is the least recently used
    assert.equal(live.size, 2, 'its scope went at once')
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(closed.length, 1)
    assert.equal(table.handlersOf(view).length, 2)
    assert.equal(live.size, 2, 'the one that went took its scope with it')
    table.of(view, 'b') // back at once: a scope of the same key again (a, the oldest now, goes)
    assert.equal(live.size, 2)
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(closed.length, 2, 'its handler closes after its scope went')
  })

  it("the static token's handler uses the view's scope, creates none and is never let go; close ends them all", async () => {
    const { view, live } = fakeView()
    const closed: string[] = []
    const table = handlers(closed)
    table.of(view, STATIC_HOLDER)
    table.of(view, 'a')
    table.of(view, 'b') // past the limit of 2 with the static one: it is not among the holders
    assert.equal(live.size, 2)
    assert.equal(closed.length, 0)
    table.of(view, 'c')
    assert.equal(live.size, 2)
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(closed.length, 1, 'a holder went, not the static token')
    assert.ok(!closed.includes('mcp:v:http'))
    await table.close()
    assert.equal(closed.length, 4)
    assert.ok(closed.includes('mcp:v:http'), closed.join(', '))
    assert.equal(live.size, 0)
    assert.equal(table.handlersOf(view).length, 0)
  })
})
