/**
 * W3C trace context on the wire (issue 30): a call's `trace` (ctx.call.trace, a tracing plugin's
 * span for the call, else its caller's) goes to the server in the request's `params._meta`, as
 * MCP's instrumentation reads it (`traceparent`, `tracestate`). The SDK merges its own keys
 * (progressToken, the 2026-07-28 envelope) into what is given. A call without a trace builds
 * nothing: no `_meta` object per call.
 */
import type { TraceContext } from 'yoke'

export type TraceMeta = { traceparent: string; tracestate?: string }

/** The `_meta` keys of a trace context, or undefined without one. */
export function traceMeta(trace: TraceContext | undefined): TraceMeta | undefined {
  if (trace === undefined) return undefined
  return trace.tracestate
    ? { traceparent: trace.traceparent, tracestate: trace.tracestate }
    : { traceparent: trace.traceparent }
}
