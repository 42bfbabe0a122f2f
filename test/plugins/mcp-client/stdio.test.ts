// mcp-client over stdio against real servers: server-everything and server-memory from npm, and
// the SDK-based fixture server with its hostile modes.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { mcpClientConfig, publicToolName } from '../../../plugins/mcp-client/api.ts'
import { serverEnv } from '../../../plugins/mcp-client/stdio.ts'
import {
  alive,
  everything,
  fixture,
  FIXTURE,
  mcpHarness,
  MEMORY,
  text,
  openaiModel,
  type McpHarness,
} from '../../helpers/mcp.ts'
import { ROOT } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'
import { modelServer } from '../../helpers/model-server.ts'
import { resultText } from '../../../plugins/agent-loop/loop.ts'

describe('tool names', () => {
  it('mcp__<server>__<raw>, with invalid characters and long names made unique by a hash', () => {
    assert.equal(publicToolName('github', 'create_issue'), 'mcp__github__create_issue')
    const dotted = publicToolName('fs', 'read.file')
    assert.match(dotted, /^mcp__fs__read_file_[0-9a-f]{12}$/)
    assert.notEqual(
      dotted,
      publicToolName('fs', 'read_file'),
      'a changed name never meets the name it was changed into',
    )
    const unicode = publicToolName('srv', 'résumé😀')
    assert.match(
      unicode,
      /^mcp__srv__r_sum___[0-9a-f]{12}$/,
      'one _ per character, not per UTF-16 unit',
    )
    const long = publicToolName('server', 'a'.repeat(80))
    const long2 = publicToolName('server', `${'a'.repeat(79)}b`)
    assert.equal(long.length, 64)
    assert.match(long, /^[A-Za-z0-9_-]{1,64}$/)
    assert.notEqual(long, long2, 'two long names with one prefix stay apart')
    assert.equal(publicToolName('s', 'x'.repeat(56)).length, 64, 'exactly 64 needs no hash')
    assert.equal(publicToolName('s', 'x'.repeat(56)), `mcp__s__${'x'.repeat(56)}`)
    assert.match(publicToolName('s', 'x'.repeat(57)), /_[0-9a-f]{12}$/, '65 does')
  })

  it('serverName, transports and env are checked in the config', () => {
    const bad = (config: Record<string, unknown>) => {
      const r = mcpClientConfig.safeParse(config)
      assert.ok(!r.success, JSON.stringify(config))
      return r.error.issues.map((i) => i.message).join('; ')
    }
    assert.match(bad({ serverName: 'has space', command: 'x' }), /1-64 characters/)
    assert.match(bad({ serverName: 'x'.repeat(65), command: 'x' }), /1-64 characters/)
    assert.match(bad({ serverName: 's', command: 'x', url: 'http://a/' }), /not both/)
    assert.match(bad({ serverName: 's' }), /needs command/)
    assert.match(bad({ serverName: 's', transport: 'http' }), /needs url/)
    assert.match(
      bad({ serverName: 's', command: 'x', env: { LD_PRELOAD: '/evil.so' } }),
      /LD_PRELOAD may not be set/,
    )
    assert.match(bad({ serverName: 's', url: 'file:///etc/passwd' }), /./)
    assert.ok(
      mcpClientConfig.safeParse({ serverName: 'ok_name-1', url: 'https://example.com/mcp' })
        .success,
    )
  })

  it('a server gets a scrubbed environment: the safe defaults plus its entry, never a hijack variable', () => {
    const env = serverEnv(
      { FOO: 'bar', NODE_OPTIONS: '--require evil' },
      { PATH: '/bin', HOME: '/h', GITHUB_TOKEN: 'secret', LD_PRELOAD: 'x', BASH_FUNC: '() { :; }' },
    )
    assert.deepEqual(env, { PATH: '/bin', HOME: '/h', FOO: 'bar' })
  })
})

