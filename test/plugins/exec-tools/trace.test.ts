// Executables get the call's W3C trace context as TRACEPARENT and TRACESTATE (issue 30), the
// variables OpenTelemetry's environment carrier reads: a real process prints what it received.
// Without a trace neither is set, even when yoke's own environment has them.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { withTrace } from '../../../plugins/process/run.ts'
import type { TraceContext } from '../../../src/index.ts'
import { execHarness, nodeExe, type ExecHarness } from '../../helpers/exec.ts'

const text = (r: { content: readonly { type: string; text?: string }[] }) =>
  r.content.map((c) => c.text ?? '').join('')
const CALLER: TraceContext = {
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  tracestate: 'congo=t61rcWkgMzE',
}
const SPAN: TraceContext = {
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01',
}

describe('exec-tools: the call’s trace context in the executable’s environment', () => {
  let h: ExecHarness
  const saved = { ...process.env }
  before(async () => {
    // yoke's own (a parent's) trace variables are not what a call runs under
    Object.assign(process.env, { TRACEPARENT: SPAN.traceparent, TRACESTATE: 'parent=1' })
    h = await execHarness({
      traced: {
        manifest: {
          name: 'traced',
          version: '1',
          tools: [{ name: 'print_trace', description: 'prints it' }],
        },
        exe: nodeExe(
          `process.stdout.write(JSON.stringify({ output: JSON.stringify({ traceparent: process.env.TRACEPARENT ?? null, tracestate: process.env.TRACESTATE ?? null }) }))`,
        ),
      },
    })
  })
  after(async () => {
    process.env = saved
    await h.close()
  })
  const printed = async (options: Parameters<ExecHarness['rt']['call']>[2] = {}) => {
    const result = await h.rt.call('print_trace', {}, options)
    assert.equal(result.status, 'ok', text(result))
    return JSON.parse(text(result))
  }

  it('prints the caller’s TRACEPARENT and TRACESTATE', async () => {
    assert.deepEqual(await printed({ trace: CALLER }), CALLER)
  })

  it('a call without a trace gets neither (not even yoke’s own)', async () => {
    assert.deepEqual(await printed(), { traceparent: null, tracestate: null })
  })

  it('tapped, the span’s context (and no stale TRACESTATE when it has none)', async () => {
    h.rt.hooks.trace.tap('tracer', () => SPAN) // last: the tests above run untapped
    assert.deepEqual(await printed({ trace: CALLER }), {
      traceparent: SPAN.traceparent,
      tracestate: null,
    })
  })

  it('no trace: the environment is handed on as it is, not copied', () => {
    const env = { PATH: '/bin', TRACESTATE: 'listed=1' }
    assert.equal(withTrace(env, undefined), env)
    assert.deepEqual(withTrace(env, SPAN), { PATH: '/bin', TRACEPARENT: SPAN.traceparent })
  })
})
