/**
 * A workaround for a cost of the MCP SDK's v2 packages (2.4.0, client and server alike; the
 * reproduction and the report for its maintainers: bench/sdk-repro/README.md). Its Protocol's
 * `request()`, for a spec method called without a result schema (`callTool`, `listTools`, a
 * server's `elicitInput`, …), asks the era codec whether the method has a result entry by
 * validating `undefined` against the method's result schema (`codecResultValidator`): a parse
 * that always fails, whose ZodError is then built and formatted (`String(parsed.error)`), on
 * every request, before anything is sent.
 *
 * `probeResultsOnce(protocol)` makes that question once per era codec and method. It wraps the
 * instance's `request` so a spec method goes through the SDK's own explicit-schema overload with
 * the same validator the SDK would build (the codec's `validateResult`, the same issue message on
 * a bad result). Everything else stays the SDK's: the methods whose codec is pinned during
 * negotiation (`initialize`, `notifications/initialized`, `server/discover`), the extension
 * methods the explicit overload treats differently (`tasks/get`, `tasks/cancel`), a call that
 * passes its own schema, and a method with no result entry on the era (the SDK's own error). An
 * object that is not the SDK's Protocol as 2.4.0 shapes it (no `_wireCodec`) is left as it is.
 * Remove it (and its calls) once the SDK asks its registry instead (the proposed fix).
 */

/** The era codec's answer for a result (2.4.0's WireCodec `validateResult`). */
type Outcome = { ok: true; value: unknown } | { ok: false; reason: string; message?: string }

interface WireCodec {
  validateResult(method: string, raw: unknown): Outcome
}

interface ResultValidator {
  '~standard': {
    version: 1
    vendor: string
    validate(value: unknown): { value: unknown } | { issues: Array<{ message: string }> }
  }
}

type Request = (
  request: { method: string },
  schemaOrOptions?: unknown,
  options?: unknown,
) => unknown

/** The part of the SDK's Protocol (Client or Server) this reaches: `_wireCodec` is protected there. */
interface ProtocolShape {
  request: Request
  _wireCodec?: () => WireCodec
}

/** Left to the SDK's own path (see above). */
const ASIS = new Set([
  'initialize',
  'notifications/initialized',
  'server/discover',
  'tasks/get',
  'tasks/cancel',
])

/** Per era codec (module constants in the SDK), per method: its result validator, or null (none). */
const validators = new WeakMap<WireCodec, Map<string, ResultValidator | null>>()

function resultValidator(codec: WireCodec, method: string): ResultValidator | null {
  let byMethod = validators.get(codec)
  if (!byMethod) validators.set(codec, (byMethod = new Map()))
  let validator = byMethod.get(method)
  if (validator === undefined) {
    // the SDK's own probe, once: a method without a result entry answers `not-in-era`
    const probe = codec.validateResult(method, undefined)
    validator = !probe.ok && probe.reason === 'not-in-era' ? null : codecValidator(codec, method)
    byMethod.set(method, validator)
  }
  return validator
}

/** What the SDK's `codecResultValidator` builds, to the letter. */
function codecValidator(codec: WireCodec, method: string): ResultValidator {
  return {
    '~standard': {
      version: 1,
      vendor: 'mcp-wire-codec',
      validate(value) {
        const outcome = codec.validateResult(method, value)
        if (outcome.ok) return { value: outcome.value }
        const message = outcome.reason === 'invalid' ? outcome.message! : `not-in-era: ${method}`
        return { issues: [{ message }] }
      },
    },
  }
}

const isSchema = (x: unknown): boolean => typeof x === 'object' && x !== null && '~standard' in x

/**
 * Makes the SDK's result-schema lookup once per era and method on this Client or Server (v2,
 * `@modelcontextprotocol/client` or `/server`): `probeResultsOnce(new Client(…))` before
 * `connect`, or on a connected one. Returns the same object.
 */
export function probeResultsOnce<P extends object>(protocol: P): P {
  const p = protocol as unknown as ProtocolShape
  if (typeof p._wireCodec !== 'function' || typeof p.request !== 'function') return protocol
  const request = p.request
  const wireCodec = p._wireCodec
  p.request = function (this: ProtocolShape, req, schemaOrOptions, options) {
    if (ASIS.has(req.method) || isSchema(schemaOrOptions))
      return request.call(this, req, schemaOrOptions, options)
    // every method outside ASIS resolves to the negotiated codec in the SDK (`_resolveOutboundCodec`)
    const validator = resultValidator(wireCodec.call(this), req.method)
    return validator
      ? request.call(this, req, validator, schemaOrOptions)
      : request.call(this, req, schemaOrOptions, options)
  }
  return protocol
}
