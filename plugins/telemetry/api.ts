/**
 * The public face of telemetry: the `telemetry` service in-process consumers use (the web
 * console): turn span recording on, read the last finished spans, follow new ones. Spans are
 * plain records (no OpenTelemetry types): only the telemetry plugin imports OpenTelemetry.
 */

/** One finished span, as the console shows it. */
export interface SpanRecord {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: 'internal' | 'client' | 'server'
  /** epoch ms (fractional ok) */
  startMs: number
  endMs: number
  attributes: Record<string, string | number | boolean | string[]>
  events: Array<{
    name: string
    timeMs: number
    attributes: Record<string, string | number | boolean>
  }>
  status: 'ok' | 'error' | 'unset'
  statusMessage?: string
}

export interface TelemetryApi {
  /** turns span recording on (taps the pipeline) until the disposer runs; nested holds count */
  record(): () => void
  /** the last finished spans kept in memory (newest last, at most `keep`, default 2000) */
  recent(limit?: number): SpanRecord[]
  /** every finished span while recording; returns its removal */
  onSpan(listener: (span: SpanRecord) => void): () => void
}

declare module 'yoke' {
  interface Services {
    telemetry: TelemetryApi
  }
}
