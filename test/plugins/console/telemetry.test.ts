// The console and the telemetry plugin: spans are recorded only while a browser is connected (the
// console holds `record()` then, and lets it go when the last one leaves: no tap on the call path
// otherwise), each finished span reaches the page as a `span` event, and a tool run through the
// API answers with its call's trace and span ids.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { until } from '../../helpers/until.ts'
import { CONFIG, http, launcher, postJson, sse } from './helpers.ts'

const launch = launcher()
const WITH_TELEMETRY = CONFIG().replace(
  'plugins:\n',
  'plugins:\n  telemetry:\n    use: telemetry\n',
)

describe('console: calls from the telemetry plugin', () => {
  it('records while a browser watches; a call through the API opens in the timeline', async () => {
    const l = await launch(WITH_TELEMETRY)
    const trace = l.composition.runtime!.hooks.trace
    assert.equal(trace.taps.length, 0, 'no browser: nothing records')
    const events = await sse(l.port, l.token)
    try {
      await events.next('hello')
      assert.ok(trace.taps.length > 0, 'a browser: the console holds the recorder')
      const reply = await http(l.port, '/api/tools/echo/call', {
        method: 'POST',
        headers: postJson(l.token),
        body: { args: { text: 'traced' } },
      })
      const { result, traceId, spanId } = reply.json()
      assert.equal(result.ok, true)
      assert.match(traceId, /^[0-9a-f]{32}$/)
      assert.match(spanId, /^[0-9a-f]{16}$/)
      const span = await events.next('span', (s) => s.spanId === spanId)
      assert.equal(span.traceId, traceId)
      assert.equal(span.attributes['gen_ai.tool.name'], 'echo')
      assert.notEqual(span.status, 'error')
    } finally {
      events.close()
    }
    await until('the recorder to be let go', () => trace.taps.length === 0)
  })
})
