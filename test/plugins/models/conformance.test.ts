// One suite, run against both model providers (openai, anthropic) over the real SDKs and a real
// HTTP server speaking their wire formats: text and streaming, parallel tool calls, arguments that
// are not JSON, retries, timeouts, abort, usage and cost, and hostile answers. Every wait is bounded.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { YokeError } from '../../../src/index.ts'
import { createAnthropicModel } from '../../../plugins/anthropic/client.ts'
import { createOpenAIModel } from '../../../plugins/openai/client.ts'
import type { ModelClient, ModelRequest } from '../../../plugins/models/api.ts'
import type { ProviderOptions } from '../../../plugins/models/api.ts'
import { modelServer, type ModelServer, type Script } from '../../helpers/model-server.ts'

const KEY = 'sk-test-0123456789-secret'

interface ProviderCase {
  name: 'openai' | 'anthropic'
  model: string
  make(server: ModelServer, extra?: Partial<ProviderOptions>): ModelClient
  /** raw bodies for hostile tests, in this provider's stream format */
  hostile: { notJson: string; wrongShape: string; errorEvent: string; cutShort: string }
}

const providers: ProviderCase[] = [
  {
    name: 'openai',
    model: 'gpt-test',
    make: (server, extra) =>
      createOpenAIModel({
        model: 'gpt-test',
        apiKey: KEY,
        baseUrl: server.openaiBaseUrl,
        ...extra,
      }),
    hostile: {
      notJson: 'data: {"choices": [{"index": 0, "delta": {"content": "hi"\n\n',
      wrongShape: 'data: {"id": "x", "choices": "none for you"}\n\n',
      errorEvent:
        'data: {"error": {"message": "the model is overloaded", "type": "server_error"}}\n\n',
      cutShort:
        'data: {"id":"c","model":"gpt-test","choices":[{"index":0,"delta":{"content":"half an ans"},"finish_reason":null}]}\n\n',
    },
  },
  {
    name: 'anthropic',
    model: 'claude-test',
    make: (server, extra) =>
      createAnthropicModel({
        model: 'claude-test',
        apiKey: KEY,
        baseUrl: server.anthropicBaseUrl,
        ...extra,
      }),
    hostile: {
      notJson: 'event: message_start\ndata: {"type": "message_start", "message": {\n\n',
      wrongShape: 'event: message_start\ndata: {"type": "message_start", "message": 42}\n\n',
      errorEvent:
        'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "the model is overloaded"}}\n\n',
      cutShort:
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"claude-test","usage":{"input_tokens":3,"output_tokens":1}}}\n\n' +
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"half an ans"}}\n\n',
    },
  },
]

const ask = (content = 'hi', extra: Partial<ModelRequest> = {}): ModelRequest => ({
  system: 'You are terse.',
  messages: [{ role: 'user', content }],
  tools: [
    {
      name: 'read_file',
      description: 'Read a file.',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    },
  ],
  ...extra,
})

/** `promise`, failing the test if it takes longer than `ms` */
async function within<T>(ms: number, promise: Promise<T>, what = 'the call'): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>(
    (_, reject) =>
      (timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)),
  )
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

/** the YokeError `promise` rejects with (within `ms`), checked for `code` */
async function rejection(promise: Promise<unknown>, code: string, ms = 5000): Promise<YokeError> {
  const err = await within(
    ms,
    promise.then(
      () => assert.fail(`expected ${code}, it resolved`),
      (e: unknown) => e,
    ),
  )
  assert.ok(
    err instanceof YokeError,
    `expected a YokeError ${code}, got ${(err as Error)?.stack ?? err}`,
  )
  assert.equal(err.code, code, err.message)
  return err
}

async function withServer(script: Script, fn: (server: ModelServer) => Promise<void>) {
  const server = await modelServer(script)
  try {
    await fn(server)
  } finally {
    await server.close()
  }
}

