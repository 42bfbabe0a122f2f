// mcp-server: yoke as an MCP server and gateway, driven by the real v1 SDK client (the 2025 era:
// sessions, elicitation requests) over Streamable HTTP, with server-everything (and the fixture
// server) upstream through mcp-client: content, progress and cancellation both ways, policy and
// elicitation, views, tool and skill changes, access control and hostile input. Both eras side by
// side, and the 2026-07-28 revision's own ways, are in gateway-matrix.test.ts.
import assert from 'node:assert/strict'
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createServer, request } from 'node:http'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  ElicitRequestSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js'
import mcpServer, { type McpServerApi } from '../../../plugins/mcp-server/index.ts'
import { clientCaused } from '../../../plugins/mcp-server/server.ts'
import { resolveToken } from '../../../plugins/mcp-server/oauth/token.ts'
import { uriRefusal } from '../../../plugins/mcp-server/views.ts'
import type { ToolRuntime } from '../../../src/index.ts'
import policyPlugin from '../../../plugins/policy/index.ts'
import promptPlugin from '../../../plugins/prompt/index.ts'
import skillsPlugin from '../../../plugins/skills/index.ts'
import {
  toPlugin,
  validateConfig,
  type Fiber,
  type Plugin,
  type ToolResult,
} from '../../../src/index.ts'
import {
  EVERYTHING,
  everything,
  fixture,
  mcpHarness,
  MODERN,
  type McpHarness,
} from '../../helpers/mcp.ts'

const TEE = fileURLToPath(new URL('../../fixtures/mcp/tee.mjs', import.meta.url))
import { HUB_TOOLS } from '../../../plugins/mcp/api.ts'
import { tempProject, type Project } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const TOKEN = 'test-token-0123456789abcdef'
const auth = { Authorization: `Bearer ${TOKEN}` }
const textOf = (r: unknown) =>
  ((r as CallToolResult).content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('\n')

async function spawn(h: McpHarness, plugin: unknown, config: unknown, key: string): Promise<Fiber> {
  const p = toPlugin(plugin) as Plugin
  const checked = validateConfig(p, config)
  assert.ok('value' in checked, JSON.stringify(checked))
  const fiber = h.kernel.spawn(p, checked.value, { key })
  await h.kernel.whenSettled(fiber, 20_000)
  assert.equal(fiber.state, 'active', String(fiber.error?.stack ?? fiber.error))
  return fiber
}

const serviceOf = (h: McpHarness) => h.kernel.services.get('mcpServer')!.value as McpServerApi

type ClientOptions = {
  token?: string
  elicit?: (message: string) => Record<string, unknown>
  onToolsChanged?: () => void
  onPromptsChanged?: () => void
}

async function connect(
  url: string,
  options: ClientOptions = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client(
    { name: 'test-client', version: '1' },
    { capabilities: options.elicit ? { elicitation: {} } : {} },
  )
  if (options.elicit)
    client.setRequestHandler(
      ElicitRequestSchema,
      (req) => options.elicit!(req.params.message) as never,
    )
  if (options.onToolsChanged)
    client.setNotificationHandler(ToolListChangedNotificationSchema, options.onToolsChanged)
  if (options.onPromptsChanged)
    client.setNotificationHandler(PromptListChangedNotificationSchema, options.onPromptsChanged)
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${options.token ?? TOKEN}` } },
  })
  await client.connect(transport)
  return { client, transport }
}

/** A raw HTTP request (node:http, so headers of any size and bodies of any kind can be sent). */
function raw(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        agent: false,
        method: init.method ?? 'POST',
        headers: {
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
          ...init.headers,
        },
        timeout: 10_000,
      },
      (res) => {
        let body = ''
        res.on('data', (d) => (body += d))
        res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }))
      },
    )
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url}`)))
    req.on('error', reject)
    req.end(init.body)
  })
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  },
})

