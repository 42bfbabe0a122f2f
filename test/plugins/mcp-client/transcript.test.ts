// A server's protocol transcript (plugins/mcp-client/transcript.ts): requests paired with their
// answers by id and connection, both directions; secrets masked (keys that look secret, nested and
// in arrays; the entry's env and header values wherever they appear); large messages cut, saying
// so; the ring bounded. Then over real servers: the SDK's server over stdio (progress, a request
// from the server, an env secret), a server that writes garbage and never answers, and
// server-everything over Streamable HTTP with a bearer header.
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import {
  charsAtMost,
  ENTRIES,
  MASK,
  MESSAGE_CHARS,
  secretKey,
  SLOTS,
  Transcript,
  type TranscriptEntry,
} from '../../../plugins/mcp-client/transcript.ts'
import {
  everythingHttp,
  fixture,
  freePort,
  mcpHarness,
  MODERN,
  raw,
  stop,
  text,
  type McpHarness,
} from '../../helpers/mcp.ts'

const request = (id: number | string, method: string, params?: unknown) => ({
  jsonrpc: '2.0',
  id,
  method,
  ...(params !== undefined && { params }),
})
const answer = (id: number | string, result: unknown) => ({ jsonrpc: '2.0', id, result })
const note = (method: string, params?: unknown) => ({ jsonrpc: '2.0', method, params })

