/**
 * A server's protocol transcript: the last JSON-RPC messages between yoke and one MCP server, both
 * directions, across its reconnects, read as exchanges (a request paired with its answer by id,
 * with the time between; a notification alone).
 *
 * Recording is on the hot path of every call, so it only keeps references: a message goes into a
 * fixed ring (`SLOTS`) with its direction, its connection and a clock reading — no copy, no
 * serialising, no allocation. What is shown is made when `entries()` is read: paired, masked
 * (values under keys that look secret, and the entry's own secrets — its env and header values,
 * its OAuth tokens — wherever they appear) and cut to `MESSAGE_CHARS` per message, saying so.
 *
 * The ring is bounded in bytes as well as in messages: a message larger than `MESSAGE_CHARS` is not
 * kept by reference but as a cut, masked copy, made when it is recorded (its cost bounded by the
 * cap, on a message that cost far more to read). Its size comes from the transport when that knows
 * it (a stdio line, a serialised send); otherwise a walk that stops at the cap measures it.
 */
import { performance } from 'node:perf_hooks'
import type { McpTranscriptEntry } from '../mcp/api.ts'

/** the messages kept (requests, answers, notifications, both directions) */
export const SLOTS = 256
/** the exchanges `entries()` gives at most */
export const ENTRIES = 100
/** the most characters (of JSON) one message keeps and shows; a larger one is cut, saying so */
export const MESSAGE_CHARS = 4096
/** what a masked value reads */
export const MASK = '•••'
/** how deep a shown value nests; below it, a note */
const DEPTH = 24

/** One exchange as the console and `yoke mcp transcript` show it: the hub's McpTranscriptEntry. */
export type TranscriptEntry = McpTranscriptEntry

const OUT = 0
const IN = 1
type Direction = typeof OUT | typeof IN

/** A message kept as a cut copy (it was over MESSAGE_CHARS when recorded). */
class Cut {
  constructor(readonly message: Record<string, unknown>) {}
}

/** A line from the server that is not JSON-RPC (kept as its cut text). */
class Junk {
  constructor(readonly line: string) {}
}

type Id = string | number
type Message = {
  id?: Id
  method?: string
  params?: unknown
  result?: unknown
  error?: unknown
  requestId?: unknown
}

export class Transcript {
  readonly #messages: unknown[] = new Array(SLOTS)
  readonly #at = new Float64Array(SLOTS)
  /** connection << 1 | direction */
  readonly #meta = new Uint32Array(SLOTS)
  /** how many were ever recorded: the next slot is #count % SLOTS */
  #count = 0
  #connections = 0
  /** told of each message recorded (the console pushes the view while someone looks) */
  readonly #watchers = new Set<() => void>()

  /** `secrets`: the strings never shown (the entry's env and header values, its tokens). */
  constructor(readonly secrets: () => readonly string[] = () => []) {}

