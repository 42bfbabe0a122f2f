// The gateway matrix: one `yoke serve` process, both protocol eras on one endpoint, driven by real
// clients: (a) 2025 era, the v1 SDK client and the MCP Inspector CLI; (b) 2026-07-28, a v2
// client pinned to it (no session), over HTTP and over stdio. Tools of every source (native, an
// exec-tools executable, an upstream MCP server through mcp-client: the modern fixture), an
// upstream resource, template and prompt, approvals (elicitation / input_required), a spawnOnly
// tool as an MCP task fetched after the client reconnected, the standard headers, and
// list_changed after a hot reload.
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpV2,
  type CallToolResult as ResultV2,
} from '@modelcontextprotocol/client'
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio'
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from '@modelcontextprotocol/ext-tasks/client'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  ElicitRequestSchema,
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { EVERYTHING } from '../../helpers/mcp.ts'
import { ROOT, tempProject, YOKE, type Project } from '../../helpers/project.ts'
import { inspector, messagesOf, serveHttp } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'

const MODERN = join(ROOT, 'test/fixtures/mcp/modern.mjs')
const PIN = { versionNegotiation: { mode: { pin: '2026-07-28' as const } } }

const TOOLS = `export default {
  name: 'tools',
  inject: ['runtime'],
  apply(ctx) {
    const sleep = (ms, signal) => new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, ms)
      signal.addEventListener('abort', () => (clearTimeout(timer), reject(new Error('aborted'))), { once: true })
    })
    ctx.runtime.register({
      name: 'add', concurrency: 'safe', risk: 'low',
      inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
      execute: ({ a, b }) => String(a + b),
    })
    ctx.runtime.register({ name: 'guarded', risk: 'high', execute: () => 'guarded ran' })
    ctx.runtime.register({
      name: 'memo', risk: 'low',
      execute: () => ({ content: [{ type: 'resource', resource: { uri: 'memo://1', mimeType: 'text/plain', text: 'the memo text' } }] }),
    })
    // a long call whose tool says it may run as an MCP task (a field the registry keeps as given)
    ctx.runtime.register({
      name: 'long_job', risk: 'low', execution: { taskSupport: 'optional' },
      inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } },
      execute: async ({ ms = 200 }, call) => (await sleep(ms, call.signal), 'long job done'),
    })
    ctx.runtime.register({
      name: 'report', risk: 'low', spawnOnly: true,
      inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } },
      execute: async ({ ms = 300 }, call) => (await sleep(ms, call.signal), 'report ready after ' + ms + ' ms'),
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
const EVERYTHING_CONFIG = `  everything:
    use: mcp-client
    config: { serverName: everything, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(EVERYTHING)}, stdio] }
`
const config = (log: string, extra = '', everything = true) => `preset: base
plugins:
  tools:
    use: ./tools.mjs
  packages:
    use: exec-tools
    config: { dirs: [${JSON.stringify(join(ROOT, 'examples/packages'))}] }
  fx:
    use: mcp-client
    config: { serverName: fx, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(MODERN)}, --log, ${JSON.stringify(log)}] }
${everything ? EVERYTHING_CONFIG : ''}  gateway:
    use: mcp-server
    config: { changeDebounceMs: 50, views: { math: { allow: [add, report] } } }