describe('mcp-server: a gateway to server-everything over Streamable HTTP', () => {
  let h: McpHarness
  let project: Project
  let url: string
  const results: ToolResult[] = []
  const clients: Client[] = []
  before(async () => {
    project = tempProject()
    h = await mcpHarness(project.dir)
    h.rt.hooks.result.tap('test', (_call, result) => void results.push(result))
    // through a transparent pipe that records what reaches server-everything (its cancellations)
    await h.add(
      'everything',
      everything('everything', {
        args: [TEE, EVERYTHING, 'stdio'],
        env: { TEE_FILE: project.path('to-everything.jsonl') },
      }),
    )
    await h.add('fx', fixture('fx', 'normal', { env: { MARK_FILE: project.path('marks.txt') } }))
    await spawn(
      h,
      policyPlugin,
      { deny: ['mcp__everything__get-sum'], ask: ['mcp__everything__get-env'] },
      'policy',
    )
    await spawn(
      h,
      mcpServer,
      {
        token: TOKEN,
        views: { safe: { allow: ['mcp__everything__*', 'late_*'], deny: ['*echo*'] } },
      },
      'gateway',
    )
    url = serviceOf(h).url!
  })
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})))
    await h.close()
    project.cleanup()
  })
  const open = async (target = url, options?: ClientOptions) => {
    const { client } = await connect(target, options)
    clients.push(client)
    return client
  }

  it('lists the upstream tools with their schemas untouched and calls them through the pipeline', async () => {
    const client = await open()
    const tools = (await client.listTools()).tools
    const mine = tools.find((t) => t.name === 'mcp__everything__get-structured-content')!
    const upstream = h.rt.list().find((t) => t.name === 'mcp__everything__get-structured-content')!
    assert.deepEqual(mine.inputSchema, upstream.inputSchema)
    assert.deepEqual(mine.outputSchema, upstream.outputSchema)
    assert.ok(
      !tools.some((t) => t.name === 'mcp__everything__get-sum'),
      'a plain policy deny hides the tool',
    )
    const echo = await client.callTool({
      name: 'mcp__everything__echo',
      arguments: { message: 'through yoke' },
    })
    assert.equal(textOf(echo), 'Echo: through yoke')
    assert.ok(
      results.some((r) => r.tool === 'mcp__everything__echo' && r.ok),
      'the call went through the runtime',
    )
    const structured = await client.callTool({
      name: 'mcp__everything__get-structured-content',
      arguments: { location: 'Chicago' },
    })
    assert.equal(
      typeof (structured.structuredContent as { temperature: number }).temperature,
      'number',
    )
    const invalid = await client.callTool({
      name: 'mcp__everything__echo',
      arguments: { message: 42 },
    })
    assert.ok(invalid.isError)
    assert.match(textOf(invalid), /INVALID_ARGS/)
  })

  it('passes images through as images (no text placeholder)', async () => {
    const client = await open()
    const image = (await client.callTool({
      name: 'mcp__everything__get-tiny-image',
      arguments: {},
    })) as CallToolResult
    const part = image.content.find((c) => c.type === 'image')
    assert.ok(
      part &&
        part.type === 'image' &&
        part.mimeType === 'image/png' &&
        part.data.startsWith('iVBOR'),
      JSON.stringify(image.content).slice(0, 300),
    )
    assert.ok(
      !textOf(image).includes('[image image/png'),
      'the placeholder for text-only readers is dropped',
    )
  })

  it('relays progress from trigger-long-running-operation to the client', async () => {
    const client = await open()
    const events: Array<{ progress: number; total?: number }> = []
    const result = await client.callTool(
      {
        name: 'mcp__everything__trigger-long-running-operation',
        arguments: { duration: 0.3, steps: 3 },
      },
      undefined,
      { onprogress: (p) => events.push(p), timeout: 10_000 },
    )
    assert.match(textOf(result), /Long running operation completed/)
    // the SDK client drops a progress notification that arrives with the response it belongs to
    assert.ok(events.length >= 2, JSON.stringify(events))
    assert.deepEqual(events.slice(0, 2), [
      { progress: 1, total: 3 },
      { progress: 2, total: 3 },
    ])
  })

  it("the client's cancellation ends the yoke call ABORTED and reaches the upstream server", async () => {
    const client = await open()
    // server-everything: the call is under way (progress arrived), then the client gives up
    const abort = new AbortController()
    const longCall = client.callTool(
      {
        name: 'mcp__everything__trigger-long-running-operation',
        arguments: { duration: 5, steps: 50 },
      },
      undefined,
      { signal: abort.signal, onprogress: () => abort.abort('enough'), timeout: 10_000 },
    )
    await assert.rejects(longCall)
    await until('the yoke call to end ABORTED', () =>
      results.some(
        (r) =>
          r.tool === 'mcp__everything__trigger-long-running-operation' && r.status === 'ABORTED',
      ),
    )
    await until('server-everything to receive notifications/cancelled', () =>
      readFileSync(project.path('to-everything.jsonl'), 'utf8').includes(
        '"method":"notifications/cancelled"',
      ),
    )
    // the fixture server marks a request it saw cancelled (notifications/cancelled aborted its handler)
    const sleeper = new AbortController()
    const sleep = client.callTool({ name: 'mcp__fx__sleep', arguments: { ms: 5000 } }, undefined, {
      signal: sleeper.signal,
      onprogress: () => sleeper.abort('enough'),
      timeout: 10_000,
    })
    await assert.rejects(sleep)
    await until('the upstream server to see the cancellation', () => {
      try {
        return /cancelled/.test(readFileSync(project.path('marks.txt'), 'utf8'))
      } catch {
        return false
      }
    })
    assert.ok(results.some((r) => r.tool === 'mcp__fx__sleep' && r.status === 'ABORTED'))
  })

  it("a tool the policy denies returns the policy's reason", async () => {
    const client = await open()
    const denied = await client.callTool({
      name: 'mcp__everything__get-sum',
      arguments: { a: 1, b: 2 },
    })
    assert.equal(denied.isError, true)
    assert.match(textOf(denied), /DENIED/)
    assert.match(textOf(denied), /denied by the policy rule deny: mcp__everything__get-sum/)
  })

  it('an ask is put to the client as an elicitation; a client that cannot be asked is refused with the hint', async () => {
    const asked: string[] = []
    let answer = 'allow-once'
    const willing = await open(url, {
      elicit: (message) => (
        asked.push(message),
        { action: 'accept', content: { decision: answer } }
      ),
    })
    const allowed = await willing.callTool({ name: 'mcp__everything__get-env', arguments: {} })
    assert.ok(!allowed.isError, textOf(allowed))
    assert.equal(asked.length, 1)
    assert.match(asked[0]!, /the policy rule ask: mcp__everything__get-env asks first/)
    answer = 'deny'
    const refused = await willing.callTool({ name: 'mcp__everything__get-env', arguments: {} })
    assert.match(textOf(refused), /DENIED.*refused through "mcp-server \(elicitation\)"/s)
    answer = 'allow-session'
    await willing.callTool({ name: 'mcp__everything__get-env', arguments: {} })
    const again = await willing.callTool({ name: 'mcp__everything__get-env', arguments: {} })
    assert.ok(!again.isError)
    assert.equal(asked.length, 3, '"for this session" is remembered for this session')

    const mute = await open()
    const blocked = await mute.callTool({ name: 'mcp__everything__get-env', arguments: {} })
    assert.equal(blocked.isError, true)
    assert.match(textOf(blocked), /did not declare the elicitation capability/)
    assert.match(textOf(blocked), /allow: \["mcp__everything__get-env"\]/)
    // the gateway registers no bridge (its calls carry their asker, asked before any bridge): a
    // terminal's bridge answers another caller's ask, and never an MCP client's
    const rt = h.kernel.services.get('runtime')!.value as unknown as ToolRuntime
    const off = rt.approvals.register({ name: 'terminal', ask: async () => 'allow-once' })
    try {
      const approval = h.kernel.services.get('approval')!.value as { bridges: string[] }
      assert.deepEqual(approval.bridges, ['terminal'])
      const local = await rt.call('mcp__everything__get-env', {}, { caller: 'cli' })
      assert.equal(local.status, 'ok', JSON.stringify(local.error))
      const overMcp = await mute.callTool({ name: 'mcp__everything__get-env', arguments: {} })
      assert.match(
        textOf(overMcp),
        /did not declare the elicitation capability/,
        'an MCP call is still put to its own client',
      )
    } finally {
      off()
    }
  })

  it('views: a tool denied in a view is neither listed nor callable there; an unknown view is 404', async () => {
    const service = serviceOf(h)
    assert.deepEqual(service.views, ['default', 'safe'])
    const safe = await open(service.urlOf('safe'))
    const names = (await safe.listTools()).tools.map((t) => t.name)
    assert.ok(names.includes('mcp__everything__get-tiny-image'))
    assert.ok(!names.includes('mcp__everything__echo'), 'denied in the view')
    assert.ok(!names.some((n) => n.startsWith('mcp__fx__')), 'not allowed in the view')
    const echo = await safe.callTool({ name: 'mcp__everything__echo', arguments: { message: 'x' } })
    assert.equal(echo.isError, true)
    assert.match(textOf(echo), /UNKNOWN_TOOL/)
    assert.match(
      textOf(await safe.callTool({ name: 'mcp__fx__echo', arguments: { text: 'x' } })),
      /UNKNOWN_TOOL/,
    )
    const unknown = await raw(`${url}/nope`, { headers: auth, body: INIT })
    assert.equal(unknown.status, 404)
    assert.match(unknown.body, /no MCP view named \\"nope\\" \(views: default, safe\)/)

    // a tool added later that the view allows shows up there (the allow mask is made again)
    let changed = 0
    const watcher = await open(service.urlOf('safe'), { onToolsChanged: () => changed++ })
    const fiber = await spawn(
      h,
      {
        name: 'late',
        inject: ['runtime'],
        apply: (ctx: any) =>
          void ctx.runtime.register({ name: 'late_tool', execute: () => 'late' }),
      },
      {},
      'late',
    )
    await until('tools/list_changed', () => changed > 0)
    assert.ok((await watcher.listTools()).tools.some((t) => t.name === 'late_tool'))
    assert.equal(textOf(await watcher.callTool({ name: 'late_tool', arguments: {} })), 'late')
    await h.kernel.remove(fiber)
    await until('the second tools/list_changed', () => changed > 1)
    assert.ok(!(await watcher.listTools()).tools.some((t) => t.name === 'late_tool'))
  })
})

