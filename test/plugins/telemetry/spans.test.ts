// The telemetry plugin's spans: none of its taps while nothing consumes spans; one execute_tool
// span per call with the pipeline's decisions as events (recorded through the service); content
// off by default and capped when on; reload spans; and the same spans exported over OTLP/HTTP
// (protobuf decoded with the official definitions, and JSON) with the duration metric, the
// endpoint lock and the OTEL_* variables.
import assert from 'node:assert/strict'
import { after, afterEach, beforeEach, describe, it } from 'node:test'
import telemetryPlugin from '../../../plugins/telemetry/index.ts'
import type { SpanRecord, TelemetryApi } from '../../../plugins/telemetry/api.ts'
import { toPlugin, validateConfig, type Plugin, type ToolRuntime } from '../../../src/index.ts'
import { kernelWith } from '../../helpers/kernel.ts'
import { otlpReceiver, ProtoSchema } from './otlp.ts'

const saved = { ...process.env }
function clearOtel() {
  for (const k of Object.keys(process.env))
    if (k.startsWith('OTEL_') || k === 'YOKE_REPLICA_ID') delete process.env[k]
}
beforeEach(clearOtel)
afterEach(() => {
  clearOtel()
  Object.assign(
    process.env,
    Object.fromEntries(Object.entries(saved).filter(([k]) => k.startsWith('OTEL_'))),
  )
})

const denier = {
  name: 'denier',
  inject: ['runtime'],
  apply(ctx: any) {
    ctx.tap(ctx.runtime.hooks.preExecute, 'denier', (_d: unknown, call: { name: string }) =>
      call.name === 'secret' ? { kind: 'deny', reason: 'secrets stay home' } : undefined,
    )
  },
}

async function compose(config: Record<string, unknown> = {}) {
  const { kernel, rt } = await kernelWith([
    ['denier', denier],
    ['telemetry', telemetryPlugin, config],
  ])
  rt.register({ name: 'echo', execute: (args) => String(args.text ?? '') })
  rt.register({ name: 'secret', execute: () => 'never' })
  const telemetry = kernel.services.get('telemetry')!.value as TelemetryApi
  return { kernel, rt, telemetry }
}

const ours = (rt: ToolRuntime) =>
  Object.entries(rt.hooks).flatMap(([hook, h]) =>
    (h as { taps: Array<{ name: string }> }).taps
      .filter((t) => t.name === 'telemetry')
      .map(() => hook),
  )

const byName = (spans: SpanRecord[], prefix: string) =>
  spans.filter((s) => s.name.startsWith(prefix))

