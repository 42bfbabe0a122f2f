// The 2026-07-28 fixture server (test/fixtures/mcp/modern.mjs) proven with the bare v2 client
// (@modelcontextprotocol/client 2.4, ext-tasks 0.2.2), over stdio and Streamable HTTP, pinned to
// each era. It is also the reference for how the bare client does each thing: negotiation,
// progress, abort, input_required through the elicitation handler, tasks through ext-tasks (with a
// raw dispatcher per transport), subscriptions/listen, cache hints. Every wait is bounded.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  Client,
  StreamableHTTPClientTransport,
  type CallToolResult,
  type Transport,
} from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
  type RawClientDispatch,
} from '@modelcontextprotocol/ext-tasks/client'
import { ROOT } from '../../helpers/project.ts'
import { messagesOf } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'

const FIXTURE = join(ROOT, 'test/fixtures/mcp/modern.mjs')
const MODERN = '2026-07-28'
const WAIT = { timeout: 10_000 } // every request is bounded
const TTL_MS = 60_000
const ERAS = { legacy: 'legacy', modern: { pin: MODERN } } as const
type Era = keyof typeof ERAS
type Kind = 'stdio' | 'http'

const dir = mkdtempSync(join(tmpdir(), 'yoke-modern-fixture-'))
let logs = 0
const newLog = () => join(dir, `log-${++logs}.jsonl`)
type LogEntry = {
  method?: string
  era?: string
  name?: string
  event?: string
  headers?: Record<string, string>
}
const readLog = (file: string): LogEntry[] => {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
  } catch {
    return []
  }
}

const children: ChildProcess[] = []
/** the fixture over HTTP on a free port; resolves once it prints LISTENING */
async function startHttp(args: string[]): Promise<URL> {
  const child = spawn(process.execPath, [FIXTURE, '--http', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  let output = ''
  const port = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no LISTENING in 10 s: ${output}`)), 10_000)
    const onData = (d: Buffer) => {
      output += d
      const m = /LISTENING (\d+)/.exec(output)
      if (!m) return
      clearTimeout(timer)
      resolve(m[1])
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.on('exit', (code) => reject(new Error(`the fixture exited (${code}): ${output}`)))
  })
  return new URL(`http://127.0.0.1:${port}/mcp`)
}

/** A client whose elicitation handler answers what `answer` says (the v2 client routes
 * input_required through it on modern, the server's elicitation/create on legacy). */
function newClient(era: Era, answer = { action: 'accept', content: { ok: true } } as any) {
  const client = new Client(
    { name: 'fixture-test', version: '1.0.0' },
    {
      versionNegotiation: { mode: ERAS[era] },
      capabilities: { elicitation: { form: {}, url: {} } },
    },
  )
  const asked: string[] = []
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(`${request.params.mode ?? 'form'}: ${request.params.message}`)
    return request.params.mode === 'url' ? { action: answer.action } : answer
  })
  return { client, asked }
}

function transportFor(kind: Kind, target: { url?: URL; args: string[] }): Transport {
  if (kind === 'http') return new StreamableHTTPClientTransport(target.url!)
  return new StdioClientTransport({
    command: process.execPath,
    args: [FIXTURE, ...target.args],
    stderr: 'pipe',
  })
}

/**
 * ext-tasks talks to a 2026-07-28 tasks server through a host-owned raw dispatcher (the SDK's
 * codecs refuse `resultType: 'task'`). Over HTTP it is a plain POST with the SEP-2243 headers;
 * over stdio it writes on the client's own transport and takes the matching response before the
 * Client sees it.
 */
