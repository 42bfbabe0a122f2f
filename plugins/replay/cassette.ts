/**
 * Cassettes: model exchanges as JSON lines, one `{v, lane, turn, request, response}` per line.
 * `recordTo` tees a model's exchanges into one; `createReplayModel` plays one back offline and
 * fails, naming the turn and the first difference, when a request no longer matches.
 */
import { closeSync, openSync, readFileSync, statSync, writeSync } from 'node:fs'
import { messageOf, YokeError } from 'yoke'
import type { CompleteOptions, ModelClient, ModelRequest, ModelResponse } from '../models/api.ts'
import './errors.ts'

export interface Exchange {
  v: 1
  lane: string
  turn: number
  request: ModelRequest
  response: ModelResponse
}

/** One cassette file being written; lanes (the main loop, subagents) share it, each counting its own turns. */
export class CassetteWriter {
  #fd: number | undefined
  readonly #turns = new Map<string, number>()

  constructor(readonly file: string) {
    this.#fd = openSync(file, 'w', 0o600)
  }

  /** A model that answers like `inner` and writes each exchange to the cassette. */
  wrap(inner: ModelClient, lane: string): ModelClient {
    return {
      provider: inner.provider,
      model: inner.model,
      complete: async (request: ModelRequest, options?: CompleteOptions) => {
        const response = await inner.complete(request, options)
        const turn = (this.#turns.get(lane) ?? 0) + 1
        this.#turns.set(lane, turn)
        const exchange: Exchange = { v: 1, lane, turn, request, response }
        // a subagent still unwinding after its parent closed the cassette has nothing to write to
        if (this.#fd !== undefined) writeSync(this.#fd, JSON.stringify(exchange) + '\n')
        return response
      },
    }
  }

  close(): void {
    if (this.#fd === undefined) return
    const fd = this.#fd
    this.#fd = undefined
    closeSync(fd)
  }
}

/** Reads a cassette; a line that is not an exchange is CASSETTE_INVALID with its file:line. */
export function readCassette(file: string): Exchange[] {
  let text: string
  try {
    if (statSync(file).size > MAX_CASSETTE) throw new Error(`it is over ${MAX_CASSETTE} bytes`)
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new YokeError(
      'CASSETTE_INVALID',
      { where: file, reason: `cannot read it: ${messageOf(err)}` },
      { file, cause: err },
    )
  }
  const exchanges: Exchange[] = []
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return
    const fail = (reason: string) =>
      new YokeError(
        'CASSETTE_INVALID',
        { where: `${file}:${i + 1}`, reason },
        { file, line: i + 1 },
      )
    let value: Partial<Exchange>
    try {
      value = JSON.parse(line)
    } catch (err) {
      throw fail(`not JSON (${messageOf(err)})`)
    }
    if (value?.v !== 1) throw fail('not a version 1 exchange (v: 1)')
    if (typeof value.lane !== 'string' || !Number.isInteger(value.turn))
      throw fail('lane or turn missing')
    if (!value.request || !Array.isArray(value.request.messages))
      throw fail('request.messages missing')
    if (
      !value.response ||
      typeof value.response.text !== 'string' ||
      !Array.isArray(value.response.toolCalls)
    )
      throw fail('response.text or response.toolCalls missing')
    exchanges.push(value as Exchange)
  })
  return exchanges
}

/**
 * Plays back the exchanges of one lane. A request is answered by the recorded exchange with the
 * same request (so one cassette serves several runs, and concurrent subagents); a request with no
 * match fails, compared with the recorded request of the same turn (its count of assistant messages).
 * Deterministic: no clock, no network. `forLane(key)` plays another lane of the same cassette (a
 * subagent's lane replays too).
 */
export function createReplayModel(options: {
  cassette: string
  lane?: string
  model?: string
}): ModelClient {
  const lane = options.lane ?? 'main'
  const exchanges = readCassette(options.cassette).filter((e) => e.lane === lane)
  const byRequest = new Map<string, ModelResponse[]>()
  for (const e of exchanges)
    byRequest.set(JSON.stringify(e.request), [
      ...(byRequest.get(JSON.stringify(e.request)) ?? []),
      e.response,
    ])
  const played = new Map<string, number>()
  return {
    provider: 'replay',
    cassette: options.cassette,
    model: options.model ?? exchanges[0]?.response.model ?? 'replay',
    forLane: (key) => createReplayModel({ cassette: options.cassette, lane: key }),
    async complete(request: ModelRequest, opts: CompleteOptions = {}) {
      opts.signal?.throwIfAborted()
      const key = JSON.stringify(request)
      const responses = byRequest.get(key)
      if (!responses) throw mismatch(options.cassette, lane, exchanges, JSON.parse(key))
      // the same request recorded more than once is answered in recorded order (the last one repeats)
      const n = played.get(key) ?? 0
      played.set(key, n + 1)
      const response = structuredClone(responses[Math.min(n, responses.length - 1)]!)
      if (response.text) opts.onText?.(response.text)
      return response
    },
  }
}

const turnOf = (request: ModelRequest) =>
  request.messages.filter((m) => m.role === 'assistant').length + 1

/** Where a replay departed from its recording: the turn, the lane and the first difference. */
export interface ReplayMismatch {
  cassette: string
  turn: number
  lane: string
  difference: string
}

const MISMATCH = Symbol('replay mismatch')

/** A REPLAY_MISMATCH error's turn, lane and difference (undefined for any other error). */
export function replayMismatchOf(err: unknown): ReplayMismatch | undefined {
  return (err as { [MISMATCH]?: ReplayMismatch } | null)?.[MISMATCH]
}

function mismatch(
  cassette: string,
  lane: string,
  exchanges: Exchange[],
  request: ModelRequest,
): YokeError {
  const turn = turnOf(request)
  const recorded = exchanges.filter((e) => turnOf(e.request) === turn)
  // of the recorded requests of this turn, report against the one that agrees the longest
  const difference = recorded.length
    ? recorded
        .map((e) => firstDifference(e.request, request, 'request')!)
        .sort((a, b) => depth(b) - depth(a))[0]!
    : `the recording has no turn ${turn} for this lane (it has ${exchanges.length} exchange(s))`
  const details: ReplayMismatch = { cassette, turn, lane, difference }
  const err = new YokeError('REPLAY_MISMATCH', { ...details })
  Object.defineProperty(err, MISMATCH, { value: details })
  return err
}

/** How far into the request a difference lies (later messages mean a longer shared prefix). */
function depth(difference: string): number {
  const m = /^request\.messages\[(\d+)\]/.exec(difference)
  return m ? 1 + Number(m[1]) : 0
}

const MAX_SHOWN = 120
const MAX_CASSETTE = 256 * 1024 * 1024

/** The first place two JSON values differ, as `path: recorded X, now Y` (undefined when equal). */
export function firstDifference(recorded: unknown, now: unknown, path: string): string | undefined {
  if (Object.is(recorded, now)) return undefined
  const show = (v: unknown) => {
    const s = v === undefined ? 'nothing' : JSON.stringify(v)
    return s.length > MAX_SHOWN ? `${s.slice(0, MAX_SHOWN)}…` : s
  }
  if (
    typeof recorded !== 'object' ||
    typeof now !== 'object' ||
    recorded === null ||
    now === null ||
    Array.isArray(recorded) !== Array.isArray(now)
  ) {
    if (typeof recorded === 'string' && typeof now === 'string')
      return `${path}: recorded ${show(recorded)}, now ${show(now)}${where(recorded, now)}`
    return `${path}: recorded ${show(recorded)}, now ${show(now)}`
  }
  if (Array.isArray(recorded) && Array.isArray(now)) {
    for (let i = 0; i < Math.min(recorded.length, now.length); i++) {
      const d = firstDifference(recorded[i], now[i], `${path}[${i}]`)
      if (d) return d
    }
    if (recorded.length !== now.length)
      return `${path}: recorded ${recorded.length} item(s), now ${now.length}`
    return undefined
  }
  const a = recorded as Record<string, unknown>
  const b = now as Record<string, unknown>
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const d = firstDifference(a[key], b[key], `${path}.${key}`)
    if (d) return d
  }
  return undefined
}

/** For long strings: where they start to differ. */
function where(a: string, b: string): string {
  let i = 0
  while (i < a.length && i < b.length && a[i] === b[i]) i++
  return a.length > MAX_SHOWN || b.length > MAX_SHOWN
    ? ` (from character ${i}: recorded ${JSON.stringify(a.slice(i, i + 40))}, now ${JSON.stringify(b.slice(i, i + 40))})`
    : ''
}
