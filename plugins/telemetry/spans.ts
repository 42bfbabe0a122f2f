/**
 * Spans as telemetry makes them: W3C ids, a parent from a `traceparent`, attributes and events,
 * ended once into the sinks (the recent ring, the service's listeners, the exporter). The model is
 * our own so that recording costs no OpenTelemetry import (the SDK takes ~100 ms to load, and the
 * default preset loads this plugin in every command): only exporting loads the SDK (export.ts),
 * which takes these spans as its ReadableSpans.
 */
import { randomFillSync } from 'node:crypto'
import type { TraceContext } from 'yoke'
import type { SpanRecord } from './api.ts'

type Value = string | number | boolean | string[]
export type Attributes = Record<string, Value>

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)

/** The ids of a valid `traceparent` (version 00), else undefined. */
export function parseTraceparent(
  traceparent: string | undefined,
): { traceId: string; spanId: string; flags: string } | undefined {
  const m = traceparent ? TRACEPARENT.exec(traceparent.trim().toLowerCase()) : null
  if (!m || m[1] === ZERO_TRACE || m[2] === ZERO_SPAN) return undefined
  return { traceId: m[1]!, spanId: m[2]!, flags: m[3]! }
}

/** Random ids from a pooled buffer: one crypto fill per 256 spans. */
const pool = Buffer.alloc(24 * 256)
let used = pool.length
function randomHex(bytes: number): string {
  if (used + bytes > pool.length) {
    randomFillSync(pool)
    used = 0
  }
  used += bytes
  return pool.toString('hex', used - bytes, used)
}

export const now = (): number => performance.timeOrigin + performance.now()

export class Span {
  readonly traceId: string
  readonly spanId = randomHex(8)
  readonly parentSpanId: string | undefined
  readonly tracestate: string | undefined
  startMs = now()
  endMs = 0
  readonly events: SpanRecord['events'] = []
  status: SpanRecord['status'] = 'unset'
  statusMessage: string | undefined

  constructor(
    public name: string,
    readonly kind: SpanRecord['kind'],
    parent: TraceContext | Span | undefined,
    readonly attributes: Attributes,
    private readonly done: (span: Span) => void,
  ) {
    if (parent instanceof Span) {
      this.traceId = parent.traceId
      this.parentSpanId = parent.spanId
      this.tracestate = parent.tracestate
    } else {
      const ids = parseTraceparent(parent?.traceparent)
      this.traceId = ids?.traceId ?? randomHex(16)
      this.parentSpanId = ids?.spanId
      this.tracestate = ids ? parent?.tracestate : undefined
    }
  }

  get ended(): boolean {
    return this.endMs > 0
  }

  /** The context a call or a far side continues from (sampled: yoke records every span). */
  context(): TraceContext {
    const traceparent = `00-${this.traceId}-${this.spanId}-01`
    return this.tracestate ? { traceparent, tracestate: this.tracestate } : { traceparent }
  }

  event(name: string, attributes: Record<string, string | number | boolean> = {}): void {
    if (!this.ended) this.events.push({ name, timeMs: now(), attributes })
  }

  set(attributes: Attributes): void {
    if (!this.ended) Object.assign(this.attributes, attributes)
  }

  fail(message: string): void {
    this.status = 'error'
    this.statusMessage = message
  }

  /** Ends the span once (a second end is ignored). */
  end(at = now()): void {
    if (this.ended) return
    this.endMs = Math.max(at, this.startMs)
    this.done(this)
  }

  /** The finished span as a record; it shares the span's (frozen) attributes and events. */
  record(): SpanRecord {
    for (const e of this.events) Object.freeze(e.attributes)
    return Object.freeze({
      traceId: this.traceId,
      spanId: this.spanId,
      ...(this.parentSpanId && { parentSpanId: this.parentSpanId }),
      name: this.name,
      kind: this.kind,
      startMs: this.startMs,
      endMs: this.endMs,
      attributes: Object.freeze(this.attributes),
      events: Object.freeze(this.events) as SpanRecord['events'],
      status: this.status,
      ...(this.statusMessage !== undefined && { statusMessage: this.statusMessage }),
    })
  }
}

/** Text cut at `max` characters, marked so a reader sees it was cut. */
export function capped(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…[${text.length - max} more]`
}

/** JSON of a value for a content attribute, never throwing. */
export function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}