function rawDispatcher(kind: Kind, transport: Transport, url?: URL): RawClientDispatch {
  let next = 0
  if (kind === 'http') {
    const nameField: Record<string, string> = {
      'tools/call': 'name',
      'tasks/get': 'taskId',
      'tasks/update': 'taskId',
      'tasks/cancel': 'taskId',
    }
    return async (request: any, options) => {
      const body = { jsonrpc: '2.0', id: `raw-${++next}`, ...request }
      const headers = new Headers(options?.context?.headers as Record<string, string>)
      headers.set('content-type', 'application/json')
      headers.set('accept', 'application/json, text/event-stream')
      headers.set('mcp-protocol-version', MODERN)
      headers.set('mcp-method', request.method)
      const name = request.params?.[nameField[request.method]]
      if (typeof name === 'string' && !headers.has('mcp-name')) headers.set('mcp-name', name)
      const res = await fetch(url!, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        signal: options?.signal,
      })
      const messages = await messagesOf(res)
      const reply = messages.find((m) => m.id === body.id)
      return reply.error
        ? { kind: 'error', error: reply.error }
        : { kind: 'result', result: reply.result }
    }
  }
  const pending = new Map<string, (message: any) => void>()
  const deliver = transport.onmessage!
  transport.onmessage = (message: any, extra) => {
    const take = pending.get(message.id)
    if (take) return (pending.delete(message.id), take(message))
    deliver(message, extra)
  }
  return async (request: any, options) => {
    const id = `raw-${++next}`
    const reply = new Promise<any>((resolve, reject) => {
      pending.set(id, resolve)
      options?.signal?.addEventListener('abort', () => reject(options.signal!.reason))
    })
    await transport.send({ jsonrpc: '2.0', id, ...request })
    const m = await reply
    return m.error ? { kind: 'error', error: m.error } : { kind: 'result', result: m.result }
  }
}

