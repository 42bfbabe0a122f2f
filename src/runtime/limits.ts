/**
 * @module runtime/limits
 * Bounds on calls: the concurrency gate (an exclusive call runs alone in its scope, safe calls
 * overlap under a global and per-source cap, first come first served) and the output limit (over it, a preview
 * with a clear marker stays in the result and the whole output is spilled to a file).
 */
import { appendFileSync, mkdirSync, mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ContentPart, RegisteredTool } from './types.ts'

const IDLE_SCOPES = 256

export interface GateLimits {
  /** calls running at once, all sources together */
  maxConcurrent: number
  /** per source (`mcp:github`, `exec:pdf`, …) */
  perSource: Record<string, number>
}

/** What waits for or holds a slot: a flight (flight.ts) with its tool and exclusion scope. */
interface Slotted {
  readonly tool: RegisteredTool
  readonly ended: Promise<never>
  /** the gate and scope of the slot it holds, set by the gate */
  slot?: { leave(flight: never): void }
  slotScope?: string
}

interface Waiter {
  flight: Slotted
  scope: string
  start: () => void
}

/** What one scope holds: its calls running, and whether one of them is exclusive. */
interface ScopeSlots {
  running: number
  exclusive: boolean
}

/**
 * The concurrency gate. `exclusive` is exclusive within the call's scope (one agent's or one
 * client's batch of calls): it waits for that scope's running calls and holds back that scope's
 * later ones, never another scope's. The caps (`maxConcurrent`, `perSource`) are global.
 */
export class ConcurrencyGate {
  #running = 0
  #scopes = new Map<string, ScopeSlots>()
  /** how many scopes' entries may be idle (no call running) before they are swept */
  #idle = 0
  #bySource = new Map<string, { running: number }>()
  #queue: Waiter[] = []

  constructor(public limits: GateLimits) {}

  /**
   * Takes a slot for the flight when its tool's class and the caps allow: at once (undefined, no
   * promise) or after a wait, which rejects if the flight ends first. `leave` gives it back; a
   * flight that ends while its body still runs (a body deaf to its signal) gives it back after the
   * grace period (Flight.end), so one stuck body cannot stall every later call.
   */
  enter(flight: Slotted, scope: string): Promise<void> | undefined {
    if (!this.#queue.length && this.#fits(flight.tool, scope)) this.#enter(flight, scope)
    else return this.#wait(flight, scope)
  }

  leave(flight: Slotted): void {
    const scope = flight.slotScope
    if (flight.slot !== this || scope === undefined) return
    flight.slot = flight.slotScope = undefined
    this.#running--
    const slots = this.#scopes.get(scope)!
    // an idle scope's entry stays for the next call (one Map write less per call) until many idle
    if (--slots.running === 0 && ++this.#idle > IDLE_SCOPES) this.#sweep()
    slots.exclusive = false // only an exclusive call can have held it
    this.#bySource.get(flight.tool.source)!.running--
    if (this.#queue.length) this.#pump()
  }

  /** Forgets the scopes no call holds (a gateway's sessions come and go). */
  #sweep() {
    for (const [scope, slots] of this.#scopes) if (!slots.running) this.#scopes.delete(scope)
    this.#idle = 0
  }

  #wait(flight: Slotted, scope: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { flight, scope, start: resolve }
      this.#queue.push(waiter)
      this.#pump() // it may fit past waiters held back by their own scope or source
      flight.ended.catch((reason) => {
        const i = this.#queue.indexOf(waiter)
        if (i < 0) return // it started already
        this.#queue.splice(i, 1)
        reject(reason)
        this.#pump() // it may have held others back
      })
    })
  }

