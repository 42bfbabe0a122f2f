/**
 * The model contract: what a model provider plugin makes and the agent loop (and MCP sampling)
 * asks. Messages are provider-neutral; each provider maps them to its wire format (OpenAI chat
 * completions, Anthropic messages) and back. A cassette (record/replay) stores exactly these
 * shapes, so a recording made with one provider replays the same way.
 */
import type { JsonSchema } from 'yoke'

/** A tool call the model asked for. `args` is the parsed JSON object, or the raw text when it was not valid JSON. */
export interface ModelToolCall {
  id: string
  name: string
  args: Record<string, unknown> | string
}

export type ChatMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ModelToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string; isError?: boolean }

export interface ModelTool {
  name: string
  description: string
  inputSchema: JsonSchema
}

export interface ModelRequest {
  /** the system prompt (rendered prompt sections) */
  system: string
  messages: ChatMessage[]
  tools: ModelTool[]
  /** upper bound on output tokens for this request */
  maxTokens?: number
  temperature?: number
}

export interface Usage {
  inputTokens: number
  outputTokens: number
  /** in US dollars, when the provider instance knows the model's prices */
  costUsd?: number
}

export type StopReason = 'end' | 'tool_use' | 'max_tokens' | 'other'

export interface ModelResponse {
  /** the assistant's text (may be empty when it only calls tools) */
  text: string
  toolCalls: ModelToolCall[]
  stopReason: StopReason
  usage: Usage
  /** the model that answered, as the provider reported it */
  model: string
}

export interface CompleteOptions {
  signal?: AbortSignal
  /** streamed text as it arrives; the response's `text` is the whole of it */
  onText?: (delta: string) => void
}

/**
 * A model: one provider (kind) and model name. `complete` resolves to the whole response; it
 * rejects with a YokeError: MODEL_FAILED (after retries), MODEL_TIMEOUT, or ABORTED when `signal` fired.
 */
export interface ModelClient {
  /** `openai`, `anthropic`, `replay`, … */
  readonly provider: string
  readonly model: string
  /** replay only: the cassette it plays */
  readonly cassette?: string
  /**
   * The model that answers for another lane of the same run, when the provider decides that
   * itself (replay: the same cassette's lane, so the subagents of a replayed run replay too and
   * offline stays offline). Absent: a lane's model is made from its own config by the registry.
   */
  forLane?(lane: string): ModelClient
  complete(request: ModelRequest, options?: CompleteOptions): Promise<ModelResponse>
}

/** Prices per million tokens, for counting cost. */
export interface Pricing {
  inputPerMTok: number
  outputPerMTok: number
}

/** What makes a model client: a provider instance's config, or a sub-provider lane's (spawn). */
export interface LaneOptions {
  model: string
  /** the environment variable that holds the API key */
  apiKeyEnv?: string
  baseUrl?: string
  /** per request (default 60 s) */
  timeoutMs?: number
  /** retries on 429, 5xx and connection errors, with backoff (default 3) */
  maxRetries?: number
  maxTokens?: number
  pricing?: Pricing
  /** replay only: the cassette file, and which lane of it to play */
  cassette?: string
  lane?: string
}