const textOf = (r: unknown) =>
  (r as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('')

after(() => {
  for (const child of children) child.kill()
  rmSync(dir, { recursive: true, force: true })
})

for (const kind of ['stdio', 'http'] as const) {
  for (const era of ['legacy', 'modern'] as const) {
    describe(`modern fixture over ${kind}, ${era} era`, () => {
      const log = newLog()
      const args = ['--log', log, '--ttl-ms', String(TTL_MS)]
      let url: URL | undefined
      let client: Client
      let asked: string[]
      let transport: Transport

      const connect = async (answer?: object) => {
        const made = newClient(era, answer)
        const t = transportFor(kind, { url, args })
        await made.client.connect(t, WAIT)
        return { ...made, transport: t }
      }

      before(async () => {
        if (kind === 'http') url = await startHttp(args)
        ;({ client, asked, transport } = await connect())
      })
      after(async () => {
        await client?.close()
      })

      it('negotiates the pinned era and lists tools, with cache hints on modern only', async () => {
        assert.equal(client.getProtocolEra(), era)
        assert.equal(
          client.getNegotiatedProtocolVersion(),
          era === 'modern' ? MODERN : '2025-11-25',
        )
        const listed = await client.listTools(undefined, WAIT)
        assert.deepEqual(
          listed.tools.map((t) => t.name),
          ['echo', 'shapes', 'slow', 'confirm', 'confirm-url', 'research', 'change'],
        )
        // the 2026-07-28 Tool has no `execution`: the v2 server drops it from the modern wire (see
        // migration/upgrade-to-v2.md), so a modern client learns that research is a task only
        // from its call's `resultType: 'task'`
        const research = listed.tools.find((t) => t.name === 'research')
        assert.equal(research?.execution?.taskSupport, era === 'legacy' ? 'required' : undefined)
        const shapes = listed.tools.find((t) => t.name === 'shapes')
        assert.equal(shapes?.annotations?.readOnlyHint, true)
        assert.equal(shapes?.title, 'Every content shape')
        if (era === 'modern') {
          assert.equal(listed.ttlMs, TTL_MS)
          assert.equal(listed.cacheScope, 'private')
          // the v2 client answers a second list from its cache: one tools/list reached the server
          await client.listTools(undefined, WAIT)
          assert.equal(readLog(log).filter((e) => e.method === 'tools/list').length, 1)
          assert.ok(client.getServerCapabilities()?.extensions?.['io.modelcontextprotocol/tasks'])
        } else {
          assert.equal(listed.ttlMs, undefined, 'no cache hints on the 2025 era')
        }
      })

      it('calls echo and shapes; over HTTP modern requests carry Mcp-Method and Mcp-Name', async () => {
        const echo = await client.callTool({ name: 'echo', arguments: { text: 'hi' } }, WAIT)
        assert.equal(textOf(echo), 'echo: hi')
        const shapes = (await client.callTool(
          { name: 'shapes', arguments: {} },
          WAIT,
        )) as CallToolResult
        assert.deepEqual(
          shapes.content.map((c) => c.type),
          ['text', 'image', 'resource', 'resource_link'],
        )
        assert.deepEqual(shapes.structuredContent, {
          count: 4,
          kinds: ['text', 'image', 'resource', 'resource_link'],
        })
        const image = shapes.content[1] as { data: string; mimeType: string }
        assert.equal(Buffer.from(image.data, 'base64').subarray(1, 4).toString(), 'PNG')
        const call = readLog(log).find((e) => e.method === 'tools/call' && e.name === 'echo')
        assert.equal(call?.era, era)
        if (kind === 'http' && era === 'modern') {
          assert.equal(call?.headers?.['mcp-method'], 'tools/call')
          assert.equal(call?.headers?.['mcp-name'], 'echo')
          assert.equal(call?.headers?.['mcp-protocol-version'], MODERN)
        }
        if (kind === 'http' && era === 'legacy') assert.ok(call?.headers?.['mcp-session-id'])
      })

      it('slow reports progress per step, and stops when the call is aborted', async () => {
        const progress: number[] = []
        const done = await client.callTool(
          { name: 'slow', arguments: { steps: 3, ms: 40 } },
          {
            ...WAIT,
            onprogress: (p) => void progress.push(p.progress),
          },
        )
        assert.equal(textOf(done), 'slow done 3')
        // each step's progress, in order; the last may come after the result on a loaded machine
        assert.deepEqual(progress.slice(0, 2), [1, 2])
        assert.ok(progress.length <= 3 && (progress[2] ?? 3) === 3, progress.join())

        const controller = new AbortController()
        const pending = client.callTool(
          { name: 'slow', arguments: { steps: 100, ms: 50 } },
          { ...WAIT, signal: controller.signal },
        )
        setTimeout(() => controller.abort(), 150)
        await assert.rejects(pending, /abort/i)
        await until('the fixture to log the abort', () =>
          readLog(log).some((e) => e.event === 'aborted'),
        )
      })

      it('confirm and confirm-url are answered through the client elicitation handler', async () => {
        asked.length = 0
        const form = await client.callTool({ name: 'confirm', arguments: { what: 'deploy' } }, WAIT)
        assert.equal(textOf(form), 'confirm deploy: accept {"ok":true}')
        const link = await client.callTool(
          { name: 'confirm-url', arguments: { what: 'login' } },
          WAIT,
        )
        assert.equal(textOf(link), 'confirm-url login: accept')
        assert.deepEqual(asked, ['form: Allow deploy?', 'url: Open the page to allow login'])
        // modern: two rounds (input_required, then the retry with inputResponses); legacy: one call
        const rounds = readLog(log).filter((e) => e.method === 'tools/call' && e.name === 'confirm')
        assert.equal(rounds.length, era === 'modern' ? 2 : 1)

        const refusing = await connect({ action: 'decline' })
        try {
          const declined = await refusing.client.callTool(
            { name: 'confirm', arguments: { what: 'rm' } },
            WAIT,
          )
          assert.equal(textOf(declined), 'confirm rm: decline')
        } finally {
          await refusing.client.close()
        }
      })

      it('research runs as a task through ext-tasks on modern (and is refused clearly on legacy)', async () => {
        if (era === 'legacy') {
          await assert.rejects(
            client.callTool({ name: 'research', arguments: { topic: 'x' } }, WAIT),
            /research runs only as a task, and tasks need the 2026-07-28 era/,
          )
          return
        }
        await assert.rejects(
          client.callTool({ name: 'research', arguments: { topic: 'x' } }, WAIT),
          /declare the io\.modelcontextprotocol\/tasks extension/,
        )
        const session = createTaskSessionFromClient(client, {
          endpointId: `fixture-${kind}`,
          rawDispatch: rawDispatcher(kind, transport, url),
          v2RequestFraming: {
            protocolVersion: MODERN,
            clientInfo: { name: 'fixture-test', version: '1.0.0' },
            clientCapabilities: {},
          },
        })
        try {
          const execution = await session.callTool('research', { topic: 'mcp', steps: 3, ms: 30 })
          assert.equal(execution.kind, 'task')
          const statuses: string[] = []
          const { outcome } = await execution.settle({
            onEvent: (ev) => {
              if (ev.type === 'task') statuses.push(ev.task.statusMessage ?? '')
            },
          })
          assert.equal(outcome.status, 'completed')
          assert.equal(
            textOf(resultFromTaskOutcome(outcome)),
            'research on mcp: done after 3 steps',
          )
          assert.ok(statuses.length >= 2, `status messages seen: ${statuses.join(', ')}`)

          const long = await session.callTool('research', { topic: 'long', steps: 100, ms: 50 })
          await long.cancel()
          assert.equal((await long.result()).status, 'cancelled')
          await until('the fixture to log the task cancel', () =>
            readLog(log).some((e) => e.event === 'task-cancelled'),
          )
          assert.ok(readLog(log).some((e) => e.method === 'tasks/cancel'))
        } finally {
          await session.close()
        }
      })

      it('reads resources (plain and templated) and gets the prompt', async () => {
        const { resources } = await client.listResources(undefined, WAIT)
        assert.deepEqual(
          resources.map((r) => r.uri),
          ['fixture://readme'],
        )
        const { resourceTemplates } = await client.listResourceTemplates(undefined, WAIT)
        assert.deepEqual(
          resourceTemplates.map((t) => t.uriTemplate),
          ['fixture://items/{id}'],
        )
        const readme = await client.readResource({ uri: 'fixture://readme' }, WAIT)
        assert.match((readme.contents[0] as { text: string }).text, /^# Fixture readme/)
        assert.equal(readme.contents[0].mimeType, 'text/markdown')
        const item = await client.readResource({ uri: 'fixture://items/42' }, WAIT)
        assert.equal((item.contents[0] as { text: string }).text, 'item 42')
        await assert.rejects(client.readResource({ uri: 'fixture://nope' }, WAIT), /not found/i)
        const prompt = await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } }, WAIT)
        assert.deepEqual(prompt.messages, [
          { role: 'user', content: { type: 'text', text: 'Hello, Ada!' } },
        ])
      })

      // last: it changes what this server lists
      it('change announces list_changed (subscriptions/listen on modern, a notification on legacy)', async () => {
        const heard: string[] = []
        client.setNotificationHandler(
          'notifications/tools/list_changed',
          () => void heard.push('tools'),
        )
        client.setNotificationHandler(
          'notifications/prompts/list_changed',
          () => void heard.push('prompts'),
        )
        const subscription =
          era === 'modern'
            ? await client.listen({ toolsListChanged: true, promptsListChanged: true })
            : undefined
        try {
          await client.callTool({ name: 'change', arguments: {} }, WAIT)
          await until(
            () => `list_changed for tools and prompts (heard: ${heard.join(', ')})`,
            () => heard.includes('tools') && heard.includes('prompts'),
          )
          // a list_changed makes the v2 client drop its cached list (modern: despite ttlMs)
          const { tools } = await client.listTools(undefined, WAIT)
          assert.ok(
            tools.some((t) => t.name === 'added'),
            tools.map((t) => t.name).join(' '),
          )
          assert.equal(
            textOf(await client.callTool({ name: 'added', arguments: {} }, WAIT)),
            'added',
          )
          const { prompts } = await client.listPrompts(undefined, WAIT)
          assert.deepEqual(
            prompts.map((p) => p.name),
            ['greet', 'farewell'],
          )
        } finally {
          await subscription?.close()
        }
      })
    })
  }
}

