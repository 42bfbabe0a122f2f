/**
 * A `ModelClient` over the official `openai` SDK: chat completions with tools, streamed (text
 * deltas to `onText`, tool-call deltas gathered by index) or as one JSON answer. Works with any
 * server that speaks the same API through `baseUrl` (DeepSeek, Ollama, vLLM, llama.cpp).
 */
import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from 'openai'
import type {
  ChatMessage,
  ModelClient,
  ModelRequest,
  ModelToolCall,
  StopReason,
} from '../models/api.ts'
import {
  WireError,
  optArray,
  optCount,
  optString,
  parseArgs,
  record,
  requestInfo,
  sdkClientOptions,
  sdkModel,
  type AnswerReader,
  type ProviderOptions,
  type WireAnswer,
} from '../models/api.ts'

type WireMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam
type WireBody = Omit<
  OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming,
  'stream' | 'stream_options'
>

export interface OpenAIOptions extends ProviderOptions {
  /**
   * How the output bound is sent. Default: `max_completion_tokens` for api.openai.com (its newer
   * models refuse `max_tokens`), `max_tokens` when `baseUrl` is set (what compatible servers read).
   */
  maxTokensParam?: 'max_tokens' | 'max_completion_tokens'
}

export const OPENAI_BASE_URL = 'https://api.openai.com/v1'

const errors = { APIError, APIUserAbortError, APIConnectionError, APIConnectionTimeoutError }

/**
 * An OpenAI chat-completions model. `apiKey` is the key itself (absent: none is sent, for local
 * servers); the environment is not read.
 *
 * @example
 * const model = createOpenAIModel({ model: 'deepseek-chat', apiKey: process.env.DEEPSEEK_API_KEY, baseUrl: 'https://api.deepseek.com/v1' })
 * const answer = await model.complete({ system: 'Be brief.', messages: [{ role: 'user', content: 'hi' }], tools: [] }, { onText: (d) => process.stdout.write(d) })
 */
export function createOpenAIModel(options: OpenAIOptions): ModelClient {
  const { model } = options
  const info = requestInfo('openai', options, OPENAI_BASE_URL)
  const client = new OpenAI({
    ...sdkClientOptions(info, options, ['Authorization']),
    // null: never read OPENAI_ORG_ID, OPENAI_PROJECT_ID, OPENAI_ADMIN_KEY from the environment
    organization: null,
    project: null,
    adminAPIKey: null,
  })
  const maxTokensParam =
    options.maxTokensParam ?? (options.baseUrl ? 'max_tokens' : 'max_completion_tokens')
  return sdkModel(info, options, {
    errors,
    body(req, { maxTokens, temperature }) {
      const body = toWire(req, model)
      if (maxTokens !== undefined) body[maxTokensParam] = maxTokens
      if (temperature !== undefined) body.temperature = temperature
      return body
    },
    stream: (body, signal) =>
      client.chat.completions.create(
        { ...body, stream: true, stream_options: { include_usage: true } },
        { signal },
      ),
    whole: (body, signal) =>
      client.chat.completions.create({ ...body, stream: false }, { signal }).asResponse(),
    reader: () => new ChatAnswer(),
    readJson: (json) => ChatAnswer.fromJson(json),
  })
}

/** Neutral request → chat-completions body (without the output bound, temperature and stream flags). */
export function toWire(
  req: ModelRequest,
  model: string,
): WireBody & { max_tokens?: number; max_completion_tokens?: number } {
  const messages: WireMessage[] = req.system ? [{ role: 'system', content: req.system }] : []
  for (const m of req.messages) messages.push(messageToWire(m))
  return {
    model,
    messages,
    ...(req.tools.length && {
      tools: req.tools.map((t) => ({
        type: 'function' as const,
        function: {
          name: t.name,
          description: t.description,
          parameters: t.inputSchema as Record<string, unknown>,
        },
      })),
    }),
  }
}

function messageToWire(m: ChatMessage): WireMessage {
  switch (m.role) {
    case 'user':
      return { role: 'user', content: m.content }
    case 'tool':
      // chat completions has no error flag on a tool result: the content says it
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content }
    case 'assistant':
      if (!m.toolCalls?.length) return { role: 'assistant', content: m.content }
      return {
        role: 'assistant',
        content: m.content || null,
        tool_calls: m.toolCalls.map((c) => ({
          id: c.id,
          type: 'function' as const,
          function: {
            name: c.name,
            arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args),
          },
        })),
      }
  }
}

