/**
 * @module models/request
 * One request of a model provider around an official SDK call: its abort, its timeout and the
 * mapping of whatever goes wrong to the catalogue (MODEL_FAILED, MODEL_TIMEOUT, ABORTED), with the
 * API key kept out of every message.
 *
 * Retries stay with the SDKs (`maxRetries`: 429, 408, 409, 5xx and connection errors, with backoff
 * that honours `retry-after-ms` / `retry-after`); `cappedRetryFetch` bounds how long a server may ask
 * a client to wait. The SDKs time out only the wait for the response headers (each attempt), so
 * `request()` adds an idle watchdog over the body; and it rejects the moment the caller aborts,
 * even while an SDK sleeps before a retry.
 */
import { messageOf, YokeError, type Logger } from 'yoke'
import {
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  isRecord,
  WireError,
  type ProviderOptions,
} from './provider.ts'
import './errors.ts'

/** The error classes both SDKs export (Stainless-generated, same names and meaning). */
/* eslint-disable @typescript-eslint/no-explicit-any -- constructor signatures of the SDKs' classes */
export interface SdkErrors {
  APIError: new (...args: any[]) => Error & { status?: number; error?: unknown }
  APIUserAbortError: new (...args: any[]) => Error
  APIConnectionError: new (...args: any[]) => Error
  APIConnectionTimeoutError: new (...args: any[]) => Error
}
/* eslint-enable @typescript-eslint/no-explicit-any */

export interface RequestInfo {
  provider: string
  model: string
  baseUrl: string
  timeoutMs: number
  maxRetries: number
  /** never appears in an error: replaced by *** */
  apiKey?: string
}

/** A provider's request info from its options, with the defaults filled in. */
export function requestInfo(
  provider: string,
  options: ProviderOptions,
  defaultBaseUrl: string,
): RequestInfo {
  return {
    provider,
    model: options.model,
    baseUrl: options.baseUrl ?? defaultBaseUrl,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
    apiKey: options.apiKey,
  }
}

/** What a request body gets: the signal for the SDK, and `alive()` whenever the server sent something. */
export interface Attempt {
  readonly signal: AbortSignal
  /** (re)starts the idle watchdog: call it when the response starts and on each event */
  alive(): void
  /** runs the caller's callback; what it throws rejects the request unchanged */
  callback<A extends unknown[]>(fn: ((...args: A) => void) | undefined, ...args: A): void
}

class CallbackError {
  constructor(readonly error: unknown) {}
}

/**
 * Runs `body` (one SDK call and the reading of its answer) under the caller's signal and the
 * timeout, and maps whatever goes wrong to the catalogue:
 * - the caller's signal fired → ABORTED (at once, even mid-retry), the HTTP request is cancelled;
 * - no answer within timeoutMs (per attempt, retried by the SDK), or silence of timeoutMs
 *   once it started → MODEL_TIMEOUT;
 * - an HTTP error after the retries, a connection that failed or broke, a response of the wrong
 *   shape → MODEL_FAILED naming provider, model and the reason (the API key is never in it).
 */
export async function request<T>(
  info: RequestInfo,
  errors: SdkErrors,
  signal: AbortSignal | undefined,
  body: (attempt: Attempt) => Promise<T>,
): Promise<T> {
  const aborted = () =>
    new YokeError(
      'ABORTED',
      { name: `${info.provider} model ${info.model}` },
      { cause: signal?.reason },
    )
  if (signal?.aborted) throw aborted()
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  let onAbort: (() => void) | undefined
  try {
    return await new Promise<T>((resolve, reject) => {
      const stop = (error: unknown) => {
        controller.abort(error)
        reject(error)
      }
      onAbort = () => stop(aborted())
      signal?.addEventListener('abort', onAbort, { once: true })
      const attempt: Attempt = {
        signal: controller.signal,
        alive() {
          clearTimeout(timer)
          timer = setTimeout(
            () =>
              stop(
                new YokeError('MODEL_TIMEOUT', {
                  provider: info.provider,
                  model: info.model,
                  ms: info.timeoutMs,
                }),
              ),
            info.timeoutMs,
          )
        },
        callback(fn, ...args) {
          try {
            fn?.(...args)
          } catch (err) {
            throw new CallbackError(err)
          }
        },
      }
      body(attempt).then(resolve, (err) =>
        reject(
          controller.signal.aborted ? controller.signal.reason : toYokeError(err, info, errors),
        ),
      )
    })
  } finally {
    clearTimeout(timer)
    if (onAbort) signal?.removeEventListener('abort', onAbort)
    if (!controller.signal.aborted) controller.abort() // a body that stopped reading early frees its connection
  }
}

