// An exchange's questions, without a kernel: the pipeline call carries the exchange's asker, and
// what the runtime asks through it (an approval, or a question from what the call reached) goes
// to the client that made the call: pushed on a 2025-era request's stream, or ending a 2026-07-28
// round with input_required until the retry answers. The scope here is a stand-in that asks
// through the asker its call was given, as the runtime does.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Asker, ScopeHandle, ToolCall, ToolResult } from '../../../src/index.ts'
import {
  Exchanges,
  type Asked,
  type ExchangeOptions,
  type Question,
} from '../../../plugins/mcp-server/exchange.ts'
import { until } from '../../helpers/until.ts'

const call = { name: 'get_env', args: {} } as unknown as ToolCall

/** A scope whose every call asks through its asker (`ask`) and answers with what that came to. */
function askingScope(ask: (asker: Asker, signal: AbortSignal) => Promise<unknown>) {
  const seen: { asker?: Asker; started: boolean } = { started: false }
  const scope = {
    async call(_tool: string, _args: unknown, options: { asker?: Asker; signal: AbortSignal }) {
      seen.started = true
      seen.asker = options.asker
      let text: string
      try {
        text = JSON.stringify(await ask(options.asker!, options.signal))
      } catch (err) {
        text = `failed: ${(err as Error).message}`
      }
      return { ok: true, status: 'ok', content: [{ type: 'text', text }] } as unknown as ToolResult
    },
  } as unknown as ScopeHandle
  return { scope, seen }
}

const client = (...modes: Array<'form' | 'url'>): Asked => ({
  name: 'the client',
  modes: new Set(modes),
})
const textOf = (result: ToolResult) => (result.content[0] as { text: string }).text

function options(scope: ScopeHandle, more: Partial<ExchangeOptions> = {}): ExchangeOptions {
  return {
    view: 'default',
    scope,
    connection: 'mcp:default:s1',
    tool: 'get_env',
    args: {},
    session: true,
    client: client('form'),
    answerMs: 5000,
    ...more,
  }
}