${extra}`

const textOf = (r: unknown) =>
  ((r as ResultV2).content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('\n')

describe('the gateway over HTTP: both eras on one endpoint', () => {
  let project: Project
  let child: ChildProcess
  let url: string
  const closers: Array<() => Promise<unknown>> = []
  before(async () => {
    project = tempProject({ 'tools.mjs': TOOLS, 'fresh.mjs': FRESH })
    project.write('yoke.config.yaml', config(project.path('fx.log')))
    const served = await serveHttp(project)
    child = served.child
    url = served.info.url
    // the upstream server's tools are there once mcp-client has synced them
    const probe = await v2()
    await until(
      'the upstream tools to be served',
      async () => (await probe.listTools()).tools.some((t) => t.name === 'mcp__fx__echo'),
      { ms: 20_000, every: 100 },
    )
  })
  after(async () => {
    await Promise.all(closers.map((close) => close().catch(() => {})))
    if (child.exitCode === null) child.kill('SIGKILL')
    project.cleanup()
  })
  const token = () => readFileSync(join(project.home, 'mcp-token'), 'utf8').trim()
  const auth = () => ({ Authorization: `Bearer ${token()}` })

  async function v1(
    options: { elicit?: (message: string) => Record<string, unknown>; onTools?: () => void } = {},
  ) {
    const client = new ClientV1(
      { name: 'v1-client', version: '1' },
      { capabilities: options.elicit ? { elicitation: {} } : {} },
    )
    if (options.elicit)
      client.setRequestHandler(
        ElicitRequestSchema,
        (r) => options.elicit!(r.params.message) as never,
      )
    if (options.onTools)
      client.setNotificationHandler(ToolListChangedNotificationSchema, options.onTools)
    const transport = new HttpV1(new URL(url), { requestInit: { headers: auth() } })
    await client.connect(transport)
    closers.push(() => client.close())
    return Object.assign(client, { sessionId: () => transport.sessionId })
  }

  async function v2(
    options: {
      elicit?: (message: string) => Record<string, unknown>
      onTools?: () => void
      name?: string
    } = {},
  ) {
    const client = new ClientV2(
      { name: options.name ?? 'v2-client', version: '1' },
      {
        ...PIN,
        capabilities: options.elicit ? { elicitation: {} } : {},
        ...(options.onTools && {
          listChanged: { tools: { onChanged: () => options.onTools!(), debounceMs: 0 } },
        }),
      },
    )
    if (options.elicit)
      client.setRequestHandler(
        'elicitation/create',
        (r) => options.elicit!(r.params.message) as never,
      )
    const transport = new HttpV2(new URL(url), { requestInit: { headers: auth() } })
    await client.connect(transport)
    closers.push(() => client.close())
    return Object.assign(client, { sessionId: () => transport.sessionId })
  }

  it('both eras list and call a tool of every source, read an upstream resource and template, get an upstream prompt', async () => {
    for (const [era, client] of [
      ['legacy', await v1()],
      ['modern', await v2()],
    ] as const) {
      if (era === 'modern') {
        assert.equal((client as ClientV2).getProtocolEra(), 'modern')
        assert.equal(client.sessionId(), undefined, 'a 2026-07-28 client has no session')
      } else assert.ok(client.sessionId(), 'a 2025-era client has a session')
      const tools = (await client.listTools()).tools
      for (const name of ['add', 'word_count', 'mcp__fx__echo', 'report'])
        assert.ok(
          tools.some((t) => t.name === name),
          `${era}: ${name} listed`,
        )
      assert.equal(textOf(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })), '5')
      assert.match(
        textOf(await client.callTool({ name: 'word_count', arguments: { text: 'one two three' } })),
        /3/,
      )
      assert.equal(
        textOf(await client.callTool({ name: 'mcp__fx__echo', arguments: { text: era } })),
        `echo: ${era}`,
      )
      // an embedded resource keeps its text (yoke's own tool: no bridge in between)
      const memo = (await client.callTool({ name: 'memo', arguments: {} })) as ResultV2
      assert.deepEqual(memo.content, [
        {
          type: 'resource',
          resource: { uri: 'memo://1', mimeType: 'text/plain', text: 'the memo text' },
        },
      ])
      // an unknown tool's error names the view, not the runtime's scope behind it
      const unknown = await client.callTool({ name: 'nope', arguments: {} })
      assert.equal(unknown.isError, true)
      assert.match(textOf(unknown), /no tool named "nope" in the MCP view "default"/)
      assert.doesNotMatch(textOf(unknown), /mcp-server:|scope/)

      const resources = (await client.listResources()).resources.map((r) => r.uri)
      assert.ok(resources.includes('mcp://fx/fixture://readme'), `${era}: ${resources.join(', ')}`)
      const readme = await client.readResource({ uri: 'mcp://fx/fixture://readme' })
      assert.deepEqual(
        readme.contents.map((c) => [c.uri, 'text' in c]),
        [['mcp://fx/fixture://readme', true]],
      )
      assert.match((readme.contents[0] as { text: string }).text, /^# Fixture readme/)
      const templates = (await client.listResourceTemplates()).resourceTemplates
      assert.ok(templates.some((t) => t.uriTemplate === 'mcp://fx/fixture://items/{id}'))
      const item = await client.readResource({ uri: 'mcp://fx/fixture://items/7' })
      assert.equal((item.contents[0] as { text: string }).text, 'item 7')
      await assert.rejects(
        client.readResource({ uri: 'mcp://nope/x://y' }),
        /no connected MCP server named "nope"/,
      )

      const prompts = (await client.listPrompts()).prompts.map((p) => p.name)
      assert.ok(prompts.includes('mcp__fx__greet'), `${era}: ${prompts.join(', ')}`)
      const greet = await client.getPrompt({ name: 'mcp__fx__greet', arguments: { name: 'Ada' } })
      assert.deepEqual(greet.messages, [
        { role: 'user', content: { type: 'text', text: 'Hello, Ada!' } },
      ])
    }
  })

  it("an upstream tool's results, annotations and execution pass through unchanged", async () => {
    const client = await v1()
    const shapes = (await client.listTools()).tools.find((t) => t.name === 'mcp__fx__shapes')!
    assert.deepEqual(shapes.annotations, { readOnlyHint: true }, 'yoke adds no title to them')
    assert.equal(typeof shapes.title, 'string')
    // server-everything's research tool declares `execution.taskSupport: required`; yoke serves
    // tasks to 2026-07-28 clients only (whose wire has no `execution`), so a 2025-era client reads
    // none and calls it plainly (one that read `required` would refuse to, as the Inspector CLI did)
    const research = (await client.listTools()).tools.find(
      (t) => t.name === 'mcp__everything__simulate-research-query',
    )
    assert.ok(research, 'listed')
    assert.equal(research.execution, undefined)
    const result = (await client.callTool({ name: 'mcp__fx__shapes', arguments: {} })) as ResultV2
    const embedded = result.content.find((c) => c.type === 'resource')
    assert.ok(
      embedded && 'text' in embedded.resource && embedded.resource.text,
      `the embedded resource keeps its text: ${JSON.stringify(result.content).slice(0, 400)}`,
    )
    assert.ok(result.content.some((c) => c.type === 'image'))
    assert.ok(result.content.some((c) => c.type === 'resource_link'))
    assert.ok(result.structuredContent)
  })

  it("progress reaches both eras' clients, and their cancellation reaches the upstream server", async () => {
    const aborted = () =>
      readFileSync(project.path('fx.log'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('"event":"aborted"')).length
    // the v1 client takes (params, resultSchema, options), the v2 client (params, options)
    const v1Client = await v1()
    const v2Client = await v2()
    const calls: Array<
      [
        string,
        (
          params: { name: string; arguments: Record<string, unknown> },
          options: object,
        ) => Promise<unknown>,
      ]
    > = [
      ['legacy', (params, options) => v1Client.callTool(params, undefined, options)],
      ['modern', (params, options) => v2Client.callTool(params, options)],
    ]
    for (const [era, call] of calls) {
      const steps: number[] = []
      const done = await call(
        { name: 'mcp__fx__slow', arguments: { steps: 3, ms: 50 } },
        { onprogress: (p: { progress: number }) => void steps.push(p.progress), timeout: 10_000 },
      )
      assert.equal(textOf(done), 'slow done 3')
      assert.ok(steps.length >= 2 && steps[0] === 1, `${era}: ${JSON.stringify(steps)}`)
      const before = aborted()
      const stop = new AbortController()
      await assert.rejects(
        call(
          { name: 'mcp__fx__slow', arguments: { steps: 100, ms: 100 } },
          { signal: stop.signal, onprogress: () => stop.abort('enough'), timeout: 10_000 },
        ),
      )
      await until(`${era}: the upstream server to see the cancellation`, () => aborted() > before)
    }
  })

  it("an upstream server's own question (elicitation) reaches the client that made the call, in its era", async () => {
    const asked: string[] = []
    const elicit = (message: string) => (
      asked.push(message),
      { action: 'accept', content: { ok: true } }
    )
    for (const client of [await v1({ elicit }), await v2({ elicit })]) {
      const result = await client.callTool({
        name: 'mcp__fx__confirm',
        arguments: { what: 'deploy' },
      })
      assert.match(textOf(result), /confirm deploy: accept \{"ok":true\}/)
    }
    assert.equal(asked.length, 2)
  })

  it('an ask: an elicitation to a 2025-era client, input_required to a 2026-07-28 one; a client that can do neither is refused with the hint', async () => {
    const asked: string[] = []
    let answer = 'allow-once'
    const elicit = (message: string) => (
      asked.push(message),
      { action: 'accept', content: { decision: answer } }
    )
    const legacy = await v1({ elicit })
    assert.equal(textOf(await legacy.callTool({ name: 'guarded', arguments: {} })), 'guarded ran')
    const modern = await v2({ elicit })
    assert.equal(textOf(await modern.callTool({ name: 'guarded', arguments: {} })), 'guarded ran')
    assert.equal(asked.length, 2)
    assert.match(asked[1]!, /guarded is high risk.*\nAllow guarded \{\}\?/s)
    answer = 'deny'
    const refused = await modern.callTool({ name: 'guarded', arguments: {} })
    assert.equal(refused.isError, true)
    assert.match(textOf(refused), /DENIED.*refused through "mcp-server \(elicitation\)"/s)
    // "for this session" is a 2025-era session's; a 2026-07-28 client has none to keep it
    answer = 'allow-session'
    assert.equal(textOf(await legacy.callTool({ name: 'guarded', arguments: {} })), 'guarded ran')
    assert.equal(textOf(await legacy.callTool({ name: 'guarded', arguments: {} })), 'guarded ran')
    assert.equal(asked.length, 4, 'the session remembers')
    assert.match(textOf(await modern.callTool({ name: 'guarded', arguments: {} })), /DENIED/)
    for (const mute of [await v1(), await v2()]) {
      const blocked = await mute.callTool({ name: 'guarded', arguments: {} })
      assert.equal(blocked.isError, true)
      assert.match(textOf(blocked), /did not declare the elicitation capability/)
      assert.match(textOf(blocked), /allow: \["guarded"\]/)
    }
  })

  const endpointId = 'yoke-gateway'
  /** an ext-tasks session over a v2 client pinned to 2026-07-28 (it declares the extension) */
  const tasksSession = async () => {
    const client = await v2({ name: 'tasks-client' })
    const tasks = createTaskSessionFromClient(client, {
      endpointId,
      rawDispatch: rawDispatch(url, auth()),
      v2RequestFraming: {
        protocolVersion: '2026-07-28',
        clientInfo: { name: 'tasks-client', version: '1' },
        clientCapabilities: {},
      },
    })
    return Object.assign(tasks, { client })
  }

  it('a spawnOnly tool is an MCP task to a 2026-07-28 client that supports tasks: fetched after it reconnected, or cancelled', async () => {
    const session = tasksSession
    const first = await session()
    const started = await first.callTool('report', { ms: 400 })
    assert.equal(started.kind, 'task')
    let saved: Parameters<typeof first.resumeTask>[0] | undefined
    if (started.kind === 'task') await started.handoff((reference) => void (saved = reference))
    // the client leaves: its connection closes (ext-tasks 0.2.2's session.close() would cancel the
    // task it handed off: close() does not see that handoff() detached it)
    await first.client.close()
    const second = await session() // … and comes back, on a new connection
    // a task belongs to the view it was made in: another view does not know it
    const elsewhere = await rawDispatch(
      `${url}/math`,
      auth(),
    )({
      method: 'tasks/get',
      params: {
        taskId: saved!.taskId,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    })
    assert.equal(elsewhere.kind, 'error')
    assert.match(
      (elsewhere as { error: { message: string } }).error.message,
      /no task ".*" in the MCP view "math"/,
    )
    const resumed = await second.resumeTask(saved!)
    const { outcome } = await within('the resumed task to settle', resumed.settle())
    assert.equal(outcome.status, 'completed')
    assert.match(textOf(resultFromTaskOutcome(outcome)), /report ready after 400 ms/)
    // cancelling ends the background run too
    const long = await second.callTool('report', { ms: 20_000 })
    await long.cancel()
    assert.equal((await within('the cancelled task to end', long.result())).status, 'cancelled')
    await second.close()
    // a client that does not declare tasks gets today's answer: the background run's id
    const plain = await (await v2()).callTool({ name: 'report', arguments: { ms: 10 } })
    assert.match(textOf(plain), /runs in the background \(task task_\d+\)/)
  })

  it('a long call whose tool declares task support is a task to a 2026-07-28 client; a 2025-era client, served none, is listed no task support', async () => {
    // a 2025-era client is served no tasks, so none of these says it takes one
    const listed = (await (await v1()).listTools()).tools
    for (const name of ['long_job', 'report', 'add'])
      assert.equal(listed.find((t) => t.name === name)?.execution, undefined, name)
    const session = await tasksSession()
    const job = await session.callTool('long_job', { ms: 200 })
    assert.equal(job.kind, 'task')
    const settled = await within('the long job to settle', job.settle())
    assert.equal(textOf(resultFromTaskOutcome(settled.outcome)), 'long job done')
    await session.close()
  })

  it('the standard headers must agree with the body (Mcp-Method, Mcp-Name), in both eras', async () => {
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    }
    const post = (body: unknown, headers: Record<string, string>) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...auth(),
          ...headers,
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      })
    const call = (meta?: object) => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'add', arguments: { a: 1, b: 1 }, ...(meta && { _meta: meta }) },
    })
    const modern = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' }
    const ok = await post(call(envelope), { ...modern, 'mcp-name': 'add' })
    assert.equal(ok.status, 200, await ok.clone().text())
    assert.match(await ok.text(), /"text":"2"/)
    const wrong = await post(call(envelope), { ...modern, 'mcp-name': 'other' })
    assert.equal(wrong.status, 400)
    assert.match(await wrong.text(), /-32020.*disagree/)
    const missing = await post(call(envelope), { 'mcp-protocol-version': '2026-07-28' })
    assert.equal(missing.status, 400)
    assert.match(await missing.text(), /Mcp-Method header is absent/)
    // a 2025-era session: the headers are optional, but one that is sent must agree too
    const legacy = await v1()
    const session = { 'mcp-session-id': legacy.sessionId()!, 'mcp-protocol-version': '2025-11-25' }
    const mismatch = await post(call(), { ...session, 'mcp-method': 'tools/list' })
    assert.equal(mismatch.status, 400)
    assert.match(
      ((await mismatch.json()) as { error: { message: string } }).error.message,
      /the Mcp-Method header says "tools\/list" but the body's method is "tools\/call"/,
    )
  })

  it('the MCP Inspector CLI (2025 era) lists, calls and reads through the same endpoint', async () => {
    const header = ['--transport', 'http', '--header', `Authorization: Bearer ${token()}`]
    const call = await inspector(project, [
      url,
      ...header,
      ...['--method', 'tools/call', '--tool-name', 'mcp__fx__echo', '--tool-arg', 'text=inspected'],
    ])
    assert.equal(call.code, 0, call.out)
    assert.deepEqual(call.json.content, [{ type: 'text', text: 'echo: inspected' }])
    const read = await inspector(project, [
      url,
      ...header,
      ...['--method', 'resources/read', '--uri', 'mcp://fx/fixture://readme'],
    ])
    assert.equal(read.code, 0, read.out)
    assert.match(read.json.contents[0].text, /^# Fixture readme/)
  })

  it('a hot reload reaches connected clients of both eras as tools/list_changed', async () => {
    let legacyHeard = 0
    let modernHeard = 0
    const legacy = await v1({ onTools: () => void legacyHeard++ })
    const modern = await v2({ onTools: () => void modernHeard++ })
    await modern.listTools() // the subscription (subscriptions/listen) is open once it has answered
    await new Promise((resolve) => setTimeout(resolve, 300))
    project.writeAtomic(
      'yoke.config.yaml',
      config(project.path('fx.log'), '  fresh:\n    use: ./fresh.mjs\n'),
    )
    // a notice, after which the list has the new tool (a reload may announce more than once)
    const listed = async (client: ClientV1 | ClientV2) =>
      (await client.listTools()).tools.some((t) => t.name === 'fresh_tool')
    await until(
      'both eras to hear tools/list_changed',
      async () =>
        legacyHeard > 0 && modernHeard > 0 && (await listed(legacy)) && (await listed(modern)),
      { ms: 20_000, every: 100 },
    )
    for (const client of [legacy, modern])
      assert.equal(textOf(await client.callTool({ name: 'fresh_tool', arguments: {} })), 'fresh')
  })

  it("an upstream server's prompt list change reaches clients of both eras as prompts/list_changed", async () => {
    let legacyHeard = 0
    let modernHeard = 0
    const legacy = await v1()
    legacy.setNotificationHandler(PromptListChangedNotificationSchema, () => void legacyHeard++)
    const modern = new ClientV2(
      { name: 'v2-prompts', version: '1' },
      { ...PIN, listChanged: { prompts: { onChanged: () => void modernHeard++, debounceMs: 0 } } },
    )
    await modern.connect(new HttpV2(new URL(url), { requestInit: { headers: auth() } }))
    closers.push(() => modern.close())
    await modern.listPrompts()
    await new Promise((resolve) => setTimeout(resolve, 300)) // the listen stream is open
    // the fixture's `change` adds a prompt and announces it (to yoke's bridge, its client)
    await legacy.callTool({ name: 'mcp__fx__change', arguments: {} })
    const listed = async (client: ClientV1 | ClientV2) =>
      (await client.listPrompts()).prompts.some((p) => p.name === 'mcp__fx__farewell')
    await until(
      'both eras to hear prompts/list_changed',
      async () =>
        legacyHeard > 0 && modernHeard > 0 && (await listed(legacy)) && (await listed(modern)),
      { ms: 15_000, every: 100 },
    )
  })
})

describe('yoke serve --stdio: a 2026-07-28 client on the same pipe protocol', () => {
  it('lists and calls native and upstream tools, and answers an ask through input_required', async () => {
    const project = tempProject({ 'tools.mjs': TOOLS })
    project.write('yoke.config.yaml', config(project.path('fx.log'), '', false))
    let stderr = ''
    const transport = new StdioV2({
      command: process.execPath,
      args: [YOKE, 'serve', '--stdio'],
      cwd: project.dir,
      env: { ...(process.env as Record<string, string>), NO_COLOR: '1', YOKE_HOME: project.home },
      stderr: 'pipe',
    })
    transport.stderr!.on('data', (d) => (stderr += d))
    const client = new ClientV2(
      { name: 'stdio-v2', version: '1' },
      { ...PIN, capabilities: { elicitation: {} } },
    )
    let asked = 0
    client.setRequestHandler('elicitation/create', () => {
      asked++
      return { action: 'accept', content: { decision: 'allow-session' } }
    })
    try {
      await client.connect(transport)
      assert.equal(client.getProtocolEra(), 'modern', stderr)
      await until(
        'the upstream tools to be served',
        async () => (await client.listTools()).tools.some((t) => t.name === 'mcp__fx__echo'),
        { ms: 20_000, every: 100 },
      )
      assert.equal(textOf(await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } })), '3')
      assert.equal(
        textOf(await client.callTool({ name: 'mcp__fx__echo', arguments: { text: 'pipe' } })),
        'echo: pipe',
      )
      assert.equal(textOf(await client.callTool({ name: 'guarded', arguments: {} })), 'guarded ran')
      // the pipe is a session of its own: "for this session" is offered, and kept
      assert.equal(textOf(await client.callTool({ name: 'guarded', arguments: {} })), 'guarded ran')
      assert.equal(asked, 1)
    } finally {
      await client.close().catch(() => {})
      project.cleanup()
    }
  })
})

/** `promise`, or a failure naming `what` after 15 s: a task that never ends fails the test, not hangs it. */
async function within<T>(what: string, promise: Promise<T>, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`waited ${ms} ms for ${what}`)), ms)
  })
  try {
    return await Promise.race([promise, expired])
  } finally {
    clearTimeout(timer)
  }
}

/** ext-tasks' dispatcher of raw 2026-07-28 requests: one POST each, with the standard headers. */
function rawDispatch(url: string, headers: Record<string, string>) {
  let id = 0
  const NAME: Record<string, string> = {
    'tools/call': 'name',
    'tasks/get': 'taskId',
    'tasks/update': 'taskId',
    'tasks/cancel': 'taskId',
  }
  return async (
    request: any,
    options?: { signal?: AbortSignal; context?: { headers?: Record<string, string> } },
  ) => {
    const body = { jsonrpc: '2.0', id: `raw-${++id}`, ...request }
    const h = new Headers(options?.context?.headers ?? {})
    for (const [k, v] of Object.entries({
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': request.method,
      ...headers,
    }))
      if (!h.has(k)) h.set(k, v)
    const field = NAME[request.method]
    if (field && request.params?.[field] && !h.has('mcp-name'))
      h.set('mcp-name', request.params[field])
    const res = await fetch(url, {
      method: 'POST',
      headers: h,
      body: JSON.stringify(body),
      signal: options?.signal ?? AbortSignal.timeout(10_000),
    })
    const messages = await messagesOf(res)
    const reply = messages.find((m) => m.id === body.id)
    if (!reply)
      throw new Error(
        `no answer to ${request.method} (HTTP ${res.status}): ${JSON.stringify(messages).slice(0, 300)}`,
      )
    return reply.error
      ? { kind: 'error' as const, error: reply.error }
      : { kind: 'result' as const, result: reply.result }
  }
}