describe('mcp-server: access and hostile input', () => {
  let h: McpHarness
  let project: Project
  let url: string
  let logs: string[]
  let gateway: Fiber
  before(async () => {
    project = tempProject()
    h = await mcpHarness(project.dir)
    await spawn(
      h,
      {
        name: 'tools',
        inject: ['runtime'],
        apply: (ctx: any) => void ctx.runtime.register({ name: 'ping', execute: () => 'pong' }),
      },
      {},
      'tools',
    )
    gateway = await spawn(h, mcpServer, { idleSessionMs: 300 }, 'gateway')
    url = serviceOf(h).url!
    logs = h.logs.map((l) => l.message)
  })
  after(async () => {
    await h.close()
    project.cleanup()
  })
  const token = () => readFileSync(join(project.home, 'mcp-token'), 'utf8').trim()

  it('generates the token into $YOKE_HOME/mcp-token (0600), names the file once, never prints it, and binds loopback only', async () => {
    const file = join(project.home, 'mcp-token')
    assert.equal(statSync(file).mode & 0o777, 0o600)
    assert.ok(token().length >= 32)
    assert.equal(logs.filter((m) => m.includes(token())).length, 0, 'the token is never logged')
    assert.equal(logs.filter((m) => m.includes(file)).length, 1, 'its file is named once')
    assert.match(serviceOf(h).tokenHint!, /mcp-token/)
    assert.ok(!serviceOf(h).tokenHint!.includes(token()))
    assert.equal(new URL(url).hostname, '127.0.0.1')
    const external = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal)
    if (external) {
      const port = new URL(url).port
      await assert.rejects(
        raw(`http://${external.address}:${port}/mcp`, { body: INIT }),
        /ECONNREFUSED|EHOSTUNREACH|ETIMEDOUT|no answer/,
      )
    }
  })

  it('a token file that is a link, or too short, is refused; two starts at once agree on one token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'yoke-token-'))
    try {
      writeFileSync(join(dir, 'secret.txt'), 'not meant to be a token at all\n')
      symlinkSync(join(dir, 'secret.txt'), join(dir, 'mcp-token'))
      assert.throws(() => resolveToken({}, dir), /mcp-token is not a regular file/)
      rmSync(join(dir, 'mcp-token'))
      writeFileSync(join(dir, 'mcp-token'), 'short\n')
      assert.throws(() => resolveToken({}, dir), /shorter than 16 characters/)
      rmSync(join(dir, 'mcp-token'))
      const [a, b] = [resolveToken({}, dir), resolveToken({}, dir)]
      assert.ok(a.generated && !b.generated)
      assert.ok(b.check(`Bearer ${a.generated.token}`))
      assert.deepEqual(
        readdirSync(dir).sort(),
        ['mcp-token', 'secret.txt'],
        'no temporary file is left',
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('no token or a wrong one: 401; a body over 4 MiB: 413; the server keeps serving', async () => {
    const none = await raw(url, { body: INIT })
    assert.equal(none.status, 401)
    assert.match(String(none.headers['www-authenticate']), /Bearer/)
    assert.equal(
      (
        await raw(url, {
          body: INIT,
          headers: { authorization: 'Bearer wrong-token-wrong-token-wrong' },
        })
      ).status,
      401,
    )
    assert.equal(
      (await raw(url, { body: INIT, headers: { authorization: token() } })).status,
      401,
      'the scheme is required',
    )
    const big = await raw(url, {
      body: Buffer.alloc(5 * 1024 * 1024, 0x20),
      headers: { authorization: `Bearer ${token()}` },
    })
    assert.equal(big.status, 413)
    const chunked = await raw(url, {
      body: Buffer.alloc(5 * 1024 * 1024, 0x20),
      headers: { authorization: `Bearer ${token()}`, 'transfer-encoding': 'chunked' },
    })
    assert.equal(
      chunked.status,
      413,
      'a body with no Content-Length is cut off once it passes the limit',
    )
    // DNS rebinding and web pages: a loopback endpoint refuses a foreign Host or Origin, even with the token
    const auth = { authorization: `Bearer ${token()}` }
    const rebound = await raw(url, { body: INIT, headers: { ...auth, host: 'evil.example:80' } })
    assert.equal(rebound.status, 403)
    assert.match(
      JSON.parse(rebound.body).error.message,
      /Host "evil\.example:80" is not this machine.s loopback address/,
    )
    assert.equal(
      (await raw(url, { body: INIT, headers: { ...auth, origin: 'https://evil.example' } })).status,
      403,
    )
    assert.equal((await raw(url, { body: INIT, headers: { ...auth, origin: 'null' } })).status, 403)
    assert.equal(
      (await raw(url, { body: INIT, headers: { ...auth, origin: 'http://localhost:6274' } }))
        .status,
      200,
      'a loopback origin (the Inspector UI) is accepted',
    )
    const { client } = await connect(url, { token: token() })
    assert.equal(textOf(await client.callTool({ name: 'ping', arguments: {} })), 'pong')
    await client.close()
  })

  it('malformed JSON-RPC, a body that is not JSON, an unknown session, a huge header: clear errors, others still served', async () => {
    const { client, transport } = await connect(url, { token: token() })
    const headers = { authorization: `Bearer ${token()}` }
    const notJson = await raw(url, { body: '{"jsonrpc": "2.0", "id": 1, "meth', headers })
    assert.equal(notJson.status, 400)
    assert.match(notJson.body, /Parse error/)
    const noSession = await raw(url, {
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      headers,
    })
    assert.equal(noSession.status, 400)
    assert.match(noSession.body, /initialize/)
    const session = {
      ...headers,
      'mcp-session-id': transport.sessionId!,
      'mcp-protocol-version': '2025-06-18',
    }
    const malformed = await raw(url, { body: JSON.stringify({ hello: 'world' }), headers: session })
    assert.equal(malformed.status, 400)
    assert.match(malformed.body, /-32700|Invalid JSON-RPC/)
    const unknown = await raw(url, {
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }),
      headers: { ...session, 'mcp-session-id': 'no-such-session' },
    })
    assert.equal(unknown.status, 404)
    assert.match(unknown.body, /Session not found/)
    const huge = await raw(url, {
      body: INIT,
      headers: { ...headers, 'x-padding': 'x'.repeat(64 * 1024) },
    })
    assert.equal(huge.status, 431, 'Request Header Fields Too Large')
    assert.equal(
      textOf(await client.callTool({ name: 'ping', arguments: {} })),
      'pong',
      'the session still works',
    )
    await client.close()
  })

  it("a deeply nested body is 400 (not 500) in either era; garbage is logged at debug, the gateway's own errors as warnings", async () => {
    const headers = { authorization: `Bearer ${token()}` }
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n)
    const legacyInit = INIT.replace('"capabilities":{}', `"capabilities":{},"pad":${deep(200_000)}`)
    const modernCall = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'ping',
        arguments: { x: 0 },
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
      },
    }).replace('{"x":0}', `{"x":${deep(200_000)}}`)
    for (const body of [deep(1_000_000), legacyInit, modernCall]) {
      const res = await raw(url, { body, headers })
      assert.equal(res.status, 400, res.body.slice(0, 200))
      assert.match(res.body, /-32700.*deeper than 512 levels/)
    }
    // nesting that JSON-RPC clients send is fine
    const nested = JSON.parse(INIT)
    nested.params.capabilities = { x: JSON.parse(deep(100)) }
    assert.equal((await raw(url, { body: JSON.stringify(nested), headers })).status, 200)
    const weird = await raw(url, { method: 'PUT', body: '{}', headers })
    assert.equal(weird.status, 405)
    const warned = h.logs.filter(
      (r) => r.level === 'warn' && r.fiber?.key === 'gateway' && /HTTP|MCP/.test(r.message),
    )
    assert.deepEqual(
      warned.map((r) => r.message),
      [],
      'client garbage is no warning',
    )
    for (const message of [
      'Rejected inbound request (header): the Mcp-Method header is absent',
      'Parse error: Invalid JSON',
      'Received a response for an unknown message ID: {}',
      'Failed to send response: the connection closed',
    ])
      assert.equal(clientCaused(new Error(message)), true, message)
    for (const message of [
      'Failed to encode result for tools/list: cycle',
      'Uncaught error in notification handler: TypeError: x is undefined',
    ])
      assert.equal(clientCaused(new Error(message)), false, message)
  })

  it('closes a session idle past idleSessionMs; its id is then 404', async () => {
    const headers = { authorization: `Bearer ${token()}` }
    const init = await raw(url, { body: INIT, headers })
    assert.equal(init.status, 200, init.body)
    const id = String(init.headers['mcp-session-id'])
    const call = () =>
      raw(url, {
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
        headers: { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' },
      })
    assert.equal((await call()).status, 200)
    await new Promise((resolve) => setTimeout(resolve, 300 + 150 + 200)) // idleSessionMs, one sweep, slack
    assert.equal((await call()).status, 404)
  })

  it('removing the instance closes the endpoint and its sessions and takes every registration back', async () => {
    const { client } = await connect(url, { token: token() })
    const hooks = h.rt.hooks
    const ours = () =>
      [...hooks.preExecute.taps, ...hooks.change.taps].filter((t) => t.name === 'mcp-server').length
    // its calls carry their asker: no approval bridge is registered, so none can be left behind
    const bridges = () => h.rt.approvals.bridges.filter((b) => b.startsWith('mcp-server'))
    assert.equal(ours(), 1)
    assert.equal(bridges().length, 0)
    await h.kernel.remove(gateway)
    assert.equal(ours(), 0)
    assert.equal(bridges().length, 0)
    assert.equal(h.kernel.services.get('mcpServer'), undefined)
    await assert.rejects(
      raw(url, { body: INIT, headers: { authorization: `Bearer ${token()}` } }),
      /ECONNREFUSED/,
    )
    await assert.rejects(client.callTool({ name: 'ping', arguments: {} }))
    await client.close().catch(() => {})
    // the view and session scopes are gone: the same keys can be made again
    assert.doesNotThrow(() => h.rt.registry.createScope('mcp-server:gateway:default')())
  })
})