describe('an exchange routes what its call asks to its own client', () => {
  it('the call starts at once, carrying the exchange’s asker (nothing registers it first)', async () => {
    const { scope, seen } = askingScope(async () => 'no question')
    const exchange = new Exchanges().start(options(scope))
    assert.equal(seen.started, true, 'started within start()')
    assert.equal(seen.asker, exchange.asker)
    assert.equal(exchange.caller, 'mcp:default:s1#1')
    assert.equal(textOf(await exchange.result), '"no question"')
  })

  it('2025 era: an approval is pushed to the client as a form; "for this session" is offered in a session', async () => {
    const pushed: Question[] = []
    const { scope } = askingScope((asker, signal) =>
      asker.ask({ call, reason: 'the policy asks first', signal }),
    )
    const exchange = new Exchanges().start(
      options(scope, {
        push: async (question) => {
          pushed.push(question)
          return { action: 'accept', content: { decision: 'allow-session' } }
        },
      }),
    )
    assert.equal(textOf(await exchange.result), '"allow-session"')
    assert.equal(pushed.length, 1)
    assert.equal(pushed[0]!.mode, 'form')
    assert.match(pushed[0]!.message, /^the policy asks first\.\nAllow get_env \{\}\?$/)
    assert.match(JSON.stringify(pushed[0]), /allow-session/)
  })

  it('2026-07-28: the approval ends the round with input_required; the retry’s answer reaches the waiting call', async () => {
    const { scope } = askingScope((asker, signal) =>
      asker.ask({ call, reason: 'the policy asks first', signal }),
    )
    const exchanges = new Exchanges()
    const exchange = exchanges.start(options(scope, { session: false }))
    const round = { signal: new AbortController().signal, client: client('form') }
    const step = await exchange.next(round)
    assert.equal(step.kind, 'ask')
    const requests = step.kind === 'ask' ? step.inputRequests : {}
    const [key] = Object.keys(requests)
    assert.ok(key)
    assert.doesNotMatch(JSON.stringify(requests), /allow-session/, 'no session to keep a grant')
    assert.equal(exchanges.waiting, 1, 'it waits with no request of its client open')
    assert.equal(exchanges.byId(exchange.id), exchange, 'a retry finds it by the id in its state')

    exchange.answer((k) =>
      k === key
        ? { kind: 'elicit', action: 'accept', content: { decision: 'allow-once' } }
        : { kind: 'missing' },
    )
    const done = await exchange.next(round)
    assert.equal(done.kind, 'result')
    assert.equal(done.kind === 'result' && textOf(done.result), '"allow-once"')
    assert.equal(exchanges.waiting, 0)
    await until('the exchange to end', () => exchanges.byId(exchange.id) === undefined)
    assert.match(exchanges.endedAs(exchange.id) ?? '', /completed already/)
  })

  it('a client that cannot be asked is not: the approval fails, saying how to allow the tool', async () => {
    const { scope } = askingScope((asker, signal) =>
      asker.ask({ call, reason: 'the policy asks first', signal }),
    )
    const exchange = new Exchanges().start(options(scope, { client: client() }))
    const text = textOf(await exchange.result)
    assert.match(text, /the client cannot be asked: it did not declare the elicitation capability/)
    assert.match(text, /allow: \["get_env"\]/)
  })

  it('a question from what the call reached (an upstream server’s URL elicitation) goes to the same client', async () => {
    const pushed: Question[] = []
    const ask = (asker: Asker, signal: AbortSignal) =>
      asker.answer!({
        from: 'MCP server "up"',
        mode: 'url',
        message: 'sign in to up',
        url: 'https://auth.example/start',
        signal,
      })
    const push = async (question: Question) => {
      pushed.push(question)
      return { action: 'accept' as const }
    }
    const able = askingScope(ask)
    const exchange = new Exchanges().start(
      options(able.scope, { client: client('form', 'url'), push }),
    )
    assert.deepEqual(JSON.parse(textOf(await exchange.result)), { action: 'accept' })
    assert.equal(pushed[0]!.mode, 'url')
    assert.equal(pushed[0]!.mode === 'url' && pushed[0]!.url, 'https://auth.example/start')

    const formOnly = askingScope(ask)
    const refused = new Exchanges().start(options(formOnly.scope, { push }))
    assert.match(textOf(await refused.result), /did not declare URL-mode elicitation/)
    assert.equal(pushed.length, 1, 'the form-only client was not asked')
  })

  it('2025 era: the request’s own signal is the call’s, so its cancellation ends the call', async () => {
    const request = new AbortController()
    let seen: AbortSignal | undefined
    const { scope } = askingScope(
      (_asker, signal) =>
        new Promise((_resolve, reject) => {
          seen = signal
          signal.addEventListener('abort', () => reject(signal.reason), { once: true })
        }),
    )
    const exchange = new Exchanges().start(
      options(scope, { signal: request.signal, push: async () => ({ action: 'cancel' }) }),
    )
    assert.equal(seen, request.signal, 'no signal of its own')
    const step = exchange.next({ signal: request.signal, client: client('form') })
    request.abort(new Error('the client cancelled'))
    const done = await step
    assert.equal(done.kind === 'result' && textOf(done.result), 'failed: the client cancelled')
  })

  it('a call is found by its id (and what it came to kept) only once its id went out', async () => {
    const exchanges = new Exchanges()
    const quiet = exchanges.start(options(askingScope(async () => 'done').scope))
    await quiet.result
    assert.equal(quiet.named, false, 'no retry can name it')
    assert.equal(exchanges.size, 0)

    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const named = exchanges.start(options(askingScope(() => held).scope))
    const id = named.id // as a retry's sealed state carries it
    assert.equal(exchanges.byId(id), named)
    release()
    await named.result
    await until('the named exchange to end', () => exchanges.byId(id) === undefined)
    assert.match(exchanges.endedAs(id) ?? '', /completed already/)
    assert.equal(quiet.id === id, false)
    assert.equal(exchanges.byId(quiet.id), undefined, 'an id made after the end finds nothing')
  })
})