describe('telemetry spans', () => {
  it('taps nothing on the pipeline while nothing consumes spans; record() taps until its last hold goes', async () => {
    const { kernel, rt, telemetry } = await compose()
    try {
      assert.deepEqual(ours(rt), [])
      assert.equal(kernel.hooks.reload.taps.filter((t) => t.name === 'telemetry').length, 0)
      const first = telemetry.record()
      const second = telemetry.record()
      assert.deepEqual(ours(rt).sort(), ['around', 'postExecute', 'preExecute', 'result', 'trace'])
      first()
      first() // idempotent: one hold
      assert.equal(ours(rt).length, 5)
      second()
      assert.deepEqual(ours(rt), [])
      await rt.call('echo', { text: 'hi' })
      assert.equal(telemetry.recent().length, 0, 'no span made while off')
    } finally {
      await kernel.dispose()
    }
  })

  it('makes one execute_tool span per call with its decisions as events; a denied call has error.type; content is off', async () => {
    const { kernel, rt, telemetry } = await compose()
    try {
      const seen: SpanRecord[] = []
      const stop = telemetry.onSpan((s) => seen.push(s))
      const hold = telemetry.record()
      const ok = await rt.call('echo', { text: 'hello' }, { caller: 'cli' })
      const denied = await rt.call('secret', {})
      hold()
      stop()
      assert.equal(ok.status, 'ok')
      assert.equal(denied.status, 'DENIED')
      const spans = byName(telemetry.recent(), 'execute_tool')
      assert.equal(spans.length, 2)
      assert.deepEqual(
        seen.map((s) => s.spanId),
        spans.map((s) => s.spanId),
      )
      const [echo, secret] = spans as [SpanRecord, SpanRecord]
      assert.equal(echo.name, 'execute_tool echo')
      assert.equal(echo.attributes['gen_ai.operation.name'], 'execute_tool')
      assert.equal(echo.attributes['gen_ai.tool.name'], 'echo')
      assert.equal(echo.attributes['gen_ai.tool.call.id'], ok.callId)
      assert.equal(echo.attributes['gen_ai.tool.type'], 'function')
      assert.equal(echo.attributes['yoke.caller'], 'cli')
      assert.equal(echo.status, 'unset')
      assert.deepEqual(
        echo.events.map((e) => [
          e.name,
          e.attributes['yoke.decision'] ?? e.attributes['yoke.status'],
        ]),
        [
          ['yoke.pre_execute', 'allow'],
          ['yoke.post_execute', 'accept'],
          ['yoke.result', 'ok'],
        ],
      )
      assert.equal(
        echo.attributes['gen_ai.tool.call.arguments'],
        undefined,
        'content off by default',
      )
      assert.equal(echo.attributes['gen_ai.tool.call.result'], undefined)
      assert.equal(secret.attributes['error.type'], 'DENIED')
      assert.equal(secret.status, 'error')
      const pre = secret.events.find((e) => e.name === 'yoke.pre_execute')!
      assert.equal(pre.attributes['yoke.decision'], 'deny')
      assert.match(String(pre.attributes['yoke.reason']), /secrets stay home/)
      assert.ok(echo.startMs <= echo.endMs)
      assert.match(echo.traceId, /^[0-9a-f]{32}$/)
    } finally {
      await kernel.dispose()
    }
  })

  it('shows an approval asked and answered, a refusal, a guard’s denial and a post-execute block as events', async () => {
    const { kernel, rt, telemetry } = await compose()
    try {
      let answer: 'allow-once' | 'deny' = 'allow-once'
      rt.approvals.register({ name: 'test', ask: async () => answer })
      rt.hooks.preExecute.tap('asker', (d, call) =>
        call.name === 'echo' && call.args.text === 'ask' ? { kind: 'ask', reason: 'check' } : d,
      )
      rt.hooks.postExecute.tap('blocker', (d, call) =>
        call.args.text === 'block' ? { kind: 'block', reason: 'not that' } : d,
      )
      rt.guard((call) => (call.args.text === 'guarded' ? 'the guard says no' : undefined))
      const hold = telemetry.record()
      const allowed = await rt.call('echo', { text: 'ask' })
      answer = 'deny'
      const refused = await rt.call('echo', { text: 'ask' })
      const guarded = await rt.call('echo', { text: 'guarded' })
      const blocked = await rt.call('echo', { text: 'block' })
      hold()
      assert.deepEqual(
        [allowed, refused, guarded, blocked].map((r) => r.status),
        ['ok', 'DENIED', 'DENIED', 'BLOCKED'],
      )
      const events = (s: SpanRecord) =>
        s.events.map((e) =>
          [
            e.name,
            e.attributes['yoke.decision'] ??
              e.attributes['yoke.answer'] ??
              e.attributes['yoke.status'],
          ]
            .filter((x) => x !== undefined)
            .join(' '),
        )
      const [a, b, c, d] = byName(telemetry.recent(), 'execute_tool echo') as SpanRecord[]
      assert.deepEqual(events(a!), [
        'yoke.pre_execute ask',
        'yoke.approval.asked',
        'yoke.approval.answered allowed',
        'yoke.post_execute accept',
        'yoke.result ok',
      ])
      assert.deepEqual(events(b!), [
        'yoke.pre_execute ask',
        'yoke.approval.asked',
        'yoke.approval.answered refused',
        'yoke.result DENIED',
      ])
      assert.deepEqual(events(c!), [
        'yoke.pre_execute allow',
        'yoke.guard.denied',
        'yoke.result DENIED',
      ])
      assert.match(String(c!.events[1]!.attributes['yoke.reason']), /the guard says no/)
      assert.deepEqual(events(d!), ['yoke.pre_execute allow', 'yoke.result BLOCKED'])
      assert.equal(d!.attributes['error.type'], 'BLOCKED')
    } finally {
      await kernel.dispose()
    }
  })

  it('tells a refused approval from a guard’s denial by the stage on the result, not by its words', async () => {
    const { kernel, rt, telemetry } = await compose()
    try {
      let answer: 'allow-once' | { answer: 'deny'; reason: string } = 'allow-once'
      rt.approvals.register({ name: 'test', ask: async () => answer })
      rt.hooks.preExecute.tap('asker', (d, call) =>
        call.name === 'echo' ? { kind: 'ask', reason: 'check' } : d,
      )
      // a guard whose words look like an approval's: its denial is still the guard's
      rt.guard((call) =>
        call.args.text === 'guarded' ? 'approval needed from the release manager' : undefined,
      )
      const hold = telemetry.record()
      const guarded = await rt.call('echo', { text: 'guarded' })
      answer = { answer: 'deny', reason: 'not today' }
      const refused = await rt.call('echo', { text: 'other' })
      hold()
      assert.deepEqual(
        [guarded, refused].map((r) => [r.status, r.error?.stage]),
        [
          ['DENIED', 'guard'],
          ['DENIED', 'approval'],
        ],
      )
      const [g, r] = byName(telemetry.recent(), 'execute_tool echo') as SpanRecord[]
      const names = (s: SpanRecord) =>
        s.events.map((e) => [e.name, e.attributes['yoke.answer']].filter(Boolean).join(' '))
      assert.deepEqual(names(g!), [
        'yoke.pre_execute',
        'yoke.approval.asked',
        'yoke.approval.answered allowed',
        'yoke.guard.denied',
        'yoke.result',
      ])
      assert.deepEqual(names(r!), [
        'yoke.pre_execute',
        'yoke.approval.asked',
        'yoke.approval.answered refused',
        'yoke.result',
      ])
      const refusal = r!.events.find((e) => e.attributes['yoke.answer'] === 'refused')!
      assert.match(String(refusal.attributes['yoke.reason']), /refused through "test": not today/)
    } finally {
      await kernel.dispose()
    }
  })

  it('keeps the last `keep` spans for recent(), newest last, across a reload of the instance', async () => {
    const { kernel, rt, telemetry } = await compose({ keep: 3 })
    try {
      const hold = telemetry.record()
      for (const text of ['1', '2', '3', '4', '5', '6', '7']) await rt.call('echo', { text })
      hold()
      const ids = (spans: SpanRecord[]) => spans.map((s) => s.attributes['gen_ai.tool.call.id'])
      const all = telemetry.recent()
      assert.equal(all.length, 3)
      assert.deepEqual(ids(telemetry.recent(2)), ids(all.slice(1)))
      assert.ok(Object.isFrozen(all[0]!.attributes), 'a record is read-only: listeners share it')
      // a new version of the instance (same key) keeps them
      const fiber = kernel.fibers.find((f) => f.key === 'telemetry')!
      await kernel.remove(fiber)
      const p = toPlugin(telemetryPlugin) as Plugin
      const again = kernel.spawn(p, (validateConfig(p, { keep: 3 }) as { value: unknown }).value, {
        key: 'telemetry',
      })
      await kernel.whenSettled(again, 10_000)
      const next = kernel.services.get('telemetry')!.value as TelemetryApi
      assert.deepEqual(ids(next.recent()), ids(all))
    } finally {
      await kernel.dispose()
    }
  })

  it('continues the caller’s trace and gives the body the span’s context', async () => {
    const { kernel, rt, telemetry } = await compose()
    try {
      let inner: string | undefined
      rt.register({
        name: 'peek',
        execute: (_a, ctx) => (inner = ctx.call.trace?.traceparent) ?? '',
      })
      const hold = telemetry.record()
      const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
      await rt.call('peek', {}, { trace: { traceparent: parent } })
      hold()
      const [span] = byName(telemetry.recent(), 'execute_tool peek')
      assert.equal(span!.traceId, '0af7651916cd43dd8448eb211c80319c')
      assert.equal(span!.parentSpanId, 'b7ad6b7169203331')
      assert.equal(inner, `00-${span!.traceId}-${span!.spanId}-01`)
    } finally {
      await kernel.dispose()
    }
  })

  it('captures arguments and results only when asked, cut at maxLength', async () => {
    const { kernel, rt, telemetry } = await compose({ content: { capture: true, maxLength: 32 } })
    try {
      const hold = telemetry.record()
      await rt.call('echo', { text: 'x'.repeat(100) })
      hold()
      const [span] = byName(telemetry.recent(), 'execute_tool echo')
      const args = String(span!.attributes['gen_ai.tool.call.arguments'])
      const result = String(span!.attributes['gen_ai.tool.call.result'])
      assert.ok(args.startsWith('{"text":"xxx'), args)
      assert.match(args, /…\[\d+ more\]$/)
      assert.equal(result, `${'x'.repeat(32)}…[68 more]`)
    } finally {
      await kernel.dispose()
    }
  })

  it('makes a span of a reload with what changed, restarted and failed', async () => {
    const { kernel, telemetry } = await compose()
    try {
      const hold = telemetry.record()
      kernel.hooks.reload.call({
        type: 'reload',
        ok: true,
        trigger: ['/p/yoke.yaml'],
        added: ['b'],
        removed: [],
        restarted: ['a'],
        unchanged: ['c', 'd'],
        failed: [{ instance: 'b', error: new Error('boom') }],
        errors: [],
        durationMs: 12,
      })
      hold()
      const [span] = byName(telemetry.recent(), 'yoke.reload')
      assert.deepEqual(span!.attributes['yoke.reload.restarted'], ['a'])
      assert.deepEqual(span!.attributes['yoke.reload.added'], ['b'])
      assert.deepEqual(span!.attributes['yoke.reload.failed'], ['b'])
      assert.equal(span!.attributes['yoke.reload.unchanged.count'], 2)
      assert.equal(span!.status, 'error')
      assert.equal(span!.events[0]!.attributes['yoke.reason'], 'boom')
      assert.ok(Math.abs(span!.endMs - span!.startMs - 12) < 0.001)
    } finally {
      await kernel.dispose()
    }
  })
})