  /** Whether the call's scope lets it start now (its own scope's exclusivity). */
  #scopeFits(tool: RegisteredTool, scope: string): boolean {
    const slots = this.#scopes.get(scope)
    if (!slots?.running) return true
    return !slots.exclusive && tool.concurrency === 'safe'
  }

  #fits(tool: RegisteredTool, scope: string): boolean {
    return (
      this.#running < this.limits.maxConcurrent &&
      this.#scopeFits(tool, scope) &&
      (this.#bySource.get(tool.source)?.running ?? 0) <
        (this.limits.perSource[tool.source] ?? Infinity)
    )
  }

  #enter(flight: Slotted, scope: string) {
    const { tool } = flight
    this.#running++
    let slots = this.#scopes.get(scope)
    if (!slots) this.#scopes.set(scope, (slots = { running: 0, exclusive: false }))
    else if (!slots.running) this.#idle--
    slots.running++
    slots.exclusive = tool.concurrency !== 'safe'
    let source = this.#bySource.get(tool.source)
    if (!source) this.#bySource.set(tool.source, (source = { running: 0 }))
    source.running++
    flight.slot = this
    flight.slotScope = scope
  }

  /**
   * Starts waiters in order. A full gate holds back everyone; a waiter its scope holds back (an
   * exclusive call running or waiting there) holds back the rest of its scope, in order, and lets
   * other scopes pass; a safe waiter held back only by its source's cap lets others pass.
   */
  #pump() {
    let blocked: Set<string> | undefined
    for (let i = 0; i < this.#queue.length && this.#running < this.limits.maxConcurrent;) {
      const { flight, scope, start } = this.#queue[i]
      const { tool } = flight
      if (!blocked?.has(scope) && this.#fits(tool, scope)) {
        this.#queue.splice(i, 1)
        this.#enter(flight, scope)
        start()
        continue
      }
      if (tool.concurrency !== 'safe' || !this.#scopeFits(tool, scope))
        (blocked ??= new Set()).add(scope)
      i++
    }
  }
}

export interface OutputLimits {
  /** bytes of text kept in a result */
  maxOutputBytes: number
  /** a token estimate (bytes / 4) kept in a result */
  maxOutputTokens: number
  /** bytes of preview kept when the output is over the limit */
  previewBytes: number
  /** where whole outputs over the limit are written */
  spillDir: string
}

/** Applies the output limit to a result; content over it becomes a preview plus the path of the whole. */
export function limitOutput<
  R extends {
    content?: readonly ContentPart[]
    structured?: unknown
    /** the structured value's JSON is the first content part's text (a tool that returned data) */
    sameText?: boolean
  },
>(result: R, limits: OutputLimits, name: string): R {
  const { content = [], structured, sameText } = result
  const limit = Math.min(limits.maxOutputBytes, limits.maxOutputTokens * 4)
  // fast path: a UTF-16 code unit is at most 3 bytes of UTF-8
  if (structured === undefined || sameText) {
    let units = 0
    for (const part of content) units += part.type === 'text' ? part.text.length : limit
    if (units * (sameText ? 6 : 3) <= limit) return result
  }
  const parts = content.map((p) => (p.type === 'text' ? p.text : JSON.stringify(p)))
  const structuredText =
    structured === undefined ? '' : sameText ? parts[0]! : JSON.stringify(structured)
  const bytes =
    parts.reduce((n, t) => n + Buffer.byteLength(t), 0) + Buffer.byteLength(structuredText)
  if (bytes <= limit) return result
  const file = join(
    spillDir(limits.spillDir),
    `${name}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.txt`,
  )
  for (const text of parts) appendFileSync(file, text + '\n', { mode: 0o600 }) // part by part: no second copy of the whole
  if (structuredText) appendFileSync(file, structuredText + '\n')
  const preview = Buffer.from((parts.find(Boolean) ?? '').slice(0, limits.previewBytes))
    .subarray(0, limits.previewBytes)
    .toString()
  const marker = `\n[yoke: output truncated. It was ${bytes} bytes (about ${Math.ceil(bytes / 4)} tokens); the limit is ${limit} bytes. The whole output is in ${file}]`
  return {
    ...result,
    content: [{ type: 'text' as const, text: preview + marker }],
    structured: undefined,
    truncated: { bytes, spilled: file },
  }
}

/** Outputs can hold secrets: the spill directory is private, and one someone else made is not used. */
function spillDir(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const stat = statSync(dir)
  if (stat.uid === process.getuid?.() && (stat.mode & 0o077) === 0) return dir
  return mkdtempSync(join(tmpdir(), 'yoke-spill-'))
}
