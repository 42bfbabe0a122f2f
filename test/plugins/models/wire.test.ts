// What each provider puts on the wire, read from the bodies and headers the real HTTP server
// recorded: system prompt, tool calls and results, output bounds, keys.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createAnthropicModel } from '../../../plugins/anthropic/client.ts'
import { createOpenAIModel } from '../../../plugins/openai/client.ts'
import type { ModelRequest } from '../../../plugins/models/api.ts'
import { modelServer, type ModelServer } from '../../helpers/model-server.ts'

const conversation: ModelRequest = {
  system: 'You are a file assistant.',
  messages: [
    { role: 'user', content: 'What is in a.txt and b.txt?' },
    {
      role: 'assistant',
      content: 'Reading both.',
      toolCalls: [
        { id: 'call_1', name: 'read_file', args: { path: 'a.txt' } },
        { id: 'call_2', name: 'read_file', args: '{"path": "b.txt"' },
      ],
    },
    { role: 'tool', toolCallId: 'call_1', name: 'read_file', content: 'alpha' },
    {
      role: 'tool',
      toolCallId: 'call_2',
      name: 'read_file',
      content: 'arguments are not JSON',
      isError: true,
    },
    {
      role: 'assistant',
      content: '',
      toolCalls: [{ id: 'call_3', name: 'read_file', args: { path: 'b.txt' } }],
    },
    { role: 'tool', toolCallId: 'call_3', name: 'read_file', content: 'beta' },
    { role: 'assistant', content: 'a.txt says alpha, b.txt says beta.' },
    { role: 'user', content: 'Thanks!' },
  ],
  tools: [
    {
      name: 'read_file',
      description: 'Read a file.',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  ],
}

const plain = (extra: Partial<ModelRequest> = {}): ModelRequest => ({
  system: '',
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  ...extra,
})

let server: ModelServer
before(async () => {
  server = await modelServer(() => ({ text: 'ok' }))
})
after(() => server.close())

const last = () => server.requests.at(-1)!

describe('openai on the wire', () => {
  const model = (extra = {}) =>
    createOpenAIModel({
      model: 'gpt-wire',
      apiKey: 'sk-wire-key',
      baseUrl: server.openaiBaseUrl,
      ...extra,
    })

  it('system first, tool_calls with JSON-string arguments, tool messages with tool_call_id', async () => {
    await model().complete(conversation)
    const body = last().body
    assert.equal(last().problem, undefined)
    assert.deepEqual(body.messages, [
      { role: 'system', content: 'You are a file assistant.' },
      { role: 'user', content: 'What is in a.txt and b.txt?' },
      {
        role: 'assistant',
        content: 'Reading both.',
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'read_file', arguments: '{"path":"a.txt"}' },
          },
          {
            id: 'call_2',
            type: 'function',
            function: { name: 'read_file', arguments: '{"path": "b.txt"' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'alpha' },
      { role: 'tool', tool_call_id: 'call_2', content: 'arguments are not JSON' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_3',
            type: 'function',
            function: { name: 'read_file', arguments: '{"path":"b.txt"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_3', content: 'beta' },
      { role: 'assistant', content: 'a.txt says alpha, b.txt says beta.' },
      { role: 'user', content: 'Thanks!' },
    ])
    assert.deepEqual(body.tools, [
      {
        type: 'function',
        function: {
          name: 'read_file',
          description: 'Read a file.',
          parameters: conversation.tools[0].inputSchema,
        },
      },
    ])
    assert.equal(body.stream, true)
    assert.deepEqual(body.stream_options, { include_usage: true })
  })

  it('no system message when the prompt is empty, no tools key without tools', async () => {
    await model().complete(plain())
    assert.deepEqual(last().body.messages, [{ role: 'user', content: 'hi' }])
    assert.equal('tools' in last().body, false)
    assert.equal('max_tokens' in last().body, false)
    assert.equal('temperature' in last().body, false)
  })

  it('output bound and temperature: the request wins over the config; max_tokens with a baseUrl', async () => {
    await model({ maxTokens: 1000, temperature: 0.2 }).complete(plain())
    assert.equal(last().body.max_tokens, 1000)
    assert.equal(last().body.temperature, 0.2)
    await model({ maxTokens: 1000, temperature: 0.2 }).complete(
      plain({ maxTokens: 50, temperature: 0 }),
    )
    assert.equal(last().body.max_tokens, 50)
    assert.equal(last().body.temperature, 0)
    await model({ maxTokens: 1000, maxTokensParam: 'max_completion_tokens' }).complete(plain())
    assert.equal(last().body.max_completion_tokens, 1000)
    assert.equal('max_tokens' in last().body, false)
  })

  it('sends the key as a bearer token, and no Authorization at all without a key', async () => {
    await model().complete(plain())
    assert.equal(last().headers.authorization, 'Bearer sk-wire-key')
    await createOpenAIModel({ model: 'local', baseUrl: server.openaiBaseUrl }).complete(plain())
    assert.equal(last().headers.authorization, undefined)
  })
})

describe('anthropic on the wire', () => {
  const model = (extra = {}) =>
    createAnthropicModel({
      model: 'claude-wire',
      apiKey: 'sk-ant-wire-key',
      baseUrl: server.anthropicBaseUrl,
      ...extra,
    })

  it('top-level system, tool_use blocks, consecutive tool results in one user message', async () => {
    await model().complete(conversation)
    const body = last().body
    assert.equal(last().problem, undefined)
    assert.equal(body.system, 'You are a file assistant.')
    assert.deepEqual(body.messages, [
      { role: 'user', content: 'What is in a.txt and b.txt?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Reading both.' },
          { type: 'tool_use', id: 'call_1', name: 'read_file', input: { path: 'a.txt' } },
          {
            type: 'tool_use',
            id: 'call_2',
            name: 'read_file',
            input: { _raw: '{"path": "b.txt"' },
          },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: 'alpha' },
          {
            type: 'tool_result',
            tool_use_id: 'call_2',
            content: 'arguments are not JSON',
            is_error: true,
          },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_3', name: 'read_file', input: { path: 'b.txt' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_3', content: 'beta' }] },
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'a.txt says alpha, b.txt says beta.' }],
      },
      { role: 'user', content: 'Thanks!' },
    ])
    assert.deepEqual(body.tools, [
      {
        name: 'read_file',
        description: 'Read a file.',
        input_schema: conversation.tools[0].inputSchema,
      },
    ])
    assert.equal(body.stream, true)
  })

  it('max_tokens is always sent (default 4096); no system or tools keys when empty', async () => {
    await model().complete(plain())
    assert.equal(last().body.max_tokens, 4096)
    assert.equal('system' in last().body, false)
    assert.equal('tools' in last().body, false)
    assert.equal('temperature' in last().body, false)
    await model({ maxTokens: 1000, temperature: 0.5 }).complete(plain())
    assert.equal(last().body.max_tokens, 1000)
    assert.equal(last().body.temperature, 0.5)
    await model({ maxTokens: 1000 }).complete(plain({ maxTokens: 64 }))
    assert.equal(last().body.max_tokens, 64)
  })

  it('sends the key (the SDK uses a bearer token), and no key headers without one', async () => {
    await model().complete(plain())
    assert.equal(
      last().headers.authorization ?? last().headers['x-api-key'],
      last().headers.authorization ? 'Bearer sk-ant-wire-key' : 'sk-ant-wire-key',
    )
    assert.ok(last().headers['anthropic-version'], 'the SDK names the API version')
    await createAnthropicModel({ model: 'local', baseUrl: server.anthropicBaseUrl }).complete(
      plain(),
    )
    assert.equal(last().headers.authorization, undefined)
    assert.equal(last().headers['x-api-key'], undefined)
  })
})

describe('the model server checks requests like the real APIs', () => {
  it('a tool result that answers no tool call is a 400, reported as MODEL_FAILED', async () => {
    const bad: ModelRequest = plain({
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'tool', toolCallId: 'nope', name: 'x', content: 'y' },
      ],
    })
    const openai = createOpenAIModel({ model: 'm', apiKey: 'k', baseUrl: server.openaiBaseUrl })
    await assert.rejects(
      openai.complete(bad),
      /HTTP 400: model-server: messages\[1\]\.tool_call_id/,
    )
    const anthropic = createAnthropicModel({
      model: 'm',
      apiKey: 'k',
      baseUrl: server.anthropicBaseUrl,
    })
    await assert.rejects(
      anthropic.complete(bad),
      /HTTP 400: model-server: messages\.1\.content\.0: unexpected tool_use_id/,
    )
  })
})
