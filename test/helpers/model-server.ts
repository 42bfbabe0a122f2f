/**
 * A real HTTP server (node:http on 127.0.0.1, port 0) that speaks the two model wire formats, for
 * tests and benchmarks: OpenAI chat completions (`POST /v1/chat/completions`, JSON or SSE
 * `data: {chunk}` … `data: [DONE]`) and Anthropic messages (`POST /v1/messages`, JSON or SSE
 * events message_start … message_stop). It answers from a script of provider-neutral turns and
 * records every request.
 *
 * @example
 * const server = await modelServer([
 *   { text: 'Let me look.', toolCalls: [{ name: 'read', args: { path: 'a.txt' } }] },
 *   { text: ['Done', ', it says hi.'], usage: { inputTokens: 50, outputTokens: 7 } },
 * ])
 * const openai = createOpenAIModel({ model: 'gpt-x', apiKey: 'k', baseUrl: server.openaiBaseUrl })  // `${url}/v1`
 * const claude = createAnthropicModel({ model: 'claude-x', apiKey: 'k', baseUrl: server.anthropicBaseUrl }) // `${url}`
 * …
 * server.requests[1].body.messages   // what the client sent (parsed JSON), headers too
 * await server.close()               // ends open connections (stalled streams included)
 *
 * - The script is an array (a queue; `server.push()` adds turns) or a function
 *   `(request, index) => turn`. An exhausted queue answers 500 (`model-server: no scripted turn`).
 * - `text` as a string streams word by word; as an array, each element is one delta.
 * - Tool calls stream as the providers do: OpenAI `tool_calls` deltas by index, the arguments split
 *   across chunks; Anthropic `tool_use` blocks with `input_json_delta` pieces. `args` given as a
 *   string is sent verbatim (use it for arguments that are not JSON).
 * - `status` ≥ 400 answers an error in the provider's error shape; `body` replaces the whole body
 *   (hostile tests); `truncateAfter` / `stallAfter` cut a stream after that many events (socket
 *   destroyed / left open); `delayMs` waits before the headers, `chunkDelayMs` between events.
 * - Zero latency by default: no delay unless a turn asks for one, and a stream without
 *   `chunkDelayMs` is written in one piece (benchmarks measure the client, not the server).
 * - Requests are checked against the wire format the way the real APIs do (`strict`, default on):
 *   a malformed request gets a 400 in the provider's shape and `problem` in its record.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export type Provider = 'openai' | 'anthropic'

/** One scripted answer, provider-neutral. */
export interface ScriptTurn {
  /** the assistant text; a string streams word by word, an array is the exact deltas */
  text?: string | string[]
  /** `args` as an object is sent as JSON; as a string, verbatim (not-JSON tests) */
  toolCalls?: Array<{ id?: string; name: string; args: Record<string, unknown> | string }>
  usage?: { inputTokens?: number; outputTokens?: number }
  /** default: `tool_use` with tool calls, else `end` */
  stopReason?: 'end' | 'tool_use' | 'max_tokens'
  /** the model named in the answer (default: the requested one) */
  model?: string
  /** HTTP status; ≥ 400 sends an error body in the provider's shape (with `error` as its message) */
  status?: number
  error?: string
  /** the raw body, sent instead of anything generated (status default 200) */
  body?: string
  /** content-type for `body` (default: text/event-stream for a stream request, else application/json) */
  contentType?: string
  headers?: Record<string, string>
  /** wait this long before answering (headers included) */
  delayMs?: number
  /** wait this long between stream events */
  chunkDelayMs?: number
  /** stream: send this many events, then destroy the socket (a connection lost mid-stream) */
  truncateAfter?: number
  /** stream: send this many events, then send nothing more (the connection stays open) */
  stallAfter?: number
}

export interface RecordedRequest {
  provider: Provider
  method: string
  path: string
  headers: IncomingHttpHeaders
  /** the parsed JSON body (undefined when it was not JSON) */
  body: any
  raw: string
  stream: boolean
  /** why a strict check refused it (answered 400) */
  problem?: string
  /** true once the client closed the connection before the answer ended */
  cancelled: boolean
  /** when it arrived (performance.now()) */
  at: number
}

export type Script =
  ScriptTurn[] | ((request: RecordedRequest, index: number) => ScriptTurn | Promise<ScriptTurn>)

