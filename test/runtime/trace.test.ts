import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ToolRuntime } from '../../src/index.ts'
import type { ToolCall, TraceContext } from '../../src/runtime/types.ts'

const parent: TraceContext = {
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
}
const child = (call: ToolCall): TraceContext => ({
  traceparent: `00-0af7651916cd43dd8448eb211c80319c-${call.id.replace(/\D/g, '').padStart(16, '0')}-01`,
})

/** a runtime with `seen` (what each body saw as its call's trace) and `inner`, which calls `seen` nested */
function runtime() {
  const rt = new ToolRuntime()
  const seen: Array<TraceContext | undefined> = []
  rt.register({ name: 'seen', execute: (_, ctx) => (seen.push(ctx.call.trace), 'ok') })
  rt.register({
    name: 'inner',
    execute: async (_, ctx) => (await rt.call('seen', {}, { parent: ctx.call })).status,
  })
  return { rt, seen }
}

describe('trace context', () => {
  it("untapped, the body sees the caller's context and a nested call inherits its parent's", async () => {
    const { rt, seen } = runtime()
    await rt.call('seen')
    await rt.call('seen', {}, { trace: parent })
    await rt.call('inner', {}, { trace: parent })
    assert.deepEqual(seen, [undefined, parent, parent])
  })

  it("a trace tap gets the caller's context and its answer is what the body and nested calls see", async () => {
    const { rt, seen } = runtime()
    const given: Array<[TraceContext | undefined, string]> = []
    rt.hooks.trace.tap('tracer', (from, call) => (given.push([from, call.name]), child(call)))
    const result = await rt.call('inner', {}, { trace: parent })
    assert.equal(result.status, 'ok')
    const [outer, nested] = given
    assert.deepEqual(outer, [parent, 'inner'])
    // the nested call's parent context is the outer call's own (the tap's answer for it)
    assert.equal(nested![1], 'seen')
    assert.notEqual(nested![0], parent)
    assert.match(nested![0]!.traceparent, /^00-0af7651916cd43dd8448eb211c80319c-\d{16}-01$/)
    assert.deepEqual(seen, [{ traceparent: seen[0]!.traceparent }])
    assert.notEqual(seen[0]!.traceparent, nested![0]!.traceparent)
  })

  it("a throwing trace tap is reported and leaves the caller's context; the call still runs", async () => {
    const errors: string[] = []
    const rt = new ToolRuntime({}, (message) => errors.push(message))
    const seen: Array<TraceContext | undefined> = []
    rt.register({ name: 'seen', execute: (_, ctx) => (seen.push(ctx.call.trace), 'ok') })
    rt.hooks.trace.tap('broken', () => {
      throw new Error('no exporter')
    })
    assert.equal((await rt.call('seen', {}, { trace: parent })).status, 'ok')
    assert.deepEqual(seen, [parent])
    assert.deepEqual(errors, ['a trace hook failed for seen'])
  })
})