describe('the transcript', () => {
  it('pairs each request with its answer by id, per direction and per connection; notifications alone', () => {
    const t = new Transcript()
    const one = t.connection()
    one.sent(request(1, 'tools/call', { name: 'echo' }))
    one.received(note('notifications/progress', { progressToken: 7, progress: 1 }))
    one.received(request(1, 'roots/list')) // the server's id 1: its own id space
    one.sent(answer(1, { roots: [] })) // yoke's answer to it
    one.received(answer(1, { content: [{ type: 'text', text: 'hi' }] }))
    one.sent(request(2, 'ping')) // never answered on this connection
    one.sent(request(3, 'tools/call')) // cancelled, then answered late
    one.sent(note('notifications/cancelled', { requestId: 3 }))
    one.received(answer(3, { late: true }))
    one.sent(note('notifications/cancelled', { requestId: 3 })) // after its answer: nothing to mark
    const two = t.connection()
    two.sent(request(2, 'ping'))
    two.received(answer(2, {}))
    two.received(answer(99, {})) // an answer to nothing this transcript holds

    const entries = t.entries()
    assert.deepEqual(
      entries.map((e) => [e.from, e.method, e.id, e.response !== undefined]),
      [
        ['yoke', 'tools/call', 1, true],
        ['server', 'notifications/progress', undefined, false],
        ['server', 'roots/list', 1, true],
        ['yoke', 'ping', 2, false],
        ['yoke', 'tools/call', 3, true],
        ['yoke', 'notifications/cancelled', undefined, false],
        ['yoke', 'notifications/cancelled', undefined, false],
        ['yoke', 'ping', 2, true],
        ['yoke', '(answer)', 99, true],
      ],
    )
    const [call, progress, roots, unanswered] = entries as [TranscriptEntry, ...TranscriptEntry[]]
    assert.deepEqual(call.request, { name: 'echo' })
    assert.deepEqual(call.response, { content: [{ type: 'text', text: 'hi' }] })
    assert.ok(call.durationMs! >= 0 && typeof call.at === 'number')
    assert.deepEqual(progress!.request, { progressToken: 7, progress: 1 }, 'progressToken is kept')
    assert.deepEqual(roots!.response, { roots: [] })
    assert.equal(unanswered!.durationMs, undefined)
    assert.equal(unanswered!.cancelled, undefined)
    const late = entries.find((e) => e.id === 3)!
    assert.equal(late.cancelled, true)
    assert.deepEqual(late.response, { late: true }, 'a late answer still pairs')
  })

  it('masks values under keys that look secret, nested and in arrays, and the secrets it is given anywhere', () => {
    const t = new Transcript(() => ['hunter2-the-secret'])
    const c = t.connection()
    const params = {
      name: 'login',
      arguments: {
        apiKey: 'k-1',
        user: { password: 'p-1', profile: { Authorization: 'Bearer b-1', city: 'Oslo' } },
        list: [
          { access_token: 't-1' },
          { cookie: 'c-1', note: 'says hunter2-the-secret twice: hunter2-the-secret' },
        ],
        secrets: { a: 1, b: [2] },
        maxTokens: 500,
        usage: { inputTokens: 3, outputTokens: 4 },
      },
      _meta: { progressToken: 'p' },
    }
    c.sent(request(1, 'tools/call', params))
    c.received(
      answer(1, {
        content: [{ type: 'text', text: 'your key is hunter2-the-secret' }],
        client_secret: 'x',
      }),
    )
    const [e] = t.entries()
    const args = (e!.request as typeof params).arguments
    assert.equal(args.apiKey, MASK)
    assert.equal(args.user.password, MASK)
    assert.equal(args.user.profile.Authorization, MASK)
    assert.equal(args.user.profile.city, 'Oslo')
    assert.deepEqual(args.list, [
      { access_token: MASK },
      { cookie: MASK, note: `says ${MASK} twice: ${MASK}` },
    ])
    assert.equal(args.secrets, MASK, 'a whole object under a secret key')
    assert.equal(args.maxTokens, 500, 'a count of tokens is no secret')
    assert.deepEqual(args.usage, { inputTokens: 3, outputTokens: 4 })
    assert.deepEqual((e!.request as typeof params)._meta, { progressToken: 'p' })
    assert.deepEqual(e!.response, {
      content: [{ type: 'text', text: `your key is ${MASK}` }],
      client_secret: MASK,
    })
    assert.equal(e!.truncated, undefined)
    for (const leak of ['k-1', 'p-1', 'b-1', 't-1', 'c-1', 'hunter2'])
      assert.ok(!JSON.stringify(e).includes(leak), leak)
    // the message itself is kept as it was: masking is of what is shown
    assert.equal(params.arguments.apiKey, 'k-1')
  })

  it('tells secret keys from counts and progress tokens', () => {
    for (const key of [
      'token',
      'accessToken',
      'refresh_token',
      'API_KEY',
      'api-key',
      'apikey',
      'x-api-key',
      'Password',
      'passwd',
      'client_secret',
      'Cookie',
      'set-cookie',
      'authorization',
      'credentials',
      'privateKey',
      'sessionId',
    ])
      assert.ok(secretKey(key), key)
    for (const key of [
      'progressToken',
      'maxTokens',
      'max_tokens',
      'inputTokens',
      'name',
      'city',
      'cursor',
    ])
      assert.ok(!secretKey(key), key)
  })

  it('cuts a large message to MESSAGE_CHARS, saying so, and keeps a cut copy, not the message', () => {
    const t = new Transcript(() => ['needle-secret'])
    const c = t.connection()
    const huge = 'x'.repeat(1_000_000)
    const args = { text: `needle-secret${huge}` }
    const sent = request(1, 'tools/call', { name: 'write', arguments: args })
    c.sent(sent, JSON.stringify(sent).length) // the size as stdio tells it
    const items = Array.from({ length: 50_000 }, (_, i) => ({ i }))
    c.received(answer(1, { items })) // no size given (HTTP): measured, up to the cap
    args.text = 'changed after' // a cut copy does not see it
    const [e] = t.entries()
    assert.equal(e!.truncated, true)
    const shown = JSON.stringify(e)
    assert.ok(shown.length < 2 * MESSAGE_CHARS + 1000, `${shown.length} characters shown`)
    assert.match(shown, /more characters/)
    assert.match(shown, /more items/)
    assert.ok(!shown.includes('needle-secret') && shown.includes(MASK), 'masked before it was cut')
    assert.ok(!shown.includes('changed after'))
    assert.equal(e!.response && typeof e!.response, 'object')
  })

  it('cuts a long string without leaving a piece of a secret at the cut', () => {
    const secret = 'SECRETSECRET-0123456789'
    for (let at = MESSAGE_CHARS - 200; at < MESSAGE_CHARS + 50; at += 7) {
      const t = new Transcript(() => [secret, 'abcdef'])
      const text = `${'abcdef '.repeat(20)}${'y'.repeat(at)}${secret}${'z'.repeat(10_000)}`
      t.connection().received(note('notifications/message', { data: text }))
      const shown = JSON.stringify(t.entries())
      for (let n = 4; n <= secret.length; n++)
        assert.ok(!shown.includes(secret.slice(0, n)), `no piece of it (at ${at}, ${n})`)
      assert.ok(!shown.includes('abcdef'))
    }
  })

  it('measures a size without walking past the cap, and a deep value without recursing into it', () => {
    const small = { a: 'bc', d: [1, null, true] }
    const estimate = charsAtMost(small) - JSON.stringify(small).length
    assert.ok(estimate >= 0 && estimate <= 8, `an estimate of the JSON length (off by ${estimate})`)
    assert.equal(charsAtMost(Array.from({ length: 1e6 }, () => 1)), MESSAGE_CHARS + 1)
    let deep: unknown = 'bottom'
    for (let i = 0; i < 100_000; i++) deep = [deep]
    assert.equal(charsAtMost(deep), MESSAGE_CHARS + 1)
    const t = new Transcript()
    t.connection().received(note('notifications/message', { data: deep }))
    const [e] = t.entries()
    assert.equal(e!.truncated, true)
    assert.match(JSON.stringify(e), /nested deeper, not shown/)
  })

  it('keeps the last SLOTS messages and gives the last ENTRIES exchanges', () => {
    const t = new Transcript()
    const c = t.connection()
    for (let i = 0; i < 1000; i++) {
      c.sent(request(i, 'tools/call', { name: 'echo', arguments: { i } }))
      c.received(answer(i, { i }))
    }
    c.sent(request(1000, 'tools/call')) // the last one: unanswered
    const entries = t.entries()
    assert.equal(entries.length, ENTRIES)
    assert.deepEqual(entries.at(-1)!.id, 1000)
    assert.equal(entries.at(-1)!.response, undefined)
    assert.deepEqual(entries.at(-2)!.response, { i: 999 })
    assert.ok(entries.every((e) => e.method === 'tools/call'))
    assert.ok(SLOTS >= 2 * ENTRIES)
  })

  it('tells its watchers of each message until they leave', () => {
    const t = new Transcript()
    const c = t.connection()
    let told = 0
    const leave = t.watch(() => told++)
    c.sent(request(1, 'ping'))
    c.received(answer(1, {}))
    leave()
    leave()
    c.sent(request(2, 'ping'))
    assert.equal(told, 2)
  })

  it('shows a line that is not JSON-RPC as one, cut', () => {
    const t = new Transcript()
    t.connection().junk(`oops ${'z'.repeat(10_000)}`)
    const [e] = t.entries()
    assert.equal(e!.method, '(not JSON-RPC)')
    assert.equal(e!.from, 'server')
    assert.match(String(e!.request), /^oops z+… \(\d+ more characters\)$/)
    assert.equal(e!.truncated, true)
  })
})