function toYokeError(err: unknown, info: RequestInfo, errors: SdkErrors): unknown {
  if (err instanceof CallbackError) return err.error
  if (err instanceof YokeError) return err
  // the SDK's error keeps the server's body: one that echoes the key does not travel on as the cause
  const cause = leaks(err, info.apiKey) ? new Error(redact(messageOf(err), info.apiKey)) : err
  const failed = (reason: string) =>
    new YokeError(
      'MODEL_FAILED',
      { provider: info.provider, model: info.model, reason: redact(reason, info.apiKey) },
      { cause },
    )
  const retried = info.maxRetries
    ? ` (after ${info.maxRetries} ${info.maxRetries === 1 ? 'retry' : 'retries'})`
    : ''
  if (err instanceof errors.APIConnectionTimeoutError)
    return new YokeError(
      'MODEL_TIMEOUT',
      { provider: info.provider, model: info.model, ms: info.timeoutMs },
      { cause: err },
    )
  if (err instanceof errors.APIUserAbortError) return failed('the request was cancelled')
  if (err instanceof errors.APIConnectionError)
    return failed(`cannot reach ${info.baseUrl}${retried}: ${causeText(err)}`)
  if (err instanceof errors.APIError) {
    const detail = errorDetail(err)
    if (err.status === undefined) return failed(`the server sent an error in the stream: ${detail}`)
    const again =
      err.status === 429 || err.status >= 500 || err.status === 408 || err.status === 409
        ? retried
        : ''
    return failed(`HTTP ${err.status}${again}: ${detail}`)
  }
  if (err instanceof WireError) return failed(`unexpected response: ${err.message}`)
  if (err instanceof SyntaxError)
    return failed(`the server sent something that is not JSON (${err.message})`)
  return failed(`the response broke off: ${causeText(err)}`)
}

/** The server's own error message (OpenAI `{error: {message}}`, Anthropic `{error: {message}}`), else the SDK's. */
function errorDetail(err: Error & { error?: unknown }): string {
  const body = err.error
  const inner = isRecord(body) && isRecord(body.error) ? body.error : body
  const message =
    isRecord(inner) && typeof inner.message === 'string'
      ? inner.message
      : err.message.replace(/^\d{3}\s+/, '')
  return message.length > 500 ? message.slice(0, 500) + '…' : message
}

function causeText(err: unknown): string {
  const parts: string[] = []
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++)
    if (!parts.includes(e.message)) parts.push(e.message)
  return parts.join(': ') || String(err)
}

function leaks(err: unknown, key: string | undefined): boolean {
  if (!key || key.length < 4 || !(err instanceof Error)) return false
  let body = ''
  try {
    body = JSON.stringify((err as { error?: unknown }).error) ?? ''
  } catch {
    // a body that cannot be serialised is not echoed anywhere either
  }
  return err.message.includes(key) || body.includes(key) || causeText(err).includes(key)
}

function redact(text: string, key: string | undefined): string {
  return key && key.length >= 4 ? text.split(key).join('***') : text
}

/**
 * A fetch for the SDKs that caps `retry-after` / `retry-after-ms` on error responses at `maxMs`:
 * the SDKs wait for whatever a server asks (the openai SDK without limit, in a sleep that an abort
 * does not end), so a server answering `retry-after: 3600` would hold the agent for an hour.
 */
export function cappedRetryFetch(maxMs: number, inner?: typeof fetch): typeof fetch {
  return async (input, init) => {
    const response = await (inner ?? globalThis.fetch)(input, init)
    if (response.ok) return response
    const ms = retryAfterMs(response.headers)
    if (ms === undefined || ms <= maxMs) return response
    const headers = new Headers(response.headers)
    headers.delete('retry-after')
    headers.set('retry-after-ms', String(maxMs))
    return new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    })
  }
}

function retryAfterMs(headers: Headers): number | undefined {
  const ms = parseFloat(headers.get('retry-after-ms') ?? '')
  if (Number.isFinite(ms)) return ms
  const after = headers.get('retry-after')
  if (!after) return undefined
  const seconds = parseFloat(after)
  if (Number.isFinite(seconds)) return seconds * 1000
  const date = Date.parse(after)
  return Number.isFinite(date) ? date - Date.now() : undefined
}

/** The SDKs' `logger` option writing to a yoke logger (their info lines, e.g. retries, at debug). */
export function sdkLogger(logger: Logger | undefined) {
  if (!logger) return { logLevel: 'off' as const }
  const line =
    (level: keyof Logger) =>
    (message: string, ...rest: unknown[]) =>
      logger[level](
        rest.length
          ? `${message} ${rest.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join(' ')}`
          : message,
      )
  return {
    logLevel: 'info' as const,
    logger: { debug: line('debug'), info: line('debug'), warn: line('warn'), error: line('debug') },
  }
}
