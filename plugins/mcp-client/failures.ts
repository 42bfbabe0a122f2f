/**
 * What a failed call means, in yoke's terms: a TIMEOUT (callMs without progress, or maxCallMs),
 * an HTTP session the server forgot (sent again on a new one), a connection that ended
 * (SERVER_UNAVAILABLE, the supervisor reconnects), a server that could not be reached (the same,
 * and the connection is dropped), or the server's own answer (a JSON-RPC error, a result the
 * SDK refused, a task that failed): that one is the call's error and the connection stays.
 */
import {
  InsufficientScopeError,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
} from '@modelcontextprotocol/client'
import { DispatchError } from '@modelcontextprotocol/ext-tasks/client'
import { messageOf, YokeError } from 'yoke'
import { totalCallMs, type McpClientConfig } from './config.ts'
import { sessionExpired } from './http.ts'
import { LoginRequired } from './oauth/client.ts'
import type { Session } from './session.ts'

/** A question in a call's result that yoke cannot answer (sampling off, no roots): the call's error. */
export class Unanswerable extends Error {}

export type Failure =
  | { kind: 'answer' | 'timeout' | 'closed'; error: Error }
  | { kind: 'expired'; error: Error }
  | { kind: 'unreachable'; error: Error; why: string }

/** SDK errors that are about this request, not about reaching the server. */
const REQUEST_CODES = new Set<string>([
  SdkErrorCode.InvalidResult,
  SdkErrorCode.UnsupportedResultType,
  SdkErrorCode.InputRequiredRoundsExceeded,
  SdkErrorCode.MethodNotSupportedByProtocolVersion,
  SdkErrorCode.CapabilityNotSupported,
  SdkErrorCode.ListPaginationExceeded,
])

/** The LoginRequired somewhere in an error's causes (the transport wraps what its auth throws). */
export function loginNeeded(err: unknown): LoginRequired | undefined {
  for (let e = err, depth = 0; e && depth < 6; e = (e as Error).cause, depth++)
    if (e instanceof LoginRequired) return e
  return undefined
}

export function failure(
  thrown: unknown,
  cfg: McpClientConfig,
  tool: string,
  session: Session,
  viaTask = false,
): Failure {
  const err = thrown instanceof DispatchError && thrown.cause ? thrown.cause : thrown
  const server = cfg.serverName
  const message = messageOf(err)
  const unavailable = (state: string) => new YokeError('SERVER_UNAVAILABLE', { server, state })
  if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout) {
    // callMs passed without progress, or maxCallMs in all
    const ms = /total/i.test(message) ? totalCallMs(cfg) : cfg.callMs
    return { kind: 'timeout', error: new YokeError('TIMEOUT', { name: tool, ms }, { cause: err }) }
  }
  const login = loginNeeded(err)
  if (login) return { kind: 'unreachable', why: login.message, error: login }
  if (err instanceof InsufficientScopeError) {
    // a refresh cannot widen a grant: the next login asks for the union (see oauth/client.ts)
    session.wantScope?.(err.requiredScope)
    return {
      kind: 'answer',
      error: new LoginRequired(
        server,
        `this call needs more permission (scope ${JSON.stringify(err.requiredScope ?? '?')}) than it was granted`,
      ),
    }
  }
  const closed = () =>
    unavailable(
      `the connection closed during the call (${session.why ?? 'connection closed'}); reconnecting`,
    )
  if (sessionExpired(err)) return { kind: 'expired', error: closed() }
  if (session.isLost || (err instanceof SdkError && err.code === SdkErrorCode.ConnectionClosed))
    return { kind: 'closed', error: closed() }
  if (err instanceof Unanswerable) return { kind: 'answer', error: err }
  const answered =
    err instanceof ProtocolError ||
    (err instanceof SdkError && !(err instanceof SdkHttpError) && REQUEST_CODES.has(err.code)) ||
    (viaTask && !(thrown instanceof DispatchError) && !(err instanceof SdkError))
  if (answered)
    return {
      kind: 'answer',
      error: new Error(`MCP server "${server}" answered: ${message}`, { cause: err }),
    }
  // anything else (fetch failed, HTTP 5xx, a send that failed) means it could not be reached
  return {
    kind: 'unreachable',
    why: `a request failed (${message})`,
    error: unavailable(`the request failed (${message}); reconnecting`),
  }
}