describe('mcp-server: skills as prompts and resources', () => {
  let h: McpHarness
  let project: Project
  before(async () => {
    project = tempProject({
      'skills/commit-messages/SKILL.md':
        '---\nname: commit-messages\ndescription: Write a commit message.\n---\nRead the staged diff first.\n',
      'skills/commit-messages/references/style.md': '# Style\nImperative mood.\n',
      'skills/commit-messages/.env': 'API_KEY=hidden',
      'skills/commit-messages/node_modules/dep/index.js': 'module.exports = 1',
      'outside.txt': 'secret',
    })
    h = await mcpHarness(project.dir)
    await spawn(h, promptPlugin, {}, 'prompt')
    await spawn(h, skillsPlugin, { dirs: [project.path('skills')] }, 'skills')
    await spawn(h, mcpServer, { token: TOKEN }, 'gateway')
  })
  after(async () => {
    await h.close()
    project.cleanup()
  })

  it('lists skills as prompts and their files as resources; reads only inside a skill; a new skill is announced', async () => {
    let changed = 0
    const { client } = await connect(serviceOf(h).url!, { onPromptsChanged: () => changed++ })
    const prompts = (await client.listPrompts()).prompts
    assert.deepEqual(
      prompts.map((p) => p.name),
      ['commit-messages'],
    )
    const prompt = await client.getPrompt({
      name: 'commit-messages',
      arguments: { request: 'for the staged fix' },
    })
    const text = (prompt.messages[0]!.content as { text: string }).text
    assert.match(text, /<skill_content name="commit-messages">\nRead the staged diff first\./)
    assert.match(text, /skill:\/\/commit-messages\/references\/style\.md/)
    assert.match(text, /for the staged fix$/)
    const resources = (await client.listResources()).resources.map((r) => r.uri)
    assert.deepEqual(resources, [
      'skill://commit-messages/SKILL.md',
      'skill://commit-messages/references/style.md',
    ])
    const read = await client.readResource({ uri: 'skill://commit-messages/references/style.md' })
    assert.equal((read.contents[0] as { text: string }).text, '# Style\nImperative mood.\n')
    // what the listing leaves out cannot be read either
    for (const hidden of ['.env', 'node_modules/dep/index.js', 'references/../.env'])
      await assert.rejects(
        client.readResource({ uri: `skill://commit-messages/${hidden}` }),
        /hidden files and node_modules are not read|"\.\." segment/,
        hidden,
      )
    await assert.rejects(
      client.readResource({ uri: 'skill://commit-messages/../../outside.txt' }),
      /inside the skill|no file|"\.\." segment/,
    )
    await assert.rejects(
      client.readResource({ uri: 'skill://commit-messages/..%2F..%2Foutside.txt' }),
      /inside the skill|no file|outside/,
    )
    await assert.rejects(client.getPrompt({ name: 'nope' }), /no skill named "nope"/)

    project.write(
      'skills/release-notes/SKILL.md',
      '---\nname: release-notes\ndescription: Draft release notes.\n---\nList the merged changes.\n',
    )
    await until('prompts/list_changed', () => changed > 0, { ms: 15_000 })
    assert.deepEqual(
      (await client.listPrompts()).prompts.map((p) => p.name),
      ['commit-messages', 'release-notes'],
    )
    await client.close()
  })
})

