/**
 * Sampling: an MCP server asks the client's model for a completion (`sampling/createMessage`).
 * Declared only when the instance opts in (`sampling: true`), answered by the `model` service,
 * with the server's `maxTokens` capped by `samplingMaxTokens`. The server's messages become
 * provider-neutral ones; images and audio are named in the text, not sent.
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  type CreateMessageRequest,
  type CreateMessageResult,
} from '@modelcontextprotocol/client'
import type { ChatMessage, ModelClient } from '../models/api.ts'

type Params = CreateMessageRequest['params']
type Block = { type: string; text?: string; mimeType?: string; [key: string]: unknown }

function textOf(content: Block | Block[]): string {
  const blocks = Array.isArray(content) ? content : [content]
  return blocks
    .map((b) =>
      b.type === 'text'
        ? (b.text ?? '')
        : b.type === 'image' || b.type === 'audio'
          ? `[${b.type} ${b.mimeType ?? ''}]`
          : JSON.stringify(b),
    )
    .join('\n')
}

export async function answerSampling(
  model: ModelClient | undefined,
  params: Params,
  maxTokens: number,
  signal: AbortSignal,
): Promise<{ result: CreateMessageResult; usage: { inputTokens: number; outputTokens: number } }> {
  if (!model)
    throw new ProtocolError(
      ProtocolErrorCode.InternalError,
      'the client has no model to sample with (no instance provides the `model` service, or it waits for its key)',
    )
  const messages: ChatMessage[] = params.messages.map((m) => ({
    role: m.role === 'assistant' ? 'assistant' : 'user',
    content: textOf(m.content as Block | Block[]),
  }))
  const response = await model.complete(
    {
      system: params.systemPrompt ?? '',
      messages,
      tools: [],
      maxTokens: Math.min(params.maxTokens, maxTokens),
      ...(params.temperature !== undefined ? { temperature: params.temperature } : {}),
    },
    { signal },
  )
  const result: CreateMessageResult = {
    role: 'assistant',
    content: { type: 'text', text: response.text },
    model: response.model,
    stopReason: response.stopReason === 'max_tokens' ? 'maxTokens' : 'endTurn',
  }
  return { result, usage: response.usage }
}