describe('telemetry export over OTLP/HTTP', () => {
  const receivers: Array<{ close(): Promise<void> }> = []
  after(() => Promise.all(receivers.map((r) => r.close())))
  const receiver = async () => {
    const r = await otlpReceiver()
    receivers.push(r)
    return r
  }

  it('sends protobuf the official definitions decode: the spans, their events, and the duration metric (OTEL_* variables)', async () => {
    const r = await receiver()
    process.env.OTEL_TRACES_EXPORTER = 'otlp'
    process.env.OTEL_METRICS_EXPORTER = 'otlp'
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = r.url
    process.env.OTEL_EXPORTER_OTLP_HEADERS = 'x-team=a%20b'
    process.env.OTEL_SERVICE_NAME = 'yoke-test'
    process.env.YOKE_REPLICA_ID = 'replica-7'
    const { kernel, rt } = await compose()
    assert.equal(ours(rt).length, 5, 'an exporter consumes spans: the taps are on')
    await rt.call('echo', { text: 'hi' })
    await rt.call('secret', {})
    await kernel.dispose() // flushes
    const traces = r.received.filter((x) => x.path === '/v1/traces')
    assert.ok(traces.length >= 1)
    assert.equal(traces[0]!.contentType, 'application/x-protobuf')
    assert.equal(traces[0]!.headers['x-team'], 'a b')
    const resourceSpans = traces.flatMap((t) => t.body.resource_spans as any[])
    const service = resourceSpans[0].resource.attributes.find((a: any) => a.key === 'service.name')
    assert.equal(service.value.string_value, 'yoke-test')
    const instance = resourceSpans[0].resource.attributes.find(
      (a: any) => a.key === 'service.instance.id',
    )
    assert.equal(instance.value.string_value, 'replica-7', 'the replica, as yoke serve names it')
    const spans = resourceSpans.flatMap((rs) => rs.scope_spans.flatMap((ss: any) => ss.spans))
    const echo = spans.find((s: any) => s.name === 'execute_tool echo')
    const secret = spans.find((s: any) => s.name === 'execute_tool secret')
    assert.match(echo.trace_id, /^[0-9a-f]{32}$/)
    assert.match(echo.span_id, /^[0-9a-f]{16}$/)
    const attr = (s: any, k: string) => s.attributes.find((a: any) => a.key === k)?.value
    assert.equal(attr(echo, 'gen_ai.tool.name').string_value, 'echo')
    assert.deepEqual(
      echo.events.map((e: any) => e.name),
      ['yoke.pre_execute', 'yoke.post_execute', 'yoke.result'],
    )
    assert.equal(attr(secret, 'error.type').string_value, 'DENIED')
    assert.equal(secret.status.code, 2) // STATUS_CODE_ERROR
    assert.ok(BigInt(echo.end_time_unix_nano) >= BigInt(echo.start_time_unix_nano))
    const metrics = r.received.filter((x) => x.path === '/v1/metrics')
    const all = metrics.flatMap((m) =>
      (m.body.resource_metrics as any[]).flatMap((rm) =>
        rm.scope_metrics.flatMap((sm: any) => sm.metrics),
      ),
    )
    const duration = all.find((m: any) => m.name === 'gen_ai.execute_tool.duration')
    assert.ok(duration, `metrics sent: ${all.map((m: any) => m.name)}`)
    assert.equal(duration.unit, 's')
    const points = duration.histogram.data_points
    const denied = points.find((p: any) =>
      p.attributes.some((a: any) => a.key === 'error.type' && a.value.string_value === 'DENIED'),
    )
    assert.equal(denied.count, '1')
    assert.equal(
      points.reduce((n: number, p: any) => n + Number(p.count), 0),
      2,
    )
  })

  it('sends OTLP/JSON by the proto-JSON mapping: lowerCamelCase names, hex ids, 64-bit integers as strings', async () => {
    const r = await receiver()
    const { kernel, rt } = await compose({
      traces: { exporter: 'otlp', protocol: 'http/json', endpoint: `${r.url}/v1/traces` },
      metrics: { exporter: 'otlp', protocol: 'http/json', endpoint: `${r.url}/v1/metrics` },
      content: { capture: true },
    })
    await rt.call('echo', { text: 'hi' })
    await rt.call('secret', {})
    await kernel.dispose()
    // every key, id, enum and 64-bit integer of both bodies, against the official definitions;
    // the SDK's metrics serializer (0.223) writes histogram counts as JSON numbers, which the
    // mapping accepts (parsers take both) though it prints strings: accepted there only
    const schema = new ProtoSchema()
    for (const { path, body } of r.received) {
      const traces = path.endsWith('traces')
      const type = traces
        ? 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'
        : 'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest'
      assert.deepEqual(schema.jsonProblems(type, body, '$', !traces), [], path)
    }
    assert.deepEqual(r.received.map((x) => x.path).sort(), ['/v1/metrics', '/v1/traces'])
    // the check itself tells a wrong body
    const T = 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'
    assert.equal(schema.jsonProblems(T, { resource_spans: [] }).length, 1)
    const bad = {
      traceId: 'AB'.repeat(16),
      spanId: 'ab'.repeat(8),
      startTimeUnixNano: 1,
      kind: 'SPAN_KIND_CLIENT',
    }
    const wrong = schema.jsonProblems(T, { resourceSpans: [{ scopeSpans: [{ spans: [bad] }] }] })
    assert.equal(wrong.length, 3, wrong.join('\n'))
    const [sent] = r.received.filter((x) => x.path === '/v1/traces')
    assert.equal(sent!.contentType, 'application/json')
    const span = (sent!.body as any).resourceSpans[0].scopeSpans[0].spans[0]
    assert.match(span.traceId, /^[0-9a-f]{32}$/)
    assert.match(span.spanId, /^[0-9a-f]{16}$/)
    assert.equal(typeof span.startTimeUnixNano, 'string')
    assert.match(span.startTimeUnixNano, /^\d+$/)
    assert.ok('attributes' in span && 'events' in span && !('start_time_unix_nano' in span))
  })

  it('console writes one JSON line per span on stderr (stdout stays the protocol’s)', async () => {
    const { kernel, rt } = await compose({ traces: { exporter: 'console' } })
    await rt.call('echo', { text: 'hi' })
    const written: string[] = []
    const write = process.stderr.write
    process.stderr.write = ((chunk: string) => (written.push(String(chunk)), true)) as never
    try {
      await kernel.dispose()
    } finally {
      process.stderr.write = write
    }
    const spans = written.flatMap((w) => w.split('\n').filter(Boolean)).map((l) => JSON.parse(l))
    const echo = spans.find((s) => s.name === 'execute_tool echo')
    assert.ok(echo, written.join(''))
    assert.match(echo.traceId, /^[0-9a-f]{32}$/)
    assert.equal(echo.attributes['gen_ai.tool.name'], 'echo')
  })

  it('an export that fails is a warning said once per kind, never the call’s', async () => {
    const dead = await receiver()
    await dead.close() // nothing listens there now
    const { kernel, rt } = await compose({ traces: { exporter: 'otlp' }, endpoint: dead.url })
    const warnings: string[] = []
    kernel.hooks.log.tap('test', (r) => void (r.level === 'warn' && warnings.push(r.message)))
    assert.equal((await rt.call('echo', { text: 'a' })).status, 'ok')
    assert.equal((await rt.call('echo', { text: 'b' })).status, 'ok')
    await kernel.dispose()
    const said = warnings.filter((w) => /traces export to .* failed/.test(w))
    assert.equal(said.length, 1, warnings.join('\n'))
    assert.match(said[0]!, /\(said once\)/)
  })

  it('a lock in the config sends everything to its endpoint whatever the variables and the other keys say', async () => {
    const [locked, elsewhere] = [await receiver(), await receiver()]
    process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = `${elsewhere.url}/v1/traces`
    const { kernel, rt } = await compose({
      traces: { exporter: 'otlp', endpoint: `${elsewhere.url}/v1/traces` },
      endpoint: elsewhere.url,
      lock: { endpoint: locked.url },
    })
    await rt.call('echo', { text: 'hi' })
    const checks = (await kernel.ask('telemetry/doctor', {})) as Array<{
      level: string
      message: string
    }>
    await kernel.dispose()
    assert.equal(elsewhere.received.length, 0)
    // the config's endpoint asked for both signals; both went to the lock
    assert.deepEqual(locked.received.map((x) => x.path).sort(), ['/v1/metrics', '/v1/traces'])
    assert.ok(
      checks.some((c) => c.level === 'warn' && /ignored: the lock/.test(c.message)),
      JSON.stringify(checks),
    )
  })
})