/** Counts the list_changed notices a 2025-era client hears. */
async function listener(url: string) {
  const heard = { tools: 0, prompts: 0, resources: 0 }
  const client = new Client({ name: 'listener', version: '1' }, { capabilities: {} })
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void heard.tools++)
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => void heard.prompts++)
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void heard.resources++)
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }),
  )
  return { client, heard }
}

describe('mcp-server: list_changed only when something changed, only to the views that show it', () => {
  let h: McpHarness
  let project: Project
  let service: McpServerApi
  const DEBOUNCE_MS = 20
  let n = 0
  /** a tool change: every view without globs hears tools/list_changed */
  const touchTools = () =>
    h.rt.register({ name: `marker_${++n}`, risk: 'low', execute: () => 'marker' })
  before(async () => {
    project = tempProject({
      'skills/one/SKILL.md': '---\nname: one\ndescription: The first skill.\n---\nDo one.\n',
    })
    h = await mcpHarness(project.dir)
    await h.add('fx', {
      serverName: 'fx',
      command: process.execPath,
      args: [MODERN],
      protocol: 'legacy',
    })
    await spawn(h, promptPlugin, {}, 'prompt')
    await spawn(h, skillsPlugin, { dirs: [project.path('skills')] }, 'skills')
    await spawn(
      h,
      mcpServer,
      {
        token: TOKEN,
        changeDebounceMs: DEBOUNCE_MS,
        views: {
          noskills: { skills: false },
          nofx: { deny: ['mcp__fx__*', 'mcp://fx/*'] },
          items: { allow: ['mcp://fx/fixture://items/*', 'marker_*'] },
        },
      },
      'gateway',
    )
    service = serviceOf(h)
  })
  after(async () => {
    await h.close()
    project.cleanup()
  })

  it('after a tool change settles, nothing more is announced (no prompts/resources storm)', async () => {
    const { client, heard } = await listener(service.url!)
    touchTools()
    await until('tools/list_changed for the new tool', () => heard.tools > 0, { ms: 10_000 })
    const settled = { ...heard }
    // fifty debounce periods with no change: each would have announced again (the storm did, ~every period)
    await new Promise((resolve) => setTimeout(resolve, 50 * DEBOUNCE_MS))
    assert.deepEqual(heard, settled, 'no notice while nothing changes')
    assert.equal(heard.prompts + heard.resources, 0, 'a tool change is no prompt or resource news')
    await client.close()
  })

  it("a skill change reaches the views that show skills, an upstream server's change those that show its namespace", async () => {
    const all = await listener(service.url!)
    const noskills = await listener(service.urlOf('noskills')!)
    const nofx = await listener(service.urlOf('nofx')!)
    /** a tool notice, sent after what came before it on the same stream, so all of that has arrived */
    const flush = async () => {
      const before = [all, noskills, nofx].map((l) => l.heard.tools)
      touchTools()
      await until('the marker tool notice', () =>
        [all, noskills, nofx].every((l, i) => l.heard.tools > before[i]!),
      )
    }
    project.write('skills/two/SKILL.md', '---\nname: two\ndescription: Two.\n---\nDo two.\n')
    await until(
      'prompts/list_changed for the new skill',
      () => all.heard.prompts > 0 && nofx.heard.prompts > 0,
    )
    await flush()
    assert.equal(noskills.heard.prompts, 0, 'a view with skills: false hears nothing of skills')
    assert.equal(noskills.heard.resources, 0)

    const prompts = {
      all: all.heard.prompts,
      noskills: noskills.heard.prompts,
      nofx: nofx.heard.prompts,
    }
    await all.client.callTool({ name: 'mcp__fx__change', arguments: {} }) // fx adds a prompt, and says so
    await until(
      "prompts/list_changed for fx's new prompt",
      () => all.heard.prompts > prompts.all && noskills.heard.prompts > prompts.noskills,
    )
    await flush()
    assert.equal(
      nofx.heard.prompts,
      prompts.nofx,
      'a view that denies fx hears nothing of its prompts',
    )
    for (const l of [all, noskills, nofx]) await l.client.close()
  })

  it('view globs hold for names and URIs with a newline, and for URIs with dot segments', async () => {
    const nofx = await listener(service.urlOf('nofx')!)
    const items = await listener(service.urlOf('items')!)
    for (const uri of ['mcp://fx/fixture://items/7\n', 'mcp://fx/fixture://items/7\r\n'])
      await assert.rejects(nofx.client.readResource({ uri }), /control character/)
    await assert.rejects(
      nofx.client.getPrompt({ name: 'mcp__fx__greet\n', arguments: { name: 'Ada' } }),
      /control characters/,
    )
    await assert.rejects(
      nofx.client.readResource({ uri: 'mcp://fx/fixture://readme' }),
      /not in the MCP view "nofx"/,
    )
    // the view allows items/*: a dot segment does not lead out of it
    const item = await items.client.readResource({ uri: 'mcp://fx/fixture://items/7' })
    assert.equal((item.contents[0] as { text: string }).text, 'item 7')
    for (const uri of [
      'mcp://fx/fixture://items/../readme',
      'mcp://fx/fixture://items/%2e%2e/readme',
      'mcp://fx/fixture://items/.%2E/readme',
    ])
      await assert.rejects(items.client.readResource({ uri }), /"\." or "\.\." segment/, uri)
    assert.deepEqual(
      ['a/b', 'x://y/..', 'x://y/%2e', 'x://y/a\\..\\b', 'x://y/a?q=../b'].map(uriRefusal),
      [
        undefined,
        'it has a "." or ".." segment; ask for the URI with those resolved',
        'it has a "." or ".." segment; ask for the URI with those resolved',
        'it has a "." or ".." segment; ask for the URI with those resolved',
        undefined,
      ],
    )
    await nofx.client.close()
    await items.client.close()
  })

  it("the hub's resource and prompt tools are not a way around a view's globs", async () => {
    const names = async (view: string) => {
      const l = await listener(service.urlOf(view)!)
      try {
        return (await l.client.listTools()).tools.map((t) => t.name)
      } finally {
        await l.client.close()
      }
    }
    const all = await names('default')
    assert.ok(all.includes('read_mcp_resource'), 'a view without globs offers them')
    for (const view of ['nofx', 'items']) {
      const shown = await names(view)
      for (const hub of HUB_TOOLS) assert.ok(!shown.includes(hub), `${view} offers ${hub}`)
    }
  })
})

