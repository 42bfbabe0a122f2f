// The model an SDK provider shares (sdkModel), over a fake wire and no HTTP: the bounds it hands the
// wire's body, a streamed answer read event by event (text to onText as it comes), a whole answer
// (its text to onText once), usage priced and the model named, and what goes wrong mapped as for a
// real provider. The providers' own suites (conformance.test.ts, wire.test.ts) run it over the SDKs.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  requestInfo,
  sdkModel,
  WireError,
  type AnswerReader,
  type ModelRequest,
  type ProviderOptions,
  type ProviderWire,
  type WireAnswer,
} from '../../../plugins/models/api.ts'
import { YokeError } from '../../../src/index.ts'

class FakeError extends Error {}
const errors = {
  APIError: FakeError,
  APIUserAbortError: FakeError,
  APIConnectionError: FakeError,
  APIConnectionTimeoutError: FakeError,
}

/** Reads events that are plain strings; `finish` ends as `end` says (an answer, or a WireError). */
class Reader implements AnswerReader {
  #text = ''
  constructor(readonly end: Partial<WireAnswer> | WireError = {}) {}
  add(event: unknown, onText: (delta: string) => void) {
    this.#text += String(event)
    onText(String(event))
  }
  text() {
    return this.#text
  }
  finish(): WireAnswer {
    if (this.end instanceof WireError) throw this.end
    return {
      text: this.#text,
      toolCalls: [],
      stopReason: 'end',
      usage: { inputTokens: 1_000_000, outputTokens: 500_000 },
      ...this.end,
    }
  }
}

const ask: ModelRequest = { system: '', messages: [{ role: 'user', content: 'hi' }], tools: [] }

function fake(options: Partial<ProviderOptions> = {}, end?: Partial<WireAnswer> | WireError) {
  const bodies: unknown[] = []
  const all = { model: 'm-1', ...options }
  const wire: ProviderWire<{ bounds: unknown }> = {
    errors,
    body(_req, bounds) {
      bodies.push(bounds)
      return { bounds }
    },
    stream: async () =>
      (async function* () {
        yield 'he'
        yield 'llo'
      })(),
    whole: async () => new Response(JSON.stringify({ says: 'hello' })),
    reader: () => new Reader(end),
    readJson: (json) => {
      const reader = new Reader(end)
      reader.add((json as { says: string }).says, () => {})
      return reader
    },
  }
  return { model: sdkModel(requestInfo('fake', all, 'http://x'), all, wire), bodies }
}

describe('sdkModel: an SDK provider apart from its wire format', () => {
  it("hands the wire the request's bounds, else the instance's", async () => {
    const { model, bodies } = fake({ maxTokens: 100, temperature: 0.5 })
    await model.complete(ask)
    await model.complete({ ...ask, maxTokens: 7, temperature: 0 })
    assert.deepEqual(bodies, [
      { maxTokens: 100, temperature: 0.5 },
      { maxTokens: 7, temperature: 0 },
    ])
  })

  it('streams: text to onText as each event comes; usage priced; the model from the config when the wire names none', async () => {
    const { model } = fake({ pricing: { inputPerMTok: 3, outputPerMTok: 10 } })
    const deltas: string[] = []
    const answer = await model.complete(ask, { onText: (d) => deltas.push(d) })
    assert.deepEqual(deltas, ['he', 'llo'])
    assert.equal(answer.text, 'hello')
    assert.deepEqual(answer.usage, { inputTokens: 1_000_000, outputTokens: 500_000, costUsd: 8 })
    assert.equal(answer.model, 'm-1')
    assert.equal(model.provider, 'fake')
  })

  it('whole (stream: false): the body is read here, its text goes to onText once; the model the server named wins', async () => {
    const { model } = fake({ stream: false }, { model: 'm-1-2026' })
    const deltas: string[] = []
    const answer = await model.complete(ask, { onText: (d) => deltas.push(d) })
    assert.deepEqual(deltas, ['hello'])
    assert.equal(answer.model, 'm-1-2026')
    assert.equal('costUsd' in answer.usage, false, 'no pricing, no cost')
  })

  it('an answer that ended early is MODEL_FAILED naming provider and model; a throwing onText rejects unchanged', async () => {
    const { model } = fake({}, new WireError('the stream ended before the answer did'))
    await assert.rejects(model.complete(ask), (err: YokeError) => {
      assert.equal(err.code, 'MODEL_FAILED')
      assert.match(err.message, /fake model m-1 failed: unexpected response: the stream ended/)
      return true
    })
    const mine = new Error('the caller’s own')
    await assert.rejects(
      fake().model.complete(ask, {
        onText: () => {
          throw mine
        },
      }),
      (err) => err === mine,
    )
  })
})