describe('mcp-client: server-everything over stdio', () => {
  let h: McpHarness
  before(async () => {
    h = await mcpHarness()
    await h.add('everything', everything('everything', { env: { FROM_ENTRY: 'yes' } }))
  })
  after(() => h.close())

  it('lists its tools under mcp__everything__ and calls echo and get-sum through the pipeline', async () => {
    assert.equal(h.status('everything').state, 'connected')
    const names = h.rt.list().map((t) => t.name)
    for (const raw of [
      'echo',
      'get-sum',
      'trigger-long-running-operation',
      'get-structured-content',
    ])
      assert.ok(names.includes(`mcp__everything__${raw}`), raw)
    assert.ok(
      names.includes('mcp__everything__simulate-research-query'),
      'a task-only tool is registered (it runs as an MCP task: test/plugins/mcp-client/bridge-matrix.test.ts)',
    )
    assert.deepEqual(h.status('everything').problems, [])
    assert.deepEqual(h.status('everything').protocol, { era: 'legacy', version: '2025-11-25' })
    const echo = await h.rt.call('mcp__everything__echo', { message: 'hello' })
    assert.equal(echo.status, 'ok')
    assert.equal(text(echo), 'Echo: hello')
    assert.equal(
      text(await h.rt.call('mcp__everything__get-sum', { a: 2, b: 40 })),
      'The sum of 2 and 40 is 42.',
    )
    const invalid = await h.rt.call('mcp__everything__get-sum', { a: 'two' })
    assert.equal(
      invalid.status,
      'INVALID_ARGS',
      'the upstream schema is checked before the call leaves',
    )
    const tool = h.rt.list().find((t) => t.name === 'mcp__everything__echo')!
    assert.equal(tool.source, 'mcp:everything')
    assert.equal((tool.annotations as Record<string, unknown>).mcpTool, 'echo')
  })

  it('keeps structured content, and turns images into placeholders', async () => {
    const structured = await h.rt.call('mcp__everything__get-structured-content', {
      location: 'Chicago',
    })
    assert.equal(structured.status, 'ok')
    assert.equal(typeof (structured.structured as { temperature: number }).temperature, 'number')
    const image = await h.rt.call('mcp__everything__get-tiny-image', {})
    assert.match(text(image), /\[image image\/png, \d+ bytes\]/)
    assert.ok(!text(image).includes('iVBOR'), 'no base64 in the text')
    const links = await h.rt.call('mcp__everything__get-resource-links', { count: 2 })
    assert.equal(links.content.filter((c) => c.type === 'resource_link').length, 2)
  })

  it('relays progress from trigger-long-running-operation', async () => {
    const events: unknown[] = []
    const result = await h.rt.call(
      'mcp__everything__trigger-long-running-operation',
      { duration: 0.4, steps: 4 },
      { onProgress: (e) => events.push(e) },
    )
    assert.equal(result.status, 'ok', text(result))
    assert.ok(events.length >= 2, `progress events: ${JSON.stringify(events)}`)
    assert.deepEqual(Object.keys(events[0] as object).sort(), ['message', 'progress', 'total'])
  })

  it('a call past callMs with no progress is TIMEOUT, and the server keeps working', async () => {
    await h.add('slow', everything('slow', { callMs: 300 }))
    const started = Date.now()
    // no progress without a progressToken: the operation is silent, so callMs ends it
    const result = await h.rt.call('mcp__slow__trigger-long-running-operation', {
      duration: 5,
      steps: 1,
    })
    assert.equal(result.status, 'TIMEOUT', text(result))
    assert.match(result.error!.message, /300 ms/)
    assert.ok(Date.now() - started < 3000)
    assert.equal(
      text(await h.rt.call('mcp__slow__echo', { message: 'still here' })),
      'Echo: still here',
    )
    await h.remove('slow')
  })

  it('reads resources and prompts through the mcp tools', async () => {
    const listed = await h.rt.call('list_mcp_resources', {})
    const items = (listed.structured as { items: Array<{ server: string; uri: string }> }).items
    assert.ok(
      items.some((r) => r.server === 'everything' && r.uri.startsWith('demo://resource/static/')),
      JSON.stringify(items).slice(0, 300),
    )
    const templates = await h.rt.call('list_mcp_resource_templates', { server: 'everything' })
    assert.match(text(templates), /demo:\/\/resource\/dynamic\/text\/\{resourceId\}/)
    const read = await h.rt.call('read_mcp_resource', {
      server: 'everything',
      uri: 'demo://resource/dynamic/text/2',
    })
    assert.match(text(read), /Resource 2/)
    const prompts = await h.rt.call('list_mcp_prompts', {})
    assert.match(text(prompts), /args-prompt/)
    const prompt = await h.rt.call('get_mcp_prompt', {
      server: 'everything',
      name: 'args-prompt',
      arguments: { city: 'Lisbon' },
    })
    assert.match(text(prompt), /user: .*Lisbon/)
    const nobody = await h.rt.call('read_mcp_resource', { server: 'nobody', uri: 'x://y' })
    assert.equal(nobody.status, 'EXEC_FAILED')
    assert.match(
      nobody.error!.message,
      /no MCP server is named "nobody"; the servers are: everything/,
    )
  })

  it('declares roots only when the entry lists some, and answers with those; the server sees only a scrubbed environment', async () => {
    // server-everything registers get-roots-list only for a client that declares roots
    assert.ok(
      !h.rt.list().some((t) => t.name === 'mcp__everything__get-roots-list'),
      'no roots are declared by default',
    )
    await h.add('rooted', everything('rooted', { roots: ['.', 'plugins'] }))
    const roots = text(await h.rt.call('mcp__rooted__get-roots-list', {}))
    assert.ok(roots.includes(pathToFileURL(ROOT).href.replace(/\/$/, '')), roots)
    assert.ok(roots.includes(pathToFileURL(join(ROOT, 'plugins')).href), roots)
    await h.remove('rooted')
    process.env.YOKE_TEST_SECRET_TOKEN = 'must-not-leak'
    try {
      await h.add('envcheck', everything('envcheck', { env: { FROM_ENTRY: 'yes' } }))
      const env = JSON.parse(text(await h.rt.call('mcp__envcheck__get-env', {}))) as Record<
        string,
        string
      >
      assert.equal(env.FROM_ENTRY, 'yes')
      assert.equal(env.YOKE_TEST_SECRET_TOKEN, undefined)
      assert.equal(env.NODE_OPTIONS, undefined)
      assert.ok(env.PATH)
      await h.remove('envcheck')
    } finally {
      delete process.env.YOKE_TEST_SECRET_TOKEN
    }
  })

  it('a second instance with a server name in use fails at load, naming both instances', async () => {
    const fiber = await h.add('again', everything('everything'))
    assert.equal(fiber.state, 'failed')
    assert.equal(fiber.error?.code, 'MCP_NAME_CONFLICT')
    assert.match(
      String(fiber.error?.message),
      /"everything" is used by instance "everything" and again by instance "again"/,
    )
    assert.equal(h.status('everything').state, 'connected', 'the first one is untouched')
    await h.remove('again')
  })
})

