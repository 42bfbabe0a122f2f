/**
 * A `ModelClient` over the official `@anthropic-ai/sdk`: the messages API with tools, streamed
 * (message_start, content blocks with text and input-JSON deltas, message_delta) or as one JSON
 * answer. The system prompt is the top-level `system`; tool calls and results are `tool_use` and
 * `tool_result` blocks, consecutive results sharing one user message.
 */
import Anthropic, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk'
import type {
  ChatMessage,
  ModelClient,
  ModelRequest,
  ModelToolCall,
  StopReason,
} from '../models/api.ts'
import {
  WireError,
  isRecord,
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

type WireMessage = Anthropic.MessageParam
type WireBlock = Anthropic.ContentBlockParam
// the SDK's types no longer list `temperature`; the API still takes it, and it is sent only when configured
type WireBody = Omit<Anthropic.MessageCreateParamsNonStreaming, 'stream'> & { temperature?: number }

export type AnthropicOptions = ProviderOptions

export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com'
/** the messages API requires `max_tokens`: this when neither the request nor the config sets it */
export const DEFAULT_MAX_TOKENS = 4096

const errors = { APIError, APIUserAbortError, APIConnectionError, APIConnectionTimeoutError }

/**
 * An Anthropic messages model. `apiKey` is the key itself (absent: none is sent); the environment
 * is not read for it.
 *
 * @example
 * const model = createAnthropicModel({ model: 'claude-sonnet-4-5', apiKey: process.env.ANTHROPIC_API_KEY, pricing: { inputPerMTok: 3, outputPerMTok: 15 } })
 * const answer = await model.complete({ system: 'Be brief.', messages: [{ role: 'user', content: 'hi' }], tools: [] })
 */
export function createAnthropicModel(options: AnthropicOptions): ModelClient {
  const { model } = options
  const info = requestInfo('anthropic', options, ANTHROPIC_BASE_URL)
  // a key passed in code is the client's only credential: ANTHROPIC_AUTH_TOKEN and profiles are not read
  const client = new Anthropic(sdkClientOptions(info, options, ['Authorization', 'X-Api-Key']))
  return sdkModel(info, options, {
    errors,
    body(req, { maxTokens, temperature }) {
      const body = toWire(req, model, maxTokens ?? DEFAULT_MAX_TOKENS)
      if (temperature !== undefined) body.temperature = temperature
      return body
    },
    stream: (body, signal) => client.messages.create({ ...body, stream: true }, { signal }),
    whole: (body, signal) =>
      client.messages.create({ ...body, stream: false }, { signal }).asResponse(),
    reader: () => new MessageAnswer(),
    readJson: (json) => MessageAnswer.fromJson(json),
  })
}

/** Neutral request → messages body (without temperature and the stream flag). */
export function toWire(req: ModelRequest, model: string, maxTokens: number): WireBody {
  return {
    model,
    max_tokens: maxTokens,
    ...(req.system && { system: req.system }),
    messages: messagesToWire(req.messages),
    ...(req.tools.length && {
      tools: req.tools.map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: t.inputSchema as Anthropic.Tool.InputSchema,
      })),
    }),
  }
}

function messagesToWire(messages: ChatMessage[]): WireMessage[] {
  const out: WireMessage[] = []
  for (const m of messages) {
    if (m.role === 'user') out.push({ role: 'user', content: m.content })
    else if (m.role === 'assistant') {
      const blocks: WireBlock[] = m.content ? [{ type: 'text', text: m.content }] : []
      for (const c of m.toolCalls ?? []) {
        // input must be an object: arguments that were not JSON go back as { _raw } so the model sees what it sent
        blocks.push({
          type: 'tool_use',
          id: c.id,
          name: c.name,
          input: typeof c.args === 'string' ? { _raw: c.args } : c.args,
        })
      }
      if (blocks.length) out.push({ role: 'assistant', content: blocks }) // the API refuses empty content
    } else {
      const result: WireBlock = {
        type: 'tool_result',
        tool_use_id: m.toolCallId,
        content: m.content,
        ...(m.isError && { is_error: true }),
      }
      const last = out.at(-1)
      // the results of one assistant turn go back together, in one user message
      if (
        last?.role === 'user' &&
        Array.isArray(last.content) &&
        last.content.every((b) => b.type === 'tool_result')
      )
        last.content.push(result)
      else out.push({ role: 'user', content: [result] })
    }
  }
  return out
}

const STOP: Record<string, StopReason> = {
  end_turn: 'end',
  stop_sequence: 'end',
  tool_use: 'tool_use',
  max_tokens: 'max_tokens',
}

type Block =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; json: string; input: unknown }
  | { type: 'other' }