type WithTranscript = { transcript(): TranscriptEntry[] }
const transcriptOf = (h: McpHarness, name: string) =>
  (h.hub.get(name) as unknown as WithTranscript).transcript()
const calls = (entries: TranscriptEntry[], tool: string) =>
  entries.filter(
    (e) => e.method === 'tools/call' && (e.request as { name?: string })?.name === tool,
  )

describe('the transcript over a real stdio server (the SDK)', () => {
  let h: McpHarness
  before(async () => {
    h = await mcpHarness()
  })
  after(() => h.close())

  it('pairs the handshake, a call, its progress, and a request from the server; the env stays out', async () => {
    const secret = 'sk-live-0123456789abcdef'
    await h.add(
      'fx',
      fixture('fx', 'normal', { env: { MY_KEY: secret, DEBUG: '1' }, roots: ['.'] }),
    )
    assert.equal(h.status('fx').state, 'connected')
    assert.equal(text(await h.rt.call('mcp__fx__echo', { text: 'hello there' })), 'hello there')
    await h.rt.call('mcp__fx__sleep', { ms: 60 }, { onProgress: () => {} })
    const leaked = await h.rt.call('mcp__fx__env', { name: 'MY_KEY' })
    assert.equal(text(leaked), secret, 'the server did send it')
    const asked = await h.rt.call('mcp__fx__ask-client', { method: 'roots/list' })
    assert.match(text(asked), /roots/)

    const entries = transcriptOf(h, 'fx')
    const methods = entries.map((e) => e.method)
    assert.ok(methods.includes('initialize') || methods.includes('server/discover'), methods.join())
    assert.ok(methods.includes('tools/list'))
    const [echo] = calls(entries, 'echo')
    assert.ok(echo, methods.join())
    assert.equal(echo.from, 'yoke')
    assert.deepEqual((echo.request as { arguments: unknown }).arguments, { text: 'hello there' })
    assert.deepEqual(echo.response, { content: [{ type: 'text', text: 'hello there' }] })
    assert.ok(echo.durationMs! > 0)
    assert.ok(
      entries.some((e) => e.method === 'notifications/progress' && e.from === 'server'),
      "the server's progress is there",
    )
    const roots = entries.find((e) => e.method === 'roots/list')
    assert.equal(roots?.from, 'server')
    assert.ok(
      Array.isArray((roots?.response as { roots?: unknown[] })?.roots),
      "yoke's answer paired",
    )
    const shown = JSON.stringify(entries)
    assert.ok(!shown.includes(secret), 'the env value never appears')
    assert.equal((calls(entries, 'env')[0]!.response as any).content[0].text, MASK)
  })

  it('a server that writes garbage and never answers: the call shows no answer, the line shows as it was', async () => {
    await h.add('junk', raw('junk', 'normal', { reconnect: { initialDelayMs: 50 } }))
    const r = await h.rt.call('mcp__junk__garble', {})
    assert.equal(r.ok, false)
    const entries = transcriptOf(h, 'junk')
    const [garble] = calls(entries, 'garble')
    assert.ok(garble, entries.map((e) => e.method).join())
    assert.equal(garble.response, undefined)
    assert.equal(garble.error, undefined)
    assert.ok(entries.some((e) => e.method === '(not JSON-RPC)' && e.from === 'server'))
    await h.until('it reconnects', () => h.status('junk').state === 'connected')
    assert.equal(text(await h.rt.call('mcp__junk__echo', { text: 'back' })), 'back')
    const after = transcriptOf(h, 'junk')
    assert.equal(
      calls(after, 'echo').at(-1)?.response !== undefined,
      true,
      "the next connection's call is paired",
    )
    assert.ok(after.length <= ENTRIES)
  })

  it('a call the server does not answer in time: no answer, and the cancellation yoke sent for it', async () => {
    await h.add('slow', fixture('slow', 'normal', { callMs: 200, maxCallMs: 300 }))
    const r = await h.rt.call('mcp__slow__sleep', { ms: 3000 })
    assert.equal(r.error?.code, 'TIMEOUT')
    // the runtime answers at its deadline; the SDK sends the cancellation as the call unwinds
    await h.until('the cancellation is sent', () =>
      transcriptOf(h, 'slow').some((e) => e.method === 'notifications/cancelled'),
    )
    const entries = transcriptOf(h, 'slow')
    const [sleep] = calls(entries, 'sleep')
    assert.ok(sleep && sleep.id !== undefined, entries.map((e) => e.method).join())
    assert.equal(sleep.response, undefined)
    const cancelled = entries.find((e) => e.method === 'notifications/cancelled')
    assert.equal(cancelled?.from, 'yoke')
    assert.equal((cancelled?.request as { requestId?: unknown }).requestId, sleep.id)
    assert.equal(sleep.cancelled, true, 'the call says it was cancelled')
  })

  it('a big answer is cut in the transcript, not in the call', async () => {
    const r = await h.rt.call('mcp__fx__big', { bytes: 6000 })
    assert.equal(text(r).length, 6000)
    const [big] = calls(transcriptOf(h, 'fx'), 'big')
    assert.equal(big!.truncated, true)
    assert.ok(JSON.stringify(big).length < 2 * MESSAGE_CHARS)
  })

  it("the handle tells a watcher of each message (the console's push), until it leaves", async () => {
    const handle = h.hub.get('fx') as unknown as { onTranscript(l: () => void): () => void }
    let told = 0
    const leave = handle.onTranscript(() => told++)
    await h.rt.call('mcp__fx__echo', { text: 'watched' })
    leave()
    assert.equal(told, 2, 'the request and its answer')
    await h.rt.call('mcp__fx__echo', { text: 'unwatched' })
    assert.equal(told, 2)
  })

  it('on 2026-07-28: the discovery, a call, and a task the wire drives with requests of its own', async () => {
    await h.add('mod', { serverName: 'mod', command: process.execPath, args: [MODERN] })
    assert.equal(h.status('mod').protocol?.era, 'modern')
    assert.equal(text(await h.rt.call('mcp__mod__echo', { text: 'new era' })), 'echo: new era')
    const research = await h.rt.call('mcp__mod__research', { topic: 'x', steps: 2, ms: 30 })
    assert.match(text(research), /research on x: done after 2 steps/)
    const entries = transcriptOf(h, 'mod')
    assert.equal(entries.find((e) => e.method === 'server/discover')?.response !== undefined, true)
    assert.ok(calls(entries, 'echo')[0]?.response)
    const [task] = calls(entries, 'research')
    assert.equal(
      (task?.response as { resultType?: string })?.resultType,
      'task',
      'as the server answered',
    )
    const polls = entries.filter((e) => e.method === 'tasks/get')
    assert.ok(polls.length > 0, entries.map((e) => e.method).join())
    assert.ok(polls.every((e) => typeof e.id === 'string' && e.response !== undefined))
  })

  it('transcript: false keeps none', async () => {
    await h.add('quiet', fixture('quiet', 'normal', { transcript: false }))
    assert.equal(text(await h.rt.call('mcp__quiet__echo', { text: 'x' })), 'x')
    assert.deepEqual(transcriptOf(h, 'quiet'), [])
  })
})