describe('mcp-client: supervision and hostile servers', () => {
  let h: McpHarness
  let dir: string
  before(async () => {
    h = await mcpHarness()
    dir = mkdtempSync(join(tmpdir(), 'yoke-mcp-'))
    await h.add('healthy', fixture('healthy'))
  })
  after(async () => {
    await h.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const healthy = async () =>
    assert.equal(
      text(await h.rt.call('mcp__healthy__echo', { text: 'ok' })),
      'ok',
      'the other server is unharmed',
    )

  it('a timeout and an abort both reach the server as notifications/cancelled, and are told apart', async () => {
    const mark = join(dir, 'cancel.log')
    const logged = () => (existsSync(mark) ? readFileSync(mark, 'utf8') : '')
    // The sleep reports progress every 20 ms, so callMs (3 s without progress) only ends a call
    // the server has not started, and the timeout is maxCallMs (6 s in all) on a call the server
    // is busy with: the case that matters, as that server would otherwise work on for nobody.
    // It used to fail under load: the SDK's own maxTotalTimeout, noticed on a progress
    // notification, rejected the call without telling the server (calls.ts), unless the
    // runtime's deadline for the same 6 s came first. The abort comes on the first progress: the
    // server has the call. What the server logged is named when the wait fails.
    await h.add(
      'cancel',
      fixture('cancel', 'normal', { env: { MARK_FILE: mark }, callMs: 3000, maxCallMs: 6000 }),
    )
    let progress = 0
    const timedOut = await h.rt.call(
      'mcp__cancel__sleep',
      { ms: 8000 },
      { onProgress: () => void progress++ },
    )
    assert.equal(timedOut.status, 'TIMEOUT')
    const controller = new AbortController()
    const aborted = await h.rt.call(
      'mcp__cancel__sleep',
      { ms: 8000 },
      { signal: controller.signal, onProgress: () => controller.abort() },
    )
    assert.equal(aborted.status, 'ABORTED')
    await until(
      () =>
        `both cancellations logged by the server (the timed-out call: ${progress} progress reports, "${timedOut.error?.message}"; the server logged: ${JSON.stringify(logged())})`,
      () => (logged().match(/^cancelled /gm) ?? []).length === 2,
      { ms: 10_000 },
    )
    await h.remove('cancel')
  })

  it('killing the server mid-call ends the call with SERVER_UNAVAILABLE within 1 s; it reconnects and its tools stay', async () => {
    await h.add('victim', fixture('victim', 'normal', { reconnect: { initialDelayMs: 50 } }))
    const pid = h.status('victim').pid!
    const call = h.rt.call('mcp__victim__sleep', { ms: 10_000 })
    await new Promise((resolve) => setTimeout(resolve, 150))
    const killedAt = Date.now()
    process.kill(pid, 'SIGKILL')
    const result = await call
    assert.equal(result.status, 'SERVER_UNAVAILABLE')
    assert.ok(Date.now() - killedAt < 1000, `ended ${Date.now() - killedAt} ms after the kill`)
    assert.match(result.error!.message, /"victim" is unavailable.*killed by SIGKILL.*reconnecting/)
    await h.until('reconnected', () => h.status('victim').state === 'connected')
    assert.notEqual(h.status('victim').pid, pid)
    assert.equal(text(await h.rt.call('mcp__victim__echo', { text: 'back' })), 'back')
    await healthy()
    await h.remove('victim')
  })

  it('during an outage calls end at once, saying which attempt it is', async () => {
    await h.add('flaky', fixture('flaky', 'normal', { reconnect: { initialDelayMs: 5000 } }))
    process.kill(h.status('flaky').pid!, 'SIGKILL')
    await h.until('reconnecting', () => h.status('flaky').state === 'reconnecting')
    const started = Date.now()
    const result = await h.rt.call('mcp__flaky__echo', { text: 'x' })
    assert.equal(result.status, 'SERVER_UNAVAILABLE')
    assert.ok(Date.now() - started < 200)
    assert.match(result.error!.message, /unavailable, reconnecting, attempt 1 of 10/)
    assert.match(result.error!.hint!, /yoke mcp list/)
    await h.remove('flaky')
  })

  it('a crash-looping server gives up after its budget, its tools go, and restart revives it', async () => {
    await h.add(
      'loop',
      fixture('loop', 'crash', {
        env: { CRASH_MS: '150' },
        reconnect: { initialDelayMs: 20, maxDelayMs: 1000, maxAttempts: 3 },
      }),
    )
    await h.until('gave up', () => h.status('loop').state === 'gave-up', 20_000)
    assert.ok(!h.rt.list().some((t) => t.name.startsWith('mcp__loop__')), 'tools unregistered')
    assert.match(
      h.status('loop').detail,
      /gave up after 3 attempts.*exited with code 7.*yoke mcp restart/,
    )
    assert.ok(h.logs.some((l) => l.level === 'error' && /"loop": it gave up/.test(l.message)))
    // its tools are gone; a call of one says the server gave up, not UNKNOWN_TOOL
    const gone = await h.rt.call('mcp__loop__echo', { text: 'x' })
    assert.equal(gone.status, 'SERVER_UNAVAILABLE')
    assert.match(gone.error!.message, /gave up after 3 attempts/)
    assert.ok(h.hub.restart('loop'))
    await h.until(
      'connected again',
      () => h.status('loop').state === 'connected' && h.status('loop').tools > 0,
    )
    await healthy()
    await h.remove('loop')
  })

  it('garbage on stdout before its first message (a banner) is reported and skipped; the server still works', async () => {
    await h.add('garbage', fixture('garbage', 'garbage'))
    assert.equal(h.status('garbage').state, 'connected')
    assert.equal(text(await h.rt.call('mcp__garbage__echo', { text: 'fine' })), 'fine')
    assert.ok(h.logs.some((l) => /not JSON-RPC: "this is not json"/.test(l.message)))
    await h.remove('garbage')
  })

  it('a server that exits during the handshake is reported with its stderr and retried; nothing else is harmed', async () => {
    await h.add(
      'quitter',
      fixture('quitter', 'exit-handshake', { reconnect: { initialDelayMs: 5000 } }),
    )
    const status = h.status('quitter')
    assert.equal(status.state, 'reconnecting')
    assert.match(status.lastError!, /code 3.*fixture: refusing to start/)
    assert.ok(h.logs.some((l) => l.level === 'warn' && /"quitter" could not start/.test(l.message)))
    await healthy()
    await h.remove('quitter')
  })

  it('failOnStartupError: true fails the instance instead', async () => {
    const fiber = await h.add(
      'strict',
      fixture('strict', 'exit-handshake', { failOnStartupError: true }),
    )
    assert.equal(fiber.state, 'failed')
    assert.equal(fiber.error?.code, 'MCP_CONNECT_FAILED')
    assert.match(
      String(fiber.error?.message),
      /MCP server "strict" could not start: .*refusing to start/,
    )
    await h.remove('strict')
  })

  it('a server that never answers tools/list fails its startup within startupMs', async () => {
    const started = Date.now()
    await h.add(
      'mute',
      fixture('mute', 'no-list', { startupMs: 2000, reconnect: { initialDelayMs: 5000 } }),
    )
    assert.ok(Date.now() - started < 6000)
    assert.equal(h.status('mute').state, 'reconnecting')
    assert.match(
      h.status('mute').lastError!,
      /Request timed out/,
      'the handshake passed; tools/list did not answer',
    )
    await healthy()
    await h.remove('mute')
  })

  it('a raw name listed twice keeps its first definition and says so; the others register', async () => {
    await h.add('dupes', fixture('dupes', 'duplicates'))
    assert.equal(h.status('dupes').state, 'connected')
    assert.ok(h.status('dupes').tools > 1)
    assert.notEqual(
      h.rt.list().find((t) => t.name === 'mcp__dupes__echo')?.description,
      'a second echo',
    )
    assert.match(
      h.status('dupes').problems.join(),
      /names "echo" twice; the first is kept, the second left out/,
    )
    await h.remove('dupes')
  })

  it('a schema 11 levels deep, or with a pattern that backtracks exponentially, skips that tool only', async () => {
    await h.add('deep', fixture('deep', 'deep'))
    const names = h.rt.list().map((t) => t.name)
    assert.ok(!names.includes('mcp__deep__deep'))
    assert.ok(!names.includes('mcp__deep__redos'))
    assert.match(
      h.status('deep').problems.join(),
      /skipped tool "redos": its input schema has the pattern "\(\?<=a\)b", which yoke does not run: it uses a lookbehind/,
    )
    assert.ok(names.includes('mcp__deep__echo'))
    assert.match(
      h.status('deep').problems.join(),
      /skipped tool "deep": its input schema nests 11 levels deep; the limit is 10/,
    )
    await h.remove('deep')
  })

  it('an 11 MB response arrives whole (the buffer is above the SDK 10 MiB) and is bounded by the output limits', async () => {
    await h.add('big', fixture('big'))
    const result = await h.rt.call('mcp__big__big', { bytes: 11 * 1024 * 1024 })
    assert.equal(result.status, 'ok', text(result).slice(0, 300))
    assert.ok(result.truncated && result.truncated.bytes >= 11 * 1024 * 1024)
    assert.ok(
      readFileSync(result.truncated.spilled!, 'utf8').includes('x'.repeat(11 * 1024 * 1024)),
    )
    await h.remove('big')
  })

  it('a message over maxMessageBytes closes that connection only', async () => {
    await h.add(
      'capped',
      fixture('capped', 'normal', {
        maxMessageBytes: 1024 * 1024,
        reconnect: { initialDelayMs: 50 },
      }),
    )
    const result = await h.rt.call('mcp__capped__big', { bytes: 2 * 1024 * 1024 })
    assert.equal(result.status, 'SERVER_UNAVAILABLE')
    // the call says what happened: the cap, its size and how to raise it, not "exited with code 0"
    assert.match(
      result.error!.message,
      /a message over 1048576 bytes \(1 MiB, maxMessageBytes\); raise maxMessageBytes/,
    )
    assert.doesNotMatch(result.error!.message, /exited with code/)
    assert.ok(h.logs.some((l) => /over 1048576 bytes \(1 MiB, maxMessageBytes\)/.test(l.message)))
    await h.until('reconnected', () => h.status('capped').state === 'connected')
    await healthy()
    await h.remove('capped')
  })

  it('a list_changed notification re-syncs: the changed tool is replaced, the rest untouched', async () => {
    await h.add('changing', fixture('changing', 'normal', { env: { CHANGE_AFTER_MS: '300' } }))
    const before = h.rt.list().filter((t) => t.name.startsWith('mcp__changing__'))
    assert.match(before.find((t) => t.name === 'mcp__changing__echo')!.description!, /v1/)
    await h.until('v2', () =>
      /v2/.test(h.rt.list().find((t) => t.name === 'mcp__changing__echo')?.description ?? ''),
    )
    const afterSync = h.rt.list().filter((t) => t.name.startsWith('mcp__changing__'))
    assert.equal(
      afterSync.find((t) => t.name === 'mcp__changing__pid')!.id,
      before.find((t) => t.name === 'mcp__changing__pid')!.id,
      'an unchanged tool keeps its registration',
    )
    assert.equal(text(await h.rt.call('mcp__changing__echo', { text: 'new' })), 'new')
    await h.remove('changing')
  })

  it('server-to-client requests: roots and sampling answered only when declared, else a JSON-RPC error', async () => {
    assert.match(
      text(await h.rt.call('mcp__healthy__ask-client', { method: 'roots/list' })),
      /error -32601/,
      'no roots in the entry: roots/list is not declared, nor answered',
    )
    await h.add('rooted', fixture('rooted', 'normal', { roots: [dir] }))
    assert.deepEqual(
      JSON.parse(text(await h.rt.call('mcp__rooted__ask-client', { method: 'roots/list' }))),
      { roots: [{ uri: pathToFileURL(dir).href, name: basename(dir) }] },
    )
    await h.remove('rooted')
    assert.match(
      text(await h.rt.call('mcp__healthy__ask-client', { method: 'sampling/createMessage' })),
      /error -32601/,
    )
  })

  it("a 2025-era elicitation/create goes to the mcp hub's answerer, for the one call in flight; none: cancel", async () => {
    const params = {
      message: 'Which colour?',
      requestedSchema: { type: 'object', properties: { colour: { type: 'string' } } },
    }
    const ask = () =>
      h.rt.call('mcp__healthy__ask-client', { method: 'elicitation/create', params })
    assert.deepEqual(JSON.parse(text(await ask())), { action: 'cancel' }, 'nobody answers: cancel')
    assert.ok(
      h.logs.some((l) =>
        /"healthy" asked during .*ask-client.*→ cancel \(no approval bridge here answers questions/.test(
          l.message,
        ),
      ),
    )
    const asked: Array<{ message: string; call?: string; mode: string }> = []
    const off = h.hub.answerer({
      name: 'test',
      ask: async (q) => {
        asked.push({ message: q.message, call: q.call?.name, mode: q.mode })
        return { action: 'accept', content: { colour: 'green' } }
      },
    })
    try {
      assert.deepEqual(JSON.parse(text(await ask())), {
        action: 'accept',
        content: { colour: 'green' },
      })
      assert.deepEqual(asked, [
        { message: 'Which colour?', call: 'mcp__healthy__ask-client', mode: 'form' },
      ])
    } finally {
      off()
    }
  })

  it('sampling, when opted in, is answered by the model service (a real provider on the wire), capped, and refused without a model', async () => {
    const server = await modelServer([
      { text: 'sampled answer', usage: { inputTokens: 9, outputTokens: 2 } },
    ])
    const model = await openaiModel(
      h,
      'sampling-model',
      'gpt-sample',
      server.openaiBaseUrl,
      'TEST_SAMPLING_KEY',
    )
    try {
      await h.add(
        'sampler',
        fixture('sampler', 'normal', { sampling: true, samplingMaxTokens: 50 }),
      )
      const params = {
        messages: [{ role: 'user', content: { type: 'text', text: 'say something' } }],
        systemPrompt: 'be brief',
        maxTokens: 500,
      }
      const answer = JSON.parse(
        text(
          await h.rt.call('mcp__sampler__ask-client', { method: 'sampling/createMessage', params }),
        ),
      )
      assert.deepEqual(answer, {
        role: 'assistant',
        content: { type: 'text', text: 'sampled answer' },
        model: 'gpt-sample',
        stopReason: 'endTurn',
      })
      const sent = server.requests[0]!.body
      assert.deepEqual(sent.messages, [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'say something' },
      ])
      assert.equal(sent.max_tokens, 50, "the server's maxTokens is capped by samplingMaxTokens")
      assert.ok(
        h.logs.some((l) =>
          /MCP server "sampler" sampled gpt-sample \(9 in \/ 2 out tokens\)/.test(l.message),
        ),
      )
      await h.kernel.remove(model)
      assert.match(
        text(
          await h.rt.call('mcp__sampler__ask-client', { method: 'sampling/createMessage', params }),
        ),
        /error -32603: .*no model to sample with/,
      )
    } finally {
      await h.remove('sampler')
      await h.kernel.remove(model).catch(() => {})
      await server.close()
    }
  })

  it('closing an instance kills the whole process tree (a server started through a wrapper, as npx does)', async () => {
    await h.add('wrapped', fixture('wrapped', 'wrapper'))
    const wrapper = h.status('wrapped').pid!
    const server = Number(text(await h.rt.call('mcp__wrapped__pid', {})))
    assert.notEqual(server, wrapper)
    assert.ok(alive(server))
    await h.remove('wrapped')
    await h.until('the grandchild is gone', () => !alive(server) && !alive(wrapper), 10_000)
  })

  it('a stubborn process left in the group (it ignores SIGTERM) is killed before close returns', async () => {
    const mark = join(dir, 'stubborn.log')
    await h.add('stubborn', fixture('stubborn', 'stubborn-wrapper', { env: { MARK_FILE: mark } }))
    const server = Number(text(await h.rt.call('mcp__stubborn__pid', {})))
    assert.ok(alive(server))
    await h.remove('stubborn')
    assert.ok(!alive(server), 'gone when remove resolves, not on a timer after')
    assert.match(readFileSync(mark, 'utf8'), /ignored SIGTERM/)
  })

  it('what a crashed server started in its group is killed, not leaked across restarts', async () => {
    const pidFile = join(dir, 'helper.pid')
    await h.add('helper', {
      serverName: 'helper',
      command: 'sh',
      args: [
        '-c',
        `sleep 300 & echo $! >> ${pidFile}; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(FIXTURE)} crash`,
      ],
      env: { CRASH_MS: '300' },
      reconnect: { initialDelayMs: 50, maxAttempts: 2 },
    })
    await h.until('gave up', () => h.status('helper').state === 'gave-up', 15_000)
    const helpers = readFileSync(pidFile, 'utf8').trim().split('\n').map(Number)
    assert.ok(helpers.length >= 2)
    await h.until('every helper gone', () => helpers.every((pid) => !alive(pid)), 5000)
    await h.remove('helper')
  })

  it('restart shows at once: a server that gave up is connecting, not gave-up', async () => {
    await h.add(
      'gone',
      fixture('gone', 'exit-handshake', { reconnect: { initialDelayMs: 20, maxAttempts: 1 } }),
    )
    await h.until('gave up', () => h.status('gone').state === 'gave-up')
    h.hub.restart('gone')
    assert.equal(h.status('gone').state, 'connecting')
    await h.until('gave up again', () => h.status('gone').state === 'gave-up')
    await h.remove('gone')
  })

  it('dispose returns only once the server process is gone, even mid-attempt', async () => {
    const mark = join(dir, 'mid.log')
    await h.add(
      'mid',
      fixture('mid', 'stubborn', {
        env: { MARK_FILE: mark, LIST_DELAY_MS: '60000' },
        startupMs: 500,
        reconnect: { initialDelayMs: 10 },
      }),
    )
    const pids = () =>
      [...readFileSync(mark, 'utf8').matchAll(/start (\d+)/g)].map((m) => Number(m[1]))
    await new Promise((resolve) => setTimeout(resolve, 300))
    await h.remove('mid')
    for (const pid of pids()) assert.ok(!alive(pid), `server ${pid} outlived its instance`)
  })

  it("a process in its own session holding the server's stdout delays nothing: a kill still ends the call, close still returns", async () => {
    const mark = join(dir, 'holder.log')
    await h.add(
      'holder',
      fixture('holder', 'holder', {
        env: { MARK_FILE: mark },
        reconnect: { initialDelayMs: 5000 },
      }),
    )
    const holder = Number(/holder (\d+)/.exec(readFileSync(mark, 'utf8'))![1])
    try {
      const call = h.rt.call('mcp__holder__sleep', { ms: 10_000 })
      await new Promise((resolve) => setTimeout(resolve, 100))
      process.kill(h.status('holder').pid!, 'SIGKILL')
      const started = Date.now()
      assert.equal((await call).status, 'SERVER_UNAVAILABLE')
      assert.ok(Date.now() - started < 1000)
      await h.until('reconnecting', () => h.status('holder').state === 'reconnecting', 5000)
      const removing = Date.now()
      await h.remove('holder')
      assert.ok(Date.now() - removing < 3000)
    } finally {
      process.kill(holder, 'SIGKILL')
    }
  })

  it('removing an instance while its server is still starting does not wait for the start', async () => {
    const mark = join(dir, 'slowstart.log')
    const adding = h.add(
      'slowstart',
      fixture('slowstart', 'normal', { env: { START_DELAY_MS: '4000', MARK_FILE: mark } }),
    )
    await h.until('spawned', () => {
      try {
        return /start \d+/.test(readFileSync(mark, 'utf8'))
      } catch {
        return false
      }
    })
    const pid = Number(/start (\d+)/.exec(readFileSync(mark, 'utf8'))![1])
    const started = Date.now()
    await h.remove('slowstart')
    await adding
    assert.ok(Date.now() - started < 2500, `removed after ${Date.now() - started} ms`)
    await h.until('its process is gone', () => !alive(pid), 5000)
  })

  it('a restart while connecting is this connection; the next outage counts from 1', async () => {
    const adding = h.add(
      'rs',
      fixture('rs', 'normal', {
        env: { START_DELAY_MS: '300' },
        reconnect: { initialDelayMs: 3000 },
      }),
    )
    await new Promise((resolve) => setTimeout(resolve, 50))
    h.hub.restart('rs')
    await adding
    await h.until('connected', () => h.status('rs').state === 'connected')
    process.kill(h.status('rs').pid!, 'SIGKILL')
    await h.until('reconnecting', () => h.status('rs').state === 'reconnecting')
    assert.match(
      h.status('rs').detail,
      /^reconnecting, attempt 1 of 10 \(last error: the server process was killed by SIGKILL\)/,
    )
    await h.remove('rs')
  })

  it('a tool whose outputSchema does not compile is skipped; the others register', async () => {
    await h.add('badout', fixture('badout', 'badoutput'))
    assert.equal(h.status('badout').state, 'connected')
    assert.ok(!h.rt.list().some((t) => t.name === 'mcp__badout__bad-output'))
    assert.match(
      h.status('badout').problems.join(),
      /skipped tool "bad-output": the server's outputSchema does not compile/,
    )
    assert.equal(text(await h.rt.call('mcp__badout__echo', { text: 'fine' })), 'fine')
    await h.remove('badout')
  })

  it('a list_changed that arrives during the sync on connect is not lost', async () => {
    await h.add(
      'racy',
      fixture('racy', 'normal', { env: { LIST_DELAY_MS: '300', CHANGE_AFTER_MS: '100' } }),
    )
    await h.until(
      'v2',
      () => /v2/.test(h.rt.list().find((t) => t.name === 'mcp__racy__echo')?.description ?? ''),
      10_000,
    )
    await h.remove('racy')
  })

  it('a throwing observer of the mcp registry harms nothing', async () => {
    const untap = h.hub.hooks.change.tap('broken', () => {
      throw new Error('observer bug')
    })
    try {
      await h.add('observed', fixture('observed'))
      assert.equal(h.status('observed').state, 'connected')
      assert.ok(h.logs.some((l) => l.level === 'error' && /observer bug/.test(l.message)))
      await h.remove('observed')
    } finally {
      h.hub.hooks.change.taps.splice(
        h.hub.hooks.change.taps.findIndex((t) => t.name === 'broken'),
        1,
      )
      void untap
    }
  })

  it('server-memory from npm: create entities and read the graph', async () => {
    await h.add('memory', {
      serverName: 'memory',
      command: process.execPath,
      args: [MEMORY],
      env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') },
    })
    const created = await h.rt.call('mcp__memory__create_entities', {
      entities: [{ name: 'yoke', entityType: 'project', observations: ['composes plugins'] }],
    })
    assert.equal(created.status, 'ok', text(created))
    const graph = await h.rt.call('mcp__memory__read_graph', {})
    assert.match(text(graph), /composes plugins/)
    await h.remove('memory')
  })
})

describe('mcp-client: result content as the server sent it', () => {
  // test/fixtures/mcp/rich.mjs (SDK v2, both eras) returns rich-content.json: every block kind,
  // each with its optional fields
  const RICH = join(ROOT, 'test/fixtures/mcp/rich.mjs')
  const upstream = JSON.parse(
    readFileSync(join(ROOT, 'test/fixtures/mcp/rich-content.json'), 'utf8'),
  ).content as Array<Record<string, unknown>>
  const IMAGE_ALT = '[image image/png, 72 bytes]'
  const AUDIO_ALT = '[audio audio/wav, 12 bytes]'
  let h: McpHarness
  before(async () => (h = await mcpHarness()))
  after(() => h.close())

  for (const protocol of ['legacy', '2026-07-28'] as const)
    it(`protocol ${protocol}: every block keeps its fields, boundaries and place; media gets an alt`, async () => {
      const name = `rich_${protocol === 'legacy' ? 'legacy' : 'modern'}`
      await h.add(name, { serverName: name, command: process.execPath, args: [RICH], protocol })
      assert.equal(h.status(name).state, 'connected', h.status(name).lastError)
      const result = await h.rt.call(`mcp__${name}__rich`, {})
      assert.equal(result.status, 'ok', text(result))
      const image = upstream.find((b) => b.type === 'image')!
      const audio = upstream.find((b) => b.type === 'audio')!
      // the upstream blocks one for one, each media block after its alternative text
      const expected = upstream.flatMap((b) =>
        b === image
          ? [
              { type: 'text', text: IMAGE_ALT },
              { ...b, alt: IMAGE_ALT },
            ]
          : b === audio
            ? [
                { type: 'text', text: AUDIO_ALT },
                { ...b, alt: AUDIO_ALT },
              ]
            : [b],
      )
      assert.deepEqual(result.content, expected)
      // the fields the review found dropped, named so a regression says which
      const link = result.content.find((c) => c.type === 'resource_link') as Record<string, unknown>
      assert.deepEqual(
        [link.title, link.description, link.size, link.annotations],
        [
          'The R file',
          'what r holds',
          42,
          { audience: ['assistant'], lastModified: '2025-01-02T03:04:05Z' },
        ],
      )
      const texts = result.content.filter((c) => c.type === 'text')
      assert.deepEqual(texts[0], upstream[0], 'annotations kept')
      assert.deepEqual(texts[1], upstream[1], '_meta kept')
      // a text-only reader (the agent loop) still reads the text, and no base64
      const read = resultText(result)
      assert.ok(read.startsWith('first block\nsecond block\nthird\nblock\n\n'), read)
      assert.ok(read.includes(IMAGE_ALT) && read.includes(AUDIO_ALT) && read.endsWith('last block'))
      assert.ok(!read.includes(image.data as string) && !read.includes(audio.data as string))
      await h.remove(name)
    })
})
