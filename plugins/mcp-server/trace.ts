/**
 * The trace a client's tools/call continues (issue 30): W3C trace context in the request's
 * `params._meta` (`traceparent`, `tracestate`), as MCP's instrumentation sends it. A valid one
 * becomes the call's CallOptions.trace (a tracing plugin's span for the call takes it as parent;
 * a bridge sends the call's on). A malformed one is ignored: the call runs as if none was sent,
 * and the gateway counts it and says so at debug. https://www.w3.org/TR/trace-context/
 */
import type { TraceContext } from 'yoke'

/** version-traceid-parentid-flags, lowercase hex; a later version may add fields after a dash. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/
const ZEROS = /^0+$/
/** what a tracestate header may hold: printable ASCII list members, at most 512 characters here */
const TRACESTATE = /^[\x20-\x7e]{0,512}$/

/** Why `value` is not a traceparent, or undefined when it is one. */
export function traceparentProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `a ${typeof value}, not a string`
  const m = TRACEPARENT.exec(value)
  if (!m) return 'not version-traceid-parentid-flags in lowercase hex'
  const [, version, traceId, parentId, , rest] = m
  if (version === 'ff') return 'version ff is invalid'
  if (version === '00' && rest !== undefined) return 'version 00 has exactly four fields'
  if (ZEROS.test(traceId!)) return 'the trace id is all zeros'
  if (ZEROS.test(parentId!)) return 'the parent id is all zeros'
  return undefined
}

/**
 * The trace context a request's `_meta` carries: undefined when it carries none or a malformed
 * one (told to `told.malformedTrace`; no closure per call). An invalid tracestate alone is dropped, as the W3C rules say.
 */
export function traceOf(
  meta: Record<string, unknown> | undefined,
  told: { malformedTrace(why: string): void },
): TraceContext | undefined {
  const traceparent = meta?.traceparent
  if (traceparent === undefined) return undefined
  const problem = traceparentProblem(traceparent)
  if (problem !== undefined) {
    told.malformedTrace(`traceparent ${JSON.stringify(traceparent)?.slice(0, 80)}: ${problem}`)
    return undefined
  }
  const tracestate = meta!.tracestate
  if (tracestate === undefined || tracestate === '') return { traceparent: traceparent as string }
  if (typeof tracestate === 'string' && TRACESTATE.test(tracestate))
    return { traceparent: traceparent as string, tracestate }
  told.malformedTrace(
    `tracestate ${JSON.stringify(tracestate)?.slice(0, 80)}: dropped, the traceparent kept`,
  )
  return { traceparent: traceparent as string }
}