/** One answer being read: from stream events (blocks by index) or from a JSON message. */
class MessageAnswer implements AnswerReader {
  readonly blocks = new Map<number, Block>()
  model?: string
  started = false
  stopped = false
  stopReason?: string
  usage = { inputTokens: 0, outputTokens: 0 }

  static fromJson(json: unknown): MessageAnswer {
    const answer = new MessageAnswer()
    const message = record(json, 'the response')
    answer.readMessage(message)
    optArray(message.content, 'content').forEach((raw, i) =>
      answer.blocks.set(i, blockOf(raw, `content[${i}]`)),
    )
    answer.stopReason = optString(message.stop_reason, 'stop_reason') ?? 'end_turn'
    answer.stopped = true
    return answer
  }

  add(raw: unknown, onText: (delta: string) => void) {
    const event = record(raw, 'a stream event')
    switch (event.type) {
      case 'message_start':
        this.readMessage(record(event.message, 'message_start message'))
        break
      case 'content_block_start': {
        const block = blockOf(event.content_block, 'content_block_start block')
        this.blocks.set(indexOf(event), block)
        if (block.type === 'text' && block.text) onText(block.text)
        break
      }
      case 'content_block_delta': {
        const index = indexOf(event)
        const block = this.blocks.get(index)
        if (!block) throw new WireError(`a delta for content block ${index}, which did not start`)
        const delta = record(event.delta, 'content_block_delta delta')
        if (delta.type === 'text_delta' && block.type === 'text') {
          const text = optString(delta.text, 'text_delta text') ?? ''
          block.text += text
          if (text) onText(text)
        } else if (delta.type === 'input_json_delta' && block.type === 'tool_use') {
          block.json += optString(delta.partial_json, 'input_json_delta partial_json') ?? ''
        } // thinking, signature and citation deltas are not part of the neutral answer
        break
      }
      case 'message_delta': {
        const delta = record(event.delta, 'message_delta delta')
        this.stopReason = optString(delta.stop_reason, 'stop_reason') ?? this.stopReason
        if (isRecord(event.usage)) this.readUsage(event.usage)
        break
      }
      case 'message_stop':
        this.stopped = true
        break
      // content_block_stop, ping and event types added later carry nothing to keep
    }
  }

  readMessage(message: Record<string, unknown>) {
    this.started = true
    this.model = optString(message.model, 'message model')
    if (message.usage != null) this.readUsage(record(message.usage, 'usage'))
  }

  /** input counts everything the model read (cache writes and reads included); later events override */
  readUsage(usage: Record<string, unknown>) {
    const input = optCount(usage.input_tokens)
    if (input !== undefined)
      this.usage.inputTokens =
        input +
        (optCount(usage.cache_creation_input_tokens) ?? 0) +
        (optCount(usage.cache_read_input_tokens) ?? 0)
    const output = optCount(usage.output_tokens)
    if (output !== undefined) this.usage.outputTokens = output
  }

  text(): string {
    return [...this.sorted()].map((b) => (b.type === 'text' ? b.text : '')).join('')
  }

  finish(): WireAnswer {
    if (!this.started) throw new WireError('the stream has no message_start')
    if (!this.stopped && !this.stopReason)
      throw new WireError(
        'the stream ended before the answer did (no message_delta or message_stop)',
      )
    const toolCalls: ModelToolCall[] = []
    for (const b of this.sorted()) {
      if (b.type !== 'tool_use') continue
      const args = b.json ? parseArgs(b.json) : isRecord(b.input) ? b.input : {}
      toolCalls.push({ id: b.id || `toolu_${toolCalls.length}`, name: b.name, args })
    }
    const stopReason = STOP[this.stopReason ?? 'end_turn'] ?? 'other'
    return { text: this.text(), toolCalls, stopReason, usage: this.usage, model: this.model }
  }

  *sorted() {
    for (const [, block] of [...this.blocks].sort(([a], [b]) => a - b)) yield block
  }
}

function indexOf(event: Record<string, unknown>): number {
  if (typeof event.index !== 'number' || !Number.isInteger(event.index) || event.index < 0)
    throw new WireError(`${event.type} has no block index`)
  return event.index
}

function blockOf(raw: unknown, what: string): Block {
  const block = record(raw, what)
  if (block.type === 'text')
    return { type: 'text', text: optString(block.text, `${what} text`) ?? '' }
  if (block.type === 'tool_use') {
    const name = optString(block.name, `${what} name`)
    if (!name) throw new WireError(`${what} is a tool_use without a name`)
    return {
      type: 'tool_use',
      id: optString(block.id, `${what} id`) ?? '',
      name,
      json: '',
      input: block.input,
    }
  }
  return { type: 'other' } // thinking, redacted_thinking, server tool blocks
}