describe('the transcript over Streamable HTTP (server-everything)', () => {
  let h: McpHarness
  let port: number
  let server: ChildProcess
  before(async () => {
    h = await mcpHarness()
    port = await freePort()
    server = await everythingHttp('streamableHttp', port)
  })
  after(async () => {
    await h.close()
    await stop(server)
  })

  it('pairs the call; the bearer token (a header, not a message) never appears, not even echoed', async () => {
    const token = 'tok-0123456789-bearer'
    await h.add('web', {
      serverName: 'web',
      url: `http://127.0.0.1:${port}/mcp`,
      headers: { Authorization: `Bearer ${token}`, 'X-Team': 'blue-team-header' },
    })
    assert.equal(h.status('web').state, 'connected', h.status('web').detail)
    const echoed = await h.rt.call('mcp__web__echo', {
      message: `token ${token} and blue-team-header`,
    })
    assert.match(text(echoed), new RegExp(token))
    const entries = transcriptOf(h, 'web')
    const [echo] = calls(entries, 'echo')
    assert.ok(echo, entries.map((e) => e.method).join())
    assert.ok(echo.durationMs! > 0)
    assert.deepEqual(echo.response, {
      content: [{ type: 'text', text: `Echo: token ${MASK} and ${MASK}` }],
    })
    const shown = JSON.stringify(entries)
    assert.ok(!shown.includes(token) && !shown.includes('blue-team-header'))
  })
})