const FINISH: Record<string, StopReason> = {
  stop: 'end',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  length: 'max_tokens',
}

/** One answer being read: from stream chunks (tool calls gathered by index) or from a JSON body. */
class ChatAnswer implements AnswerReader {
  #text = ''
  model?: string
  finishReason?: string
  usage = { inputTokens: 0, outputTokens: 0 }
  readonly calls = new Map<number, { id: string; name: string; args: string }>()

  static fromJson(json: unknown): ChatAnswer {
    const answer = new ChatAnswer()
    const body = record(json, 'the response')
    answer.model = optString(body.model, 'model')
    answer.readUsage(body.usage)
    const choice = record(optArray(body.choices, 'choices')[0], 'choices[0]')
    const message = record(choice.message, 'choices[0].message')
    answer.#text = optString(message.content, 'message.content') ?? ''
    optArray(message.tool_calls, 'message.tool_calls').forEach((raw, i) => {
      const call = record(raw, `tool_calls[${i}]`)
      const fn = record(call.function, `tool_calls[${i}].function`)
      answer.calls.set(i, {
        id: optString(call.id, 'tool call id') ?? '',
        name: optString(fn.name, 'tool call name') ?? '',
        args: argumentsText(fn.arguments),
      })
    })
    answer.finishReason = optString(choice.finish_reason, 'finish_reason') ?? 'stop'
    return answer
  }

  add(raw: unknown, onText: (delta: string) => void) {
    const chunk = record(raw, 'a stream chunk')
    this.model ||= optString(chunk.model, 'chunk model')
    if (chunk.usage != null) this.readUsage(chunk.usage)
    for (const item of optArray(chunk.choices, 'chunk choices')) {
      const choice = record(item, 'a chunk choice')
      if (typeof choice.index === 'number' && choice.index !== 0) continue // n > 1 is never asked for
      const delta = choice.delta == null ? {} : record(choice.delta, 'choice delta')
      const content = optString(delta.content, 'delta content')
      if (content) {
        this.#text += content
        onText(content)
      }
      optArray(delta.tool_calls, 'delta tool_calls').forEach((rawCall, position) => {
        const part = record(rawCall, 'a tool call delta')
        const index = typeof part.index === 'number' ? part.index : position
        const fn = part.function == null ? {} : record(part.function, 'tool call delta function')
        let call = this.calls.get(index)
        if (!call) this.calls.set(index, (call = { id: '', name: '', args: '' }))
        call.id = optString(part.id, 'tool call id') || call.id
        call.name = optString(fn.name, 'tool call name') || call.name // sent once; a server that repeats it is not doubled
        call.args += argumentsText(fn.arguments)
      })
      this.finishReason = optString(choice.finish_reason, 'finish_reason') ?? this.finishReason
    }
  }

  readUsage(raw: unknown) {
    if (raw == null) return
    const usage = record(raw, 'usage')
    this.usage = {
      inputTokens: optCount(usage.prompt_tokens) ?? 0,
      outputTokens: optCount(usage.completion_tokens) ?? 0,
    }
  }

  text(): string {
    return this.#text
  }

  finish(): WireAnswer {
    if (!this.finishReason)
      throw new WireError('the stream ended before the answer did (no finish_reason)')
    const toolCalls: ModelToolCall[] = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => {
        if (!call.name) throw new WireError(`tool call ${index} has no function name`)
        return { id: call.id || `call_${index}`, name: call.name, args: parseArgs(call.args) }
      })
    // some compatible servers (older Ollama) say `stop` when they call tools
    const stopReason =
      toolCalls.length && this.finishReason === 'stop'
        ? 'tool_use'
        : (FINISH[this.finishReason] ?? 'other')
    return { text: this.#text, toolCalls, stopReason, usage: this.usage, model: this.model }
  }
}

/** `arguments` is a JSON string; a server that sends an object gets it stringified. */
function argumentsText(x: unknown): string {
  if (x === undefined || x === null) return ''
  if (typeof x === 'string') return x
  if (typeof x === 'object') return JSON.stringify(x)
  throw new WireError(`tool call arguments are ${typeof x}, not a string`)
}