  /** A new connection's recorder: its answers are paired with its own requests only. */
  connection(): Recorder {
    return new Recorder(this, ++this.#connections)
  }

  /** Keeps `message` (by reference when `chars`, its JSON length, is within the cap). */
  put(connection: number, direction: Direction, message: unknown, chars: number): void {
    const i = this.#count++ % SLOTS
    this.#messages[i] = chars > MESSAGE_CHARS ? cutMessage(message, this.#masker()) : message
    this.#at[i] = performance.now()
    this.#meta[i] = (connection << 1) | direction
    if (this.#watchers.size) for (const watcher of this.#watchers) watcher()
  }

  /**
   * Calls `listener` after each message recorded, until the returned disposer runs (idempotent).
   * It runs on the hot path, synchronously: it should only note that something changed (a timer
   * that reads `entries()` later), never read them itself.
   */
  watch(listener: () => void): () => void {
    const own = () => listener()
    this.#watchers.add(own)
    return () => void this.#watchers.delete(own)
  }

  /** A line the server wrote that is not JSON-RPC. */
  junk(connection: number, line: string): void {
    const cut = new Preview(MESSAGE_CHARS, this.#masker()).string(line)
    this.put(connection, IN, new Junk(cut), 0)
  }

  /** The last ENTRIES exchanges, oldest first: paired, masked, cut. */
  entries(): TranscriptEntry[] {
    const open = new Map<string, Raw>()
    const all: Raw[] = []
    for (let n = Math.max(0, this.#count - SLOTS); n < this.#count; n++) {
      const i = n % SLOTS
      const connection = this.#meta[i]! >> 1
      const from = (this.#meta[i]! & 1) === OUT ? 'yoke' : 'server'
      const at = performance.timeOrigin + this.#at[i]!
      const kept = this.#messages[i]
      const cut = kept instanceof Cut
      const m = (cut ? kept.message : kept) as Message
      if (kept instanceof Junk) {
        all.push({ method: '(not JSON-RPC)', from, at, request: kept.line, cut: true })
      } else if (typeof m.method === 'string') {
        const raw: Raw = { id: m.id, method: m.method, from, at, request: m.params, cut }
        if (m.id !== undefined) open.set(keyOf(connection, from, m.id), raw)
        else if (m.method === 'notifications/cancelled') {
          // the sender gave up on its own request, unanswered so far (a late answer still pairs)
          const gaveUp = open.get(keyOf(connection, from, (m.params as Message)?.requestId))
          if (gaveUp) gaveUp.cancelled = true
        }
        all.push(raw)
      } else {
        // an answer goes to the other side's request of the same connection
        const asker = from === 'yoke' ? 'server' : 'yoke'
        const key = keyOf(connection, asker, m.id)
        const request = open.get(key)
        const answer = { response: m.result, error: m.error }
        if (request) {
          open.delete(key)
          Object.assign(request, answer, { answeredAt: at, cut: request.cut || cut })
        } else all.push({ id: m.id, method: '(answer)', from: asker, at, ...answer, cut })
      }
    }
    const mask = this.#masker()
    return all.slice(-ENTRIES).map((raw) => shown(raw, mask))
  }

  #masker(): Masker {
    return new Masker(this.secrets())
  }
}

/** Records one connection's messages into its transcript (the wire calls it). */
export class Recorder {
  constructor(
    readonly transcript: Transcript,
    readonly connection: number,
  ) {}

  /** yoke sent `message`; `chars`: its JSON length when the transport knows it */
  sent(message: unknown, chars?: number): void {
    this.transcript.put(this.connection, OUT, message, chars ?? charsAtMost(message))
  }

  /** the server sent `message`; `chars`: its JSON length when the transport knows it */
  received(message: unknown, chars?: number): void {
    this.transcript.put(this.connection, IN, message, chars ?? charsAtMost(message))
  }

  /** the server wrote a line that is not JSON-RPC */
  junk(line: string): void {
    this.transcript.junk(this.connection, line)
  }
}

interface Raw {
  id?: unknown
  method: string
  from: 'yoke' | 'server'
  at: number
  answeredAt?: number
  request?: unknown
  response?: unknown
  error?: unknown
  cancelled?: boolean
  cut: boolean
}

const keyOf = (connection: number, from: string, id: unknown) =>
  `${connection} ${from} ${typeof id} ${String(id)}`

/** One exchange as shown: masked, each message cut to MESSAGE_CHARS. */
function shown(raw: Raw, mask: Masker): TranscriptEntry {
  let truncated = raw.cut
  const view = (value: unknown) => {
    const preview = new Preview(MESSAGE_CHARS, mask)
    const out = preview.value(value, 0)
    truncated ||= preview.cut
    return out
  }
  const id = typeof raw.id === 'string' || typeof raw.id === 'number' ? raw.id : undefined
  const entry: TranscriptEntry = {
    ...(id !== undefined && { id: typeof id === 'string' ? mask.string(id).slice(0, 200) : id }),
    method: raw.method.slice(0, 200),
    from: raw.from,
    at: Math.round(raw.at),
    ...(raw.answeredAt !== undefined && {
      durationMs: Math.round((raw.answeredAt - raw.at) * 1000) / 1000,
    }),
  }
  if (raw.request !== undefined) entry.request = view(raw.request)
  if (raw.response !== undefined) entry.response = view(raw.response)
  if (raw.error !== undefined) entry.error = view(raw.error)
  if (raw.cancelled) entry.cancelled = true
  if (truncated) entry.truncated = true
  return entry
}

/**
 * Keys whose values are secrets: tokens, secrets, passwords, authorization, API keys, cookies,
 * credentials, private and access keys, session ids, signatures. Not counts of tokens (`maxTokens`,
 * `inputTokens`) nor MCP's `progressToken`.
 */
const SECRET_KEY =
  /token|secret|passw|passphrase|authori[sz]ation|api[-_ ]?key|cookie|credential|private[-_ ]?key|access[-_ ]?key|session[-_ ]?id|bearer|signature/i
const COUNT_OR_PROGRESS = /tokens$|^progress[-_]?token$/i

export function secretKey(key: string): boolean {
  return SECRET_KEY.test(key) && !COUNT_OR_PROGRESS.test(key)
}

/** Replaces the entry's own secrets wherever they appear in a string. */
class Masker {
  readonly #secrets: readonly string[]
  /** the longest secret's length */
  readonly #longest: number
  constructor(secrets: readonly string[]) {
    // the longest first: a secret that contains another is masked whole
    this.#secrets = [...new Set(secrets)].filter(Boolean).sort((a, b) => b.length - a.length)
    this.#longest = this.#secrets[0]?.length ?? 0
  }

  string(text: string): string {
    for (const secret of this.#secrets)
      if (text.includes(secret)) text = text.split(secret).join(MASK)
    return text
  }

  /**
   * The start of `text`, masked, at most `keep` characters, reading no more than keep + the
   * longest secret (a megabyte string costs what its head does): a secret that starts within
   * `keep` is whole in what is read, and the cut moves back by what masking saved, so no piece of
   * one that starts later is left either.
   */
  head(text: string, keep: number): string {
    const read = text.slice(0, keep + this.#longest)
    const masked = this.string(read)
    return masked.slice(0, Math.max(0, keep - Math.max(0, read.length - masked.length)))
  }
}

/**
 * A masked copy of a value cut to a budget of JSON characters: a long string keeps its start and
 * says how much was left out; an array or object past the budget says how many items or keys were;
 * a value nested past DEPTH is a note. `cut` tells whether anything was.
 */
class Preview {
  cut = false
  constructor(
    public budget: number,
    readonly mask: Masker,
  ) {}

  value(value: unknown, depth: number): unknown {
    if (value === null || typeof value === 'boolean') return this.#spend(5, value)
    if (typeof value === 'number') return this.#spend(String(value).length, value)
    if (typeof value === 'string') return this.string(value)
    if (typeof value !== 'object') return undefined
    if (depth >= DEPTH) return this.#note('… nested deeper, not shown')
    return Array.isArray(value) ? this.#array(value, depth) : this.#object(value, depth)
  }

  string(text: string): string {
    if (text.length + 2 <= this.budget) return this.#spend(text.length + 2, this.mask.string(text))
    const head = this.mask.head(text, Math.max(0, this.budget - 40))
    this.cut = true
    this.budget = 0
    return `${head}… (${text.length - head.length} more characters)`
  }

  #array(items: unknown[], depth: number): unknown[] {
    const out: unknown[] = []
    this.budget -= 2
    for (let i = 0; i < items.length; i++) {
      if (this.budget <= 0) {
        out.push(this.#note(`… ${items.length - i} more items`))
        break
      }
      out.push(this.value(items[i], depth + 1) ?? null)
      this.budget -= 1
    }
    return out
  }

  #object(value: object, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    this.budget -= 2
    const keys = Object.keys(value)
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!
      if (this.budget <= 0) {
        out['…'] = this.#note(`${keys.length - i} more keys`)
        break
      }
      this.budget -= Math.min(key.length, 200) + 4
      const shownKey = this.mask.string(key.length > 200 ? `${key.slice(0, 200)}…` : key)
      const item = (value as Record<string, unknown>)[key]
      if (item === undefined) continue
      out[shownKey] = secretKey(key) ? this.#spend(5, MASK) : this.value(item, depth + 1)
    }
    return out
  }

  #spend<T>(chars: number, value: T): T {
    this.budget -= chars
    return value
  }

  #note(text: string): string {
    this.cut = true
    this.budget = 0
    return text
  }
}

/** A message over the cap, kept as a cut, masked copy: its id and method whole, the rest cut. */
function cutMessage(message: unknown, mask: Masker): Cut {
  const m = message as Message
  const preview = new Preview(MESSAGE_CHARS, mask)
  const kept: Record<string, unknown> = {}
  if (typeof m.id === 'string' || typeof m.id === 'number')
    kept.id = typeof m.id === 'string' ? m.id.slice(0, 200) : m.id
  if (typeof m.method === 'string') kept.method = m.method.slice(0, 200)
  for (const part of ['params', 'result', 'error'] as const)
    if (m[part] !== undefined) kept[part] = preview.value(m[part], 0)
  return new Cut(kept)
}

/**
 * The JSON length of a value, counted only up to just past `cap` (and a value nested deeper than
 * DEPTH counts as over it): what it costs is bounded by the cap, whatever the value.
 */
export function charsAtMost(value: unknown, cap = MESSAGE_CHARS): number {
  let chars = 0
  const over = cap + 1
  const walk = (v: unknown, depth: number): void => {
    if (chars > cap) return
    if (typeof v === 'string') chars += v.length + 2
    else if (typeof v === 'number') chars += 8
    else if (v === null || typeof v === 'boolean') chars += 5
    else if (typeof v === 'object') {
      if (depth >= DEPTH) {
        chars = over
        return
      }
      chars += 2
      if (Array.isArray(v)) for (let i = 0; i < v.length && chars <= cap; i++) walk(v[i], depth + 1)
      else
        for (const key in v) {
          chars += key.length + 4
          walk((v as Record<string, unknown>)[key], depth + 1)
          if (chars > cap) return
        }
    }
  }
  walk(value, 0)
  return Math.min(chars, over)
}