export interface ModelServerOptions {
  /** check requests against the wire formats (default true) */
  strict?: boolean
}

export interface ModelServer {
  /** `http://127.0.0.1:PORT` */
  readonly url: string
  /** openai's `baseUrl`: `${url}/v1` (the SDK appends /chat/completions) */
  readonly openaiBaseUrl: string
  /** anthropic's `baseUrl`: `${url}` (the SDK appends /v1/messages) */
  readonly anthropicBaseUrl: string
  /** every request, in arrival order */
  readonly requests: RecordedRequest[]
  /** adds turns to the queue (array scripts only) */
  push(...turns: ScriptTurn[]): void
  /** the requests still waiting for an answer to end */
  readonly open: number
  /** ends every connection (stalled streams too) and stops listening */
  close(): Promise<void>
}

/** Starts a model server on 127.0.0.1 (a free port). */
export async function modelServer(
  script: Script = [],
  options: ModelServerOptions = {},
): Promise<ModelServer> {
  const strict = options.strict ?? true
  const queue = Array.isArray(script) ? [...script] : undefined
  const requests: RecordedRequest[] = []
  const sockets = new Set<Socket>()
  const timers = new Set<NodeJS.Timeout>()
  let open = 0
  let closed = false
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      if (!ms) return resolve()
      const timer = setTimeout(() => (timers.delete(timer), resolve()), ms)
      timers.add(timer)
    })

  const server = createServer(async (req, res) => {
    open++
    res.on('close', () => open--)
    try {
      await handle(req, res)
    } catch (err) {
      if (!res.headersSent)
        sendJson(res, 500, { error: { message: `model-server: ${(err as Error).message}` } })
      else res.destroy()
    }
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const raw = Buffer.concat(chunks).toString('utf8')
    const path = (req.url ?? '/').split('?')[0]
    const provider: Provider | undefined =
      path === '/v1/chat/completions' ? 'openai' : path === '/v1/messages' ? 'anthropic' : undefined
    let body: any
    try {
      body = JSON.parse(raw)
    } catch {
      body = undefined
    }
    const record: RecordedRequest = {
      provider: provider ?? 'openai',
      method: req.method ?? 'GET',
      path,
      headers: req.headers,
      body,
      raw,
      stream: body?.stream === true,
      cancelled: false,
      at: performance.now(),
    }
    requests.push(record)
    res.on('close', () => {
      if (!res.writableFinished) record.cancelled = true
    })
    if (!provider || req.method !== 'POST')
      return sendError(res, record.provider, 404, `model-server: no route ${req.method} ${path}`)
    const problem =
      body === undefined
        ? 'the body is not JSON'
        : strict
          ? provider === 'openai'
            ? checkOpenAI(body)
            : checkAnthropic(body)
          : undefined
    if (problem) {
      record.problem = problem
      return sendError(res, provider, 400, `model-server: ${problem}`)
    }
    const index = requests.length - 1
    const turn = queue
      ? queue.shift()
      : await (script as Exclude<Script, ScriptTurn[]>)(record, index)
    if (!turn) return sendError(res, provider, 500, 'model-server: no scripted turn left')
    await wait(turn.delayMs ?? 0)
    if (closed || res.destroyed) return
    const headers = { 'x-request-id': `req_${index}`, ...turn.headers }
    if (turn.body !== undefined) {
      res.writeHead(turn.status ?? 200, {
        'content-type':
          turn.contentType ?? (record.stream ? 'text/event-stream' : 'application/json'),
        ...headers,
      })
      return void res.end(turn.body)
    }
    if ((turn.status ?? 200) >= 400)
      return sendError(
        res,
        provider,
        turn.status!,
        turn.error ?? `scripted ${turn.status}`,
        headers,
      )
    const model = turn.model ?? String(body.model)
    if (!record.stream) {
      const answer =
        provider === 'openai' ? openaiJson(turn, model, index) : anthropicJson(turn, model, index)
      return sendJson(res, turn.status ?? 200, answer, headers)
    }
    const events =
      provider === 'openai' ? openaiEvents(turn, model, index) : anthropicEvents(turn, model, index)
    res.writeHead(turn.status ?? 200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      ...headers,
    })
    const cut = turn.truncateAfter ?? turn.stallAfter
    const sent = cut === undefined ? events : events.slice(0, cut)
    if (!turn.chunkDelayMs) res.write(sent.join(''))
    else {
      res.flushHeaders()
      for (const event of sent) {
        if (closed || res.destroyed) return
        res.write(event)
        await wait(turn.chunkDelayMs)
      }
    }
    if (turn.truncateAfter !== undefined) return void setImmediate(() => res.destroy())
    if (turn.stallAfter !== undefined) return // left open until the client gives up or close()
    res.end()
  }

  return {
    url,
    openaiBaseUrl: `${url}/v1`,
    anthropicBaseUrl: url,
    requests,
    push(...turns) {
      if (!queue) throw new Error('push() needs an array script')
      queue.push(...turns)
    },
    get open() {
      return open
    },
    async close() {
      closed = true
      for (const timer of timers) clearTimeout(timer)
      const done = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const socket of sockets) socket.destroy()
      await done
    },
  }
}