/** One 2026-07-28 request over HTTP (no session: the envelope and the standard headers). */
async function modernRequest(
  url: string,
  method: string,
  params: Record<string, unknown>,
  capabilities: Record<string, unknown> = { elicitation: {} },
): Promise<{ result?: any; error?: { code: number; message: string } }> {
  const name = params.name ?? params.taskId
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      ...auth,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' && { 'mcp-name': name }),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw-modern', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': capabilities,
        },
      },
    }),
    signal: AbortSignal.timeout(10_000),
  })
  const text = await res.text()
  const messages = text.startsWith('{')
    ? [JSON.parse(text)]
    : text
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => JSON.parse(l.slice(5)))
  const reply = messages.find((m) => m.id === 1)
  assert.ok(reply, `no answer to ${method} (HTTP ${res.status}): ${text.slice(0, 300)}`)
  return reply
}

describe('mcp-server: 2026-07-28 calls that wait for an answer, and tasks, are bounded', () => {
  let h: McpHarness
  let project: Project
  let service: McpServerApi
  const ANSWER_MS = 400
  const TASKS = { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } }
  before(async () => {
    project = tempProject()
    h = await mcpHarness(project.dir)
    await spawn(
      h,
      {
        name: 'tools',
        inject: ['runtime'],
        apply(ctx: any) {
          ctx.runtime.register({ name: 'guarded', risk: 'high', execute: () => 'guarded ran' })
          ctx.runtime.register({
            name: 'report',
            risk: 'low',
            spawnOnly: true,
            execute: (_args: unknown, call: { signal: AbortSignal }) =>
              new Promise((resolve) => {
                const timer = setTimeout(() => resolve('report ready'), 20_000)
                call.signal.addEventListener(
                  'abort',
                  () => (clearTimeout(timer), resolve('stopped')),
                )
              }),
          })
        },
      },
      {},
      'tools',
    )
    await spawn(h, policyPlugin, { ask: ['guarded'] }, 'policy')
    await spawn(
      h,
      mcpServer,
      {
        token: TOKEN,
        answerWaitMs: ANSWER_MS,
        maxWaitingCalls: 3,
        maxWaitingCallsPerView: 2,
        maxTasks: 2,
        maxTasksPerView: 1,
        views: { other: {}, third: {} },
      },
      'gateway',
    )
    service = serviceOf(h)
  })
  after(async () => {
    await h.close()
    project.cleanup()
  })
  const call = (
    view: string,
    args: Record<string, unknown> = {},
    extra = {},
    caps?: Record<string, unknown>,
  ) =>
    modernRequest(
      service.urlOf(view)!,
      'tools/call',
      { name: 'guarded', arguments: args, ...extra },
      caps,
    )
  const resultText = (r: { result?: any; error?: unknown }) =>
    JSON.stringify(r.result?.content ?? r.error ?? r)

  it('past maxWaitingCallsPerView / maxWaitingCalls a question is not asked (the call is refused, saying why); an unanswered one expires and frees its place', async () => {
    const first = await call('default')
    assert.equal(first.result?.resultType, 'input_required', resultText(first))
    assert.equal((await call('default')).result?.resultType, 'input_required')
    const third = await call('default')
    assert.equal(third.result?.isError, true)
    assert.match(resultText(third), /DENIED.*maxWaitingCallsPerView 2/)
    assert.equal((await call('other')).result?.resultType, 'input_required')
    assert.match(resultText(await call('third')), /DENIED.*maxWaitingCalls 3/)

    // nobody answers: after answerWaitMs the calls end, their places are free, and a late retry hears why
    await until(
      'an unanswered call to expire and free its place',
      async () => (await call('third')).result?.resultType === 'input_required',
    )
    const late = await call(
      'default',
      {},
      {
        inputResponses: { q1: { action: 'accept', content: { decision: 'allow-once' } } },
        requestState: first.result.requestState,
      },
    )
    assert.match(
      late.error?.message ?? resultText(late),
      /has ended: its question waited more than 400 ms for an answer \(answerWaitMs\)/,
    )
  })

  it('a retry of a call that was denied says so; the question shows the arguments whole, or is not asked', async () => {
    const tail = 'AND THEN rm -rf /'
    let asked: Awaited<ReturnType<typeof call>> = {}
    // the calls of the last test still wait until they expire: this one is asked once there is room
    await until('room for one more waiting call', async () => {
      asked = await call('other', { text: `${'x'.repeat(3000)} ${tail}` })
      return asked.result?.resultType === 'input_required'
    })
    const message: string = asked.result.inputRequests.q1.params.message
    assert.ok(message.includes(tail), 'the dangerous tail is shown')
    const deny = { inputResponses: { q1: { action: 'accept', content: { decision: 'deny' } } } }
    const denied = await call('other', {}, { ...deny, requestState: asked.result.requestState })
    assert.match(resultText(denied), /DENIED/)
    const replay = await call('other', {}, { ...deny, requestState: asked.result.requestState })
    assert.match(
      replay.error?.message ?? '',
      /the call this retry continues has ended: it was denied: the call to guarded was denied/,
    )
    assert.doesNotMatch(replay.error?.message ?? '', /10 minutes|restarted/)

    const huge = await call('other', { text: 'y'.repeat(20_000) })
    assert.equal(huge.result?.isError, true)
    assert.match(resultText(huge), /DENIED.*more than an approval shows whole \(16384\)/)
  })

  it('past maxTasksPerView / maxTasks a call that would be a task is refused; a cancelled task frees its place', async () => {
    const task = (view: string) =>
      modernRequest(service.urlOf(view)!, 'tools/call', { name: 'report', arguments: {} }, TASKS)
    const one = await task('default')
    assert.equal(one.result?.resultType, 'task', resultText(one))
    const refused = await task('default')
    assert.equal(refused.result?.isError, true)
    assert.match(resultText(refused), /maxTasksPerView 1/)
    const two = await task('other')
    assert.equal(two.result?.resultType, 'task')
    assert.match(resultText(await task('third')), /maxTasks 2/)
    for (const [view, t] of [
      ['default', one],
      ['other', two],
    ] as const)
      await modernRequest(service.urlOf(view)!, 'tasks/cancel', { taskId: t.result.taskId }, TASKS)
    assert.equal((await task('third')).result?.resultType, 'task', 'a place is free again')
  })
})

describe('mcp-server: the endpoint across restarts of its instance (port 0)', () => {
  it('the same port again when it is free; else a new one, and the log says where', async () => {
    const project = tempProject()
    const h = await mcpHarness(project.dir)
    const blocker = createServer()
    try {
      const first = await spawn(h, mcpServer, { token: TOKEN }, 'gw')
      const url = serviceOf(h).url!
      await h.kernel.remove(first)
      const second = await spawn(h, mcpServer, { token: TOKEN }, 'gw')
      assert.equal(serviceOf(h).url, url, 'the port it had')
      await h.kernel.remove(second)
      // something else took the port meanwhile: any free one, and the log says it moved
      const port = Number(new URL(url).port)
      await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve))
      await spawn(h, mcpServer, { token: TOKEN }, 'gw')
      const moved = serviceOf(h).url!
      assert.notEqual(moved, url)
      assert.ok(
        h.logs.some(
          (r) =>
            r.level === 'info' &&
            r.message.includes(`the MCP endpoint moved to ${moved} (it was ${url})`),
        ),
        h.logs.map((r) => r.message).join('\n'),
      )
    } finally {
      await new Promise((resolve) => blocker.close(resolve))
      await h.close()
      project.cleanup()
    }
  })
})