for (const p of providers) {
  describe(`model provider conformance: ${p.name}`, () => {
    it('answers plain text, with the model the server names', () =>
      withServer([{ text: 'Hello there.', model: `${p.model}-2025` }], async (server) => {
        const answer = await within(5000, p.make(server).complete(ask()))
        assert.deepEqual(answer, {
          text: 'Hello there.',
          toolCalls: [],
          stopReason: 'end',
          usage: { inputTokens: 10, outputTokens: 5 },
          model: `${p.model}-2025`,
        })
        assert.equal(server.requests.length, 1)
        assert.equal(server.requests[0].stream, true)
        assert.equal(server.requests[0].body.model, p.model)
      }))

    it('streams text deltas to onText in order; they join to text', () =>
      withServer([{ text: ['Once', ' upon', ' a', ' time', '…'] }], async (server) => {
        const deltas: string[] = []
        const answer = await within(
          5000,
          p.make(server).complete(ask(), { onText: (d) => deltas.push(d) }),
        )
        assert.deepEqual(deltas, ['Once', ' upon', ' a', ' time', '…'])
        assert.equal(answer.text, deltas.join(''))
      }))

    it('gathers several parallel tool calls whose arguments arrive in pieces', () =>
      withServer(
        [
          {
            text: 'Reading both.',
            toolCalls: [
              { id: 'call_a', name: 'read_file', args: { path: 'a.txt' } },
              { id: 'call_b', name: 'read_file', args: { path: 'dir/b.txt', lines: [1, 2] } },
              { name: 'list', args: {} },
            ],
          },
        ],
        async (server) => {
          const answer = await within(5000, p.make(server).complete(ask()))
          assert.equal(answer.stopReason, 'tool_use')
          assert.equal(answer.text, 'Reading both.')
          assert.deepEqual(answer.toolCalls.slice(0, 2), [
            { id: 'call_a', name: 'read_file', args: { path: 'a.txt' } },
            { id: 'call_b', name: 'read_file', args: { path: 'dir/b.txt', lines: [1, 2] } },
          ])
          assert.equal(answer.toolCalls[2].name, 'list')
          assert.deepEqual(answer.toolCalls[2].args, {})
          assert.ok(answer.toolCalls[2].id, 'a generated id')
        },
      ))

    it('returns arguments that are not JSON as the raw text', () =>
      withServer(
        [
          {
            toolCalls: [
              { id: 't1', name: 'read_file', args: '{"path": "a.txt"' },
              { id: 't2', name: 'read_file', args: '[1, 2]' },
            ],
          },
        ],
        async (server) => {
          const answer = await within(5000, p.make(server).complete(ask()))
          assert.deepEqual(
            answer.toolCalls.map((c) => c.args),
            ['{"path": "a.txt"', '[1, 2]'],
          )
        },
      ))

    it('sends the tool results back, and the server accepts the conversation', () =>
      withServer(
        [
          {
            toolCalls: [
              { id: 'c1', name: 'read_file', args: { path: 'a' } },
              { id: 'c2', name: 'read_file', args: { path: 'b' } },
            ],
          },
          { text: 'a says 1, b is missing.' },
        ],
        async (server) => {
          const model = p.make(server)
          const first = await within(5000, model.complete(ask()))
          const request = ask('hi', {
            messages: [
              { role: 'user', content: 'hi' },
              { role: 'assistant', content: first.text, toolCalls: first.toolCalls },
              { role: 'tool', toolCallId: 'c1', name: 'read_file', content: '1' },
              {
                role: 'tool',
                toolCallId: 'c2',
                name: 'read_file',
                content: 'no such file',
                isError: true,
              },
            ],
          })
          const second = await within(5000, model.complete(request))
          assert.equal(second.text, 'a says 1, b is missing.')
          assert.equal(server.requests[1].problem, undefined)
        },
      ))

    it('counts usage, and the cost when pricing is given', () =>
      withServer(
        [
          { text: 'ok', usage: { inputTokens: 1200, outputTokens: 300 } },
          { text: 'ok', usage: { inputTokens: 1200, outputTokens: 300 } },
        ],
        async (server) => {
          const priced = await within(
            5000,
            p.make(server, { pricing: { inputPerMTok: 3, outputPerMTok: 15 } }).complete(ask()),
          )
          assert.equal(priced.usage.inputTokens, 1200)
          assert.equal(priced.usage.outputTokens, 300)
          assert.ok(Math.abs(priced.usage.costUsd! - 0.0081) < 1e-12, String(priced.usage.costUsd))
          const unpriced = await within(5000, p.make(server).complete(ask()))
          assert.deepEqual(unpriced.usage, { inputTokens: 1200, outputTokens: 300 })
        },
      ))

    it('maps a max_tokens stop', () =>
      withServer([{ text: 'This is cut', stopReason: 'max_tokens' }], async (server) => {
        const answer = await within(5000, p.make(server).complete(ask()))
        assert.equal(answer.stopReason, 'max_tokens')
        assert.equal(answer.text, 'This is cut')
      }))

    it('reads a JSON answer when stream is false (onText gets the whole text once)', () =>
      withServer(
        [
          {
            text: 'All at once.',
            toolCalls: [{ id: 'j1', name: 'read_file', args: { path: 'x' } }],
            usage: { inputTokens: 7, outputTokens: 3 },
          },
        ],
        async (server) => {
          const deltas: string[] = []
          const answer = await within(
            5000,
            p.make(server, { stream: false }).complete(ask(), { onText: (d) => deltas.push(d) }),
          )
          assert.equal(server.requests[0].stream, false)
          assert.deepEqual(deltas, ['All at once.'])
          assert.deepEqual(answer.toolCalls, [{ id: 'j1', name: 'read_file', args: { path: 'x' } }])
          assert.equal(answer.stopReason, 'tool_use')
          assert.deepEqual(answer.usage, { inputTokens: 7, outputTokens: 3 })
        },
      ))

    it('retries a 429 (honouring retry-after-ms) and then succeeds', () =>
      withServer(
        [
          { status: 429, error: 'slow down', headers: { 'retry-after-ms': '10' } },
          { text: 'second time lucky' },
        ],
        async (server) => {
          const answer = await within(5000, p.make(server).complete(ask()))
          assert.equal(answer.text, 'second time lucky')
          assert.equal(server.requests.length, 2)
          // the SDKs' own backoff starts at 375-500 ms
          assert.ok(
            server.requests[1].at - server.requests[0].at < 300,
            'retry-after-ms was honoured, not the default backoff',
          )
        },
      ))

    it('caps a retry-after that asks for an hour', () =>
      withServer(
        [{ status: 503, headers: { 'retry-after': '3600' } }, { text: 'back' }],
        async (server) => {
          const answer = await within(3000, p.make(server, { maxRetryDelayMs: 20 }).complete(ask()))
          assert.equal(answer.text, 'back')
        },
      ))

    it('gives up on a repeated 500 with MODEL_FAILED naming provider, model and status', () =>
      withServer(
        () => ({ status: 500, error: 'upstream exploded', headers: { 'retry-after-ms': '1' } }),
        async (server) => {
          const err = await rejection(
            p.make(server, { maxRetries: 2 }).complete(ask()),
            'MODEL_FAILED',
          )
          assert.equal(server.requests.length, 3, 'one try and two retries')
          assert.match(
            err.message,
            new RegExp(
              `^${p.name} model ${p.model} failed: HTTP 500 \\(after 2 retries\\): upstream exploded`,
            ),
          )
          assert.match(err.hint, /retried/)
        },
      ))

    it('does not retry a 400, and says what the server said', () =>
      withServer([{ status: 400, error: 'messages: bad shape' }], async (server) => {
        const err = await rejection(p.make(server).complete(ask()), 'MODEL_FAILED')
        assert.equal(server.requests.length, 1)
        assert.match(err.message, /HTTP 400: messages: bad shape/)
      }))

    it('never puts the API key in an error, even when the server echoes it', () =>
      withServer([{ status: 401, error: `Incorrect API key provided: ${KEY}` }], async (server) => {
        const err = await rejection(p.make(server).complete(ask()), 'MODEL_FAILED')
        assert.match(err.message, /HTTP 401: Incorrect API key provided: \*\*\*/)
        assert.ok(!JSON.stringify(err.toJSON()).includes(KEY), JSON.stringify(err.toJSON()))
        assert.ok(!String((err.cause as Error)?.message).includes(KEY))
        assert.ok(!err.hint.includes(KEY))
      }))

    it('a server that does not answer in time is MODEL_TIMEOUT', () =>
      withServer([{ text: 'too late', delayMs: 3000 }], async (server) => {
        const started = performance.now()
        const err = await rejection(
          p.make(server, { timeoutMs: 150, maxRetries: 0 }).complete(ask()),
          'MODEL_TIMEOUT',
          3000,
        )
        assert.equal(err.message, `${p.name} model ${p.model} did not answer within 150 ms`)
        assert.ok(performance.now() - started < 2500, 'it did not wait for the 3 s answer')
      }))

    it('a timed-out attempt is retried', () =>
      withServer([{ text: 'too late', delayMs: 3000 }, { text: 'on time' }], async (server) => {
        const answer = await within(
          4000,
          p.make(server, { timeoutMs: 150, maxRetries: 1 }).complete(ask()),
        )
        assert.equal(answer.text, 'on time')
      }))

    it('a stream that stalls midway is MODEL_TIMEOUT (the SDK timeout ends at the headers)', () =>
      withServer(
        [{ text: 'one two three four five', stallAfter: p.name === 'openai' ? 3 : 5 }],
        async (server) => {
          const deltas: string[] = []
          await rejection(
            p
              .make(server, { timeoutMs: 200, maxRetries: 0 })
              .complete(ask(), { onText: (d) => deltas.push(d) }),
            'MODEL_TIMEOUT',
            3000,
          )
          assert.ok(deltas.length >= 1, 'it had started')
        },
      ))

    it('abort mid-stream rejects with ABORTED at once and cancels the HTTP request', () =>
      withServer(
        [{ text: Array.from({ length: 50 }, (_, i) => `w${i} `), chunkDelayMs: 20 }],
        async (server) => {
          const controller = new AbortController()
          const deltas: string[] = []
          const err = await rejection(
            p.make(server).complete(ask(), {
              signal: controller.signal,
              onText: (d) => {
                deltas.push(d)
                if (deltas.length === 2) controller.abort(new Error('user pressed ctrl-c'))
              },
            }),
            'ABORTED',
            2000,
          )
          assert.equal(err.message, `the call to ${p.name} model ${p.model} was cancelled`)
          assert.equal(deltas.length, 2, 'no delta after the abort')
          for (let i = 0; i < 100 && !server.requests[0].cancelled; i++)
            await new Promise((r) => setTimeout(r, 10))
          assert.ok(server.requests[0].cancelled, 'the server saw the connection close')
        },
      ))

    it('abort while waiting to retry ends at once', async () => {
      const controller = new AbortController()
      let abortedAt = 0
      const script: Script = () => {
        setTimeout(() => {
          abortedAt = performance.now()
          controller.abort()
        }, 50)
        return { status: 429, headers: { 'retry-after': '5' } }
      }
      await withServer(script, async (server) => {
        await rejection(
          p.make(server).complete(ask(), { signal: controller.signal }),
          'ABORTED',
          3000,
        )
        assert.ok(performance.now() - abortedAt < 2000, 'it did not wait out the 5 s retry-after')
        assert.equal(server.requests.length, 1)
      })
    })

    it('an already aborted signal sends nothing', () =>
      withServer([{ text: 'never' }], async (server) => {
        await rejection(p.make(server).complete(ask(), { signal: AbortSignal.abort() }), 'ABORTED')
        assert.equal(server.requests.length, 0)
      }))

    it('an error thrown by onText rejects the call with that error', () =>
      withServer([{ text: 'a b c' }], async (server) => {
        const boom = new Error('UI went away')
        const err = await within(
          2000,
          p
            .make(server)
            .complete(ask(), {
              onText: () => {
                throw boom
              },
            })
            .catch((e: unknown) => e),
        )
        assert.equal(err, boom)
      }))

    it('an unreachable server is MODEL_FAILED naming the URL', async () => {
      const server = await modelServer([])
      await server.close() // nothing listens there now
      const err = await rejection(p.make(server, { maxRetries: 0 }).complete(ask()), 'MODEL_FAILED')
      assert.match(err.message, /cannot reach http:\/\/127\.0\.0\.1:\d+/)
    })

    describe('hostile answers end in a clear MODEL_FAILED, never a hang', () => {
      const cases: Array<[string, () => Script, RegExp]> = [
        ['a stream event that is not JSON', () => [{ body: p.hostile.notJson }], /not JSON/],
        [
          'JSON of the wrong shape',
          () => [{ body: p.hostile.wrongShape }],
          /unexpected response: .* not (an object|an array)/,
        ],
        [
          'an error event inside the stream',
          () => [{ body: p.hostile.errorEvent }],
          /error in the stream: the model is overloaded/,
        ],
        [
          'a stream that ends before the answer does',
          () => [{ body: p.hostile.cutShort }],
          /ended before the answer did/,
        ],
        [
          'a garbage body (HTML)',
          () => [{ body: '<html><body>502 Bad Gateway</body></html>', contentType: 'text/html' }],
          /unexpected response: the stream/,
        ],
        [
          'a connection lost mid-stream',
          () => [{ text: 'one two three four', truncateAfter: 3 }],
          /broke off/,
        ],
        ['an empty 200', () => [{ body: '' }], /unexpected response/],
      ]
      for (const [what, script, reason] of cases) {
        it(what, () =>
          withServer(script(), async (server) => {
            const err = await rejection(
              p.make(server, { maxRetries: 0, timeoutMs: 2000 }).complete(ask()),
              'MODEL_FAILED',
              4000,
            )
            assert.match(err.message, reason)
            assert.match(err.message, new RegExp(`^${p.name} model ${p.model} failed: `))
          }),
        )
      }
      it('a JSON answer that is not JSON (stream: false)', () =>
        withServer(
          [{ body: 'Internal Server Error', contentType: 'text/plain' }],
          async (server) => {
            const err = await rejection(
              p.make(server, { stream: false }).complete(ask()),
              'MODEL_FAILED',
            )
            assert.match(err.message, /the body is not JSON: "Internal Server Error"/)
          },
        ))
      it('a JSON answer of the wrong shape (stream: false)', () =>
        withServer([{ body: '{"choices": [], "content": "nope"}' }], async (server) => {
          const err = await rejection(
            p.make(server, { stream: false }).complete(ask()),
            'MODEL_FAILED',
          )
          assert.match(err.message, /unexpected response: /)
        }))
    })
  })
}