// ---- wire answers -------------------------------------------------------------------------------

const words = (text: string | string[] | undefined): string[] =>
  Array.isArray(text) ? text : text ? (text.match(/\s*\S+\s*/g) ?? [text]) : []
const argsText = (args: Record<string, unknown> | string) =>
  typeof args === 'string' ? args : JSON.stringify(args)
/** JSON text cut into about three pieces, as the providers stream arguments */
const pieces = (text: string): string[] => {
  if (text.length < 3) return [text]
  const third = Math.ceil(text.length / 3)
  return [text.slice(0, third), text.slice(third, 2 * third), text.slice(2 * third)].filter(Boolean)
}
const toolId = (provider: Provider, index: number, i: number) =>
  provider === 'openai' ? `call_${index}_${i}` : `toolu_${index}_${i}`
const stopOf = (turn: ScriptTurn) =>
  turn.stopReason ?? (turn.toolCalls?.length ? 'tool_use' : 'end')

const OPENAI_FINISH = { end: 'stop', tool_use: 'tool_calls', max_tokens: 'length' } as const
const ANTHROPIC_STOP = { end: 'end_turn', tool_use: 'tool_use', max_tokens: 'max_tokens' } as const

function openaiUsage(turn: ScriptTurn) {
  const prompt = turn.usage?.inputTokens ?? 10
  const completion = turn.usage?.outputTokens ?? 5
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

function openaiJson(turn: ScriptTurn, model: string, index: number) {
  const text = words(turn.text).join('')
  const toolCalls = turn.toolCalls?.map((c, i) => ({
    id: c.id ?? toolId('openai', index, i),
    type: 'function',
    function: { name: c.name, arguments: argsText(c.args) },
  }))
  return {
    id: `chatcmpl-${index}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text || (toolCalls ? null : ''),
          refusal: null,
          ...(toolCalls && { tool_calls: toolCalls }),
        },
        finish_reason: OPENAI_FINISH[stopOf(turn)],
        logprobs: null,
      },
    ],
    usage: openaiUsage(turn),
  }
}

function openaiEvents(turn: ScriptTurn, model: string, index: number): string[] {
  const base = {
    id: `chatcmpl-${index}`,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
  }
  const chunk = (delta: object, finish: string | null = null) =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`
  const out = [chunk({ role: 'assistant', content: '' })]
  for (const piece of words(turn.text)) out.push(chunk({ content: piece }))
  turn.toolCalls?.forEach((c, i) => {
    const [first, ...rest] = pieces(argsText(c.args))
    out.push(
      chunk({
        tool_calls: [
          {
            index: i,
            id: c.id ?? toolId('openai', index, i),
            type: 'function',
            function: { name: c.name, arguments: first },
          },
        ],
      }),
    )
    for (const part of rest)
      out.push(chunk({ tool_calls: [{ index: i, function: { arguments: part } }] }))
  })
  out.push(chunk({}, OPENAI_FINISH[stopOf(turn)]))
  out.push(`data: ${JSON.stringify({ ...base, choices: [], usage: openaiUsage(turn) })}\n\n`)
  out.push('data: [DONE]\n\n')
  return out
}

function anthropicJson(turn: ScriptTurn, model: string, index: number) {
  const text = words(turn.text).join('')
  const content: object[] = text ? [{ type: 'text', text }] : []
  turn.toolCalls?.forEach((c, i) => {
    let input: unknown = c.args
    if (typeof input === 'string') input = safeParse(input) ?? {}
    content.push({
      type: 'tool_use',
      id: c.id ?? toolId('anthropic', index, i),
      name: c.name,
      input,
    })
  })
  return {
    id: `msg_${index}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: ANTHROPIC_STOP[stopOf(turn)],
    stop_sequence: null,
    usage: {
      input_tokens: turn.usage?.inputTokens ?? 10,
      output_tokens: turn.usage?.outputTokens ?? 5,
    },
  }
}

function anthropicEvents(turn: ScriptTurn, model: string, index: number): string[] {
  const event = (type: string, data: object) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  const message = {
    id: `msg_${index}`,
    type: 'message',
    role: 'assistant',
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
  }
  const out = [
    event('message_start', {
      message: {
        ...message,
        usage: { input_tokens: turn.usage?.inputTokens ?? 10, output_tokens: 1 },
      },
    }),
    event('ping', {}),
  ]
  let block = 0
  const deltas = words(turn.text)
  if (deltas.length) {
    out.push(
      event('content_block_start', { index: block, content_block: { type: 'text', text: '' } }),
    )
    for (const text of deltas)
      out.push(event('content_block_delta', { index: block, delta: { type: 'text_delta', text } }))
    out.push(event('content_block_stop', { index: block++ }))
  }
  turn.toolCalls?.forEach((c, i) => {
    out.push(
      event('content_block_start', {
        index: block,
        content_block: {
          type: 'tool_use',
          id: c.id ?? toolId('anthropic', index, i),
          name: c.name,
          input: {},
        },
      }),
    )
    for (const partial_json of pieces(argsText(c.args)))
      out.push(
        event('content_block_delta', {
          index: block,
          delta: { type: 'input_json_delta', partial_json },
        }),
      )
    out.push(event('content_block_stop', { index: block++ }))
  })
  out.push(
    event('message_delta', {
      delta: { stop_reason: ANTHROPIC_STOP[stopOf(turn)], stop_sequence: null },
      usage: { output_tokens: turn.usage?.outputTokens ?? 5 },
    }),
  )
  out.push(event('message_stop', {}))
  return out
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers })
  res.end(JSON.stringify(body))
}

function sendError(
  res: ServerResponse,
  provider: Provider,
  status: number,
  message: string,
  headers: Record<string, string> = {},
) {
  const body =
    provider === 'openai'
      ? {
          error: {
            message,
            type:
              status === 429
                ? 'rate_limit_exceeded'
                : status >= 500
                  ? 'server_error'
                  : 'invalid_request_error',
            param: null,
            code: null,
          },
        }
      : {
          type: 'error',
          error: {
            type:
              status === 429
                ? 'rate_limit_error'
                : status >= 500
                  ? 'api_error'
                  : 'invalid_request_error',
            message,
          },
        }
  sendJson(res, status, body, headers)
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

// ---- request checks (what the real APIs refuse with a 400) ------------------------------------

const isObject = (x: unknown): x is Record<string, any> =>
  typeof x === 'object' && x !== null && !Array.isArray(x)

function checkOpenAI(body: any): string | undefined {
  if (!isObject(body)) return 'the body is not a JSON object'
  if (typeof body.model !== 'string' || !body.model) return 'model: a non-empty string is required'
  if (!Array.isArray(body.messages) || !body.messages.length)
    return 'messages: a non-empty array is required'
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools) || !body.tools.length)
      return 'tools: [] is too short (omit it when there are no tools)'
    for (const [i, t] of body.tools.entries()) {
      if (
        t?.type !== 'function' ||
        typeof t.function?.name !== 'string' ||
        !isObject(t.function.parameters)
      )
        return `tools[${i}]: expected {type: "function", function: {name, parameters}}`
    }
  }
  if (body.stream_options !== undefined && body.stream !== true)
    return 'stream_options: only allowed when stream is true'
  const pending = new Set<string>()
  for (const [i, m] of body.messages.entries()) {
    const at = `messages[${i}]`
    if (!isObject(m)) return `${at}: not an object`
    if (m.role !== 'tool' && pending.size)
      return `${at}: the assistant's tool_calls ${[...pending].join(', ')} have no tool message`
    switch (m.role) {
      case 'system':
      case 'developer':
      case 'user':
        if (typeof m.content !== 'string' && !Array.isArray(m.content))
          return `${at}.content: required`
        break
      case 'assistant':
        if (m.content !== null && m.content !== undefined && typeof m.content !== 'string')
          return `${at}.content: a string or null`
        if (m.tool_calls !== undefined) {
          if (!Array.isArray(m.tool_calls) || !m.tool_calls.length)
            return `${at}.tool_calls: a non-empty array`
          for (const c of m.tool_calls) {
            if (
              typeof c?.id !== 'string' ||
              c.type !== 'function' ||
              typeof c.function?.name !== 'string' ||
              typeof c.function?.arguments !== 'string'
            ) {
              return `${at}.tool_calls: each needs id, type "function", function.name and function.arguments (a string)`
            }
            pending.add(c.id)
          }
        } else if (typeof m.content !== 'string') return `${at}: content or tool_calls is required`
        break
      case 'tool':
        if (typeof m.tool_call_id !== 'string' || !pending.has(m.tool_call_id))
          return `${at}.tool_call_id: ${JSON.stringify(m.tool_call_id)} answers no tool call of the previous assistant message`
        if (typeof m.content !== 'string' && !Array.isArray(m.content))
          return `${at}.content: required`
        pending.delete(m.tool_call_id)
        break
      default:
        return `${at}.role: ${JSON.stringify(m.role)} is not a role`
    }
  }
  if (pending.size)
    return `the assistant's tool_calls ${[...pending].join(', ')} have no tool message`
  return undefined
}

function checkAnthropic(body: any): string | undefined {
  if (!isObject(body)) return 'the body is not a JSON object'
  if (typeof body.model !== 'string' || !body.model) return 'model: Field required'
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1)
    return 'max_tokens: Field required (a positive integer)'
  if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system))
    return 'system: a string or an array of text blocks'
  if (!Array.isArray(body.messages) || !body.messages.length)
    return 'messages: at least one message is required'
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return 'tools: an array'
    for (const [i, t] of body.tools.entries())
      if (typeof t?.name !== 'string' || !isObject(t.input_schema))
        return `tools.${i}: name and input_schema are required`
  }
  let toolUses = new Set<string>()
  for (const [i, m] of body.messages.entries()) {
    const at = `messages.${i}`
    if (!isObject(m) || (m.role !== 'user' && m.role !== 'assistant'))
      return `${at}.role: "user" or "assistant"`
    if (i === 0 && m.role !== 'user') return 'messages: the first message must use the "user" role'
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content
    if (!Array.isArray(blocks) || !blocks.length)
      return `${at}: all messages must have non-empty content`
    const answered = new Set<string>()
    for (const [j, b] of blocks.entries()) {
      const where = `${at}.content.${j}`
      if (!isObject(b)) return `${where}: not a content block`
      if (b.type === 'text' && (typeof b.text !== 'string' || (!b.text && blocks.length > 1)))
        return `${where}: text content blocks must be non-empty`
      if (b.type === 'tool_use') {
        if (m.role !== 'assistant') return `${where}: tool_use blocks belong to assistant messages`
        if (typeof b.id !== 'string' || typeof b.name !== 'string' || !isObject(b.input))
          return `${where}: tool_use needs id, name and an object input`
      }
      if (b.type === 'tool_result') {
        if (m.role !== 'user') return `${where}: tool_result blocks belong to user messages`
        if (!toolUses.has(b.tool_use_id))
          return `${where}: unexpected tool_use_id ${JSON.stringify(b.tool_use_id)} in tool_result blocks: each tool_result block must have a corresponding tool_use block in the previous message`
        answered.add(b.tool_use_id)
      }
    }
    if (m.role === 'user' && toolUses.size) {
      const missing = [...toolUses].filter((id) => !answered.has(id))
      if (missing.length)
        return `${at}: tool_use ids were found without tool_result blocks immediately after: ${missing.join(', ')}`
    }
    toolUses = new Set(
      m.role === 'assistant'
        ? blocks.filter((b: any) => b.type === 'tool_use').map((b: any) => b.id)
        : [],
    )
  }
  return undefined
}