describe('modern fixture with --modern-only', () => {
  for (const kind of ['stdio', 'http'] as const) {
    it(`over ${kind}: refuses a legacy pin with a clear error, serves a modern one`, async () => {
      const log = newLog()
      const args = ['--modern-only', '--log', log]
      const url = kind === 'http' ? await startHttp(args) : undefined
      const legacy = newClient('legacy').client
      await assert.rejects(
        legacy.connect(transportFor(kind, { url, args }), WAIT),
        (error: Error) => {
          assert.match(error.message, /unsupported protocol version|2026-07-28/i)
          return true
        },
      )
      await legacy.close()
      const modern = newClient('modern').client
      await modern.connect(transportFor(kind, { url, args }), WAIT)
      try {
        assert.equal(modern.getProtocolEra(), 'modern')
        const echo = await modern.callTool({ name: 'echo', arguments: { text: 'still' } }, WAIT)
        assert.equal(textOf(echo), 'echo: still')
      } finally {
        await modern.close()
      }
      assert.ok(readLog(log).some((e) => e.method === 'initialize' && e.era === 'legacy'))
    })
  }
})

describe('modern fixture arguments', () => {
  it('refuses an unknown argument and a bad --ttl-ms, naming them (exit 2)', async () => {
    for (const [args, message] of [
      [['--bogus'], /modern\.mjs: unknown argument --bogus/],
      [['--ttl-ms', 'soon'], /modern\.mjs: --ttl-ms needs a non-negative integer, got soon/],
    ] as const) {
      const child = spawn(process.execPath, [FIXTURE, ...args], {
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      let stderr = ''
      child.stderr.on('data', (d) => (stderr += d))
      const code = await new Promise((resolve) => child.on('exit', resolve))
      assert.equal(code, 2)
      assert.match(stderr, message)
    }
  })
})
