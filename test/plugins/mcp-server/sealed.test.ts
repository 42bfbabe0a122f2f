// 2025-era sessions any replica can resume: with a secret the replicas share, a session id is the
// session's opening facts sealed with AES-256-GCM. The seal itself (round trip, tampering, another
// secret, age, garbage); then two gateways sharing the secret, as two replicas: a v1 client's
// session opened on one goes on on the other with no new handshake, another view or caller cannot
// use it, and without the secret (or with a short one, said in a warning) ids stay random.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import mcpServer, { type McpServerApi } from '../../../plugins/mcp-server/index.ts'
import {
  SEALED_MAX_AGE_MS,
  SessionSeal,
  type SessionFacts,
} from '../../../plugins/mcp-server/sealed.ts'
import { toPlugin, validateConfig, type Plugin } from '../../../src/index.ts'
import { mcpHarness, type McpHarness } from '../../helpers/mcp.ts'

const SECRET = 'a-secret-every-replica-shares-0123456789'
const TOKEN = 'sealed-token-0123456789abcdef'
const auth = { Authorization: `Bearer ${TOKEN}` }
const facts = (over: Partial<SessionFacts> = {}): SessionFacts => ({
  v: 1,
  view: 'default',
  who: 'token',
  init: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'c', version: '1' },
  },
  iat: Date.now(),
  ...over,
})

describe('the session seal', () => {
  const seal = new SessionSeal(SECRET)

  it('opens what it sealed, and nothing else', () => {
    const id = seal.seal(facts())!
    assert.match(id, /^[A-Za-z0-9_-]+$/, 'visible ASCII, as Mcp-Session-Id must be')
    assert.deepEqual(seal.open(id)?.view, 'default')
    assert.notEqual(seal.seal(facts()), id, 'a fresh IV each time')
    const flipped = `${id.slice(0, 30)}${id[30] === 'A' ? 'B' : 'A'}${id.slice(31)}`
    assert.equal(seal.open(flipped), undefined, 'tampered')
    assert.equal(new SessionSeal(`${SECRET}-other`).open(id), undefined, 'another secret')
    for (const junk of ['', 'abc', '0'.repeat(5000), '%%%%'.repeat(20), crypto.randomUUID()])
      assert.equal(seal.open(junk), undefined, junk.slice(0, 20))
  })

  it('refuses an id older than its maximum age, or from the future', () => {
    const old = seal.seal(facts({ iat: Date.now() - SEALED_MAX_AGE_MS - 1000 }))!
    assert.equal(seal.open(old), undefined)
    const ahead = seal.seal(facts({ iat: Date.now() + 10 * 60_000 }))!
    assert.equal(seal.open(ahead), undefined)
  })

  it('does not seal facts past its size cap (the id stays random then)', () => {
    const huge = facts({ init: { capabilities: { x: 'y'.repeat(10_000) } } })
    assert.equal(seal.seal(huge), undefined)
  })
})

async function replica(h: McpHarness, config: Record<string, unknown> = {}) {
  const plugin = toPlugin(mcpServer) as Plugin
  const checked = validateConfig(plugin, { token: TOKEN, ...config })
  assert.ok('value' in checked, JSON.stringify(checked))
  const fiber = h.kernel.spawn(plugin, checked.value, { key: 'gateway' })
  await h.kernel.whenSettled(fiber, 20_000)
  assert.equal(fiber.state, 'active', String(fiber.error))
  return h.kernel.services.get('mcpServer')!.value as McpServerApi
}

describe('two replicas sharing the secret', () => {
  let a: McpHarness
  let b: McpHarness
  let urlA = ''
  let urlB = ''
  const saved = process.env.YOKE_SESSION_KEY
  before(async () => {
    process.env.YOKE_SESSION_KEY = SECRET
    a = await mcpHarness()
    b = await mcpHarness()
    const config = { views: { narrow: { allow: ['mcp_*'] } } }
    urlA = (await replica(a, config)).url!
    urlB = (await replica(b, config)).url!
  })
  after(async () => {
    if (saved === undefined) delete process.env.YOKE_SESSION_KEY
    else process.env.YOKE_SESSION_KEY = saved
    await Promise.all([a.close(), b.close()])
  })

  it('goes on with a session another replica opened, with no new handshake', async () => {
    const first = new V1Client({ name: 'legacy', version: '1' })
    const onA = new V1Transport(new URL(urlA), { requestInit: { headers: auth } })
    await first.connect(onA)
    const sid = onA.sessionId!
    assert.ok(sid.length > 60, 'a sealed id')
    const toolsOnA = (await first.listTools()).tools.map((t) => t.name)
    // the same session, now sent to B (its replica "died"): the v1 transport resumes by id
    const second = new V1Client({ name: 'legacy', version: '1' })
    const onB = new V1Transport(new URL(urlB), { requestInit: { headers: auth }, sessionId: sid })
    await second.connect(onB)
    assert.equal(onB.sessionId, sid)
    assert.deepEqual(
      (await second.listTools()).tools.map((t) => t.name),
      toolsOnA,
    )
    await second.close()
    await first.close()
  })

  it('is refused on another view, or with another caller, as a session not found', async () => {
    const c = new V1Client({ name: 'legacy', version: '1' })
    const t = new V1Transport(new URL(urlA), { requestInit: { headers: auth } })
    await c.connect(t)
    const sid = t.sessionId!
    const post = (url: string, headers: Record<string, string>) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': sid,
          'mcp-protocol-version': '2025-11-25',
          ...headers,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
    assert.equal((await post(`${urlB}/narrow`, auth)).status, 404, 'another view')
    assert.equal((await post(urlB, { Authorization: 'Bearer wrong-token-0123456789' })).status, 401)
    const tampered = `${sid.slice(0, -2)}${sid.endsWith('AA') ? 'BB' : 'AA'}`
    const res = await fetch(urlB, {
      method: 'POST',
      headers: {
        ...auth,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': tampered,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
    assert.equal(res.status, 404)
    assert.match(await res.text(), /Session not found/)
    await c.close()
  })
})

describe('without a long enough secret', () => {
  it('keeps ids random and says why a short secret is not used', async () => {
    const saved = process.env.YOKE_SESSION_KEY
    process.env.YOKE_SESSION_KEY = 'short'
    const h = await mcpHarness()
    try {
      const url = (await replica(h)).url!
      const c = new V1Client({ name: 'legacy', version: '1' })
      const t = new V1Transport(new URL(url), { requestInit: { headers: auth } })
      await c.connect(t)
      assert.match(t.sessionId!, /^[0-9a-f-]{36}$/, 'a random UUID')
      assert.ok(
        h.logs.some((r) => /YOKE_SESSION_KEY is shorter than 32 characters/.test(r.message)),
        h.logs.map((r) => r.message).join('\n'),
      )
      await c.close()
    } finally {
      if (saved === undefined) delete process.env.YOKE_SESSION_KEY
      else process.env.YOKE_SESSION_KEY = saved
      await h.close()
    }
  })
})
