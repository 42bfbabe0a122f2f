// Where telemetry goes, from the config and the OTEL_* variables: nothing until asked, the config
// over the environment key by key, the per-signal overrides, the lock over everything, and a bad
// value said as a doctor error with its fix.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { describe as doctor, plan, telemetryConfig } from '../../../plugins/telemetry/settings.ts'

const config = (value: unknown = {}) => telemetryConfig.parse(value)

describe('telemetry settings', () => {
  it('exports nothing until asked, and doctor says how to ask', () => {
    const p = plan(config(), {})
    assert.equal(p.traces.exporter, 'none')
    assert.equal(p.metrics.exporter, 'none')
    const [check] = doctor(p)
    assert.equal(check!.level, 'ok')
    assert.match(check!.message, /nothing is exported/)
    assert.match(check!.hint!, /OTEL_TRACES_EXPORTER=otlp/)
  })

  it('reads the standard variables: an endpoint asks for otlp; per-signal ones win over the base', () => {
    const p = plan(config(), {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://metrics:9000/custom',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'authorization=Basic%20abc,x-a=1',
      OTEL_METRICS_EXPORTER: 'console',
      OTEL_SERVICE_NAME: 'svc',
    })
    assert.deepEqual(
      [p.traces.exporter, p.traces.url, p.traces.protocol],
      ['otlp', 'http://collector:4318/v1/traces', 'http/json'],
    )
    assert.deepEqual(p.traces.headers, { authorization: 'Basic abc', 'x-a': '1' })
    assert.equal(p.metrics.exporter, 'console')
    assert.equal(p.metrics.url, 'http://metrics:9000/custom')
    assert.equal(p.serviceName, 'svc')
    assert.deepEqual(p.checks, [])
  })

  it('the config wins over the environment, key by key', () => {
    const p = plan(
      config({ endpoint: 'http://mine:4318', traces: { protocol: 'http/protobuf' } }),
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_EXPORTER: 'otlp',
      },
    )
    assert.equal(p.traces.url, 'http://mine:4318/v1/traces')
    assert.equal(p.traces.protocol, 'http/protobuf')
    assert.equal(p.metrics.protocol, 'http/json', 'a key the config leaves is the environment’s')
    assert.equal(p.metrics.exporter, 'otlp', 'an endpoint asks for otlp')
  })

  it('a lock sends both signals to its endpoint and says what it overrode', () => {
    const p = plan(
      config({
        lock: { endpoint: 'http://mine:4318' },
        traces: { endpoint: 'http://other/v1/traces' },
      }),
      {
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://env/v1/metrics',
        OTEL_TRACES_EXPORTER: 'otlp',
      },
    )
    assert.equal(p.traces.url, 'http://mine:4318/v1/traces')
    assert.equal(p.metrics.url, 'http://mine:4318/v1/metrics')
    assert.equal(
      p.metrics.exporter,
      'otlp',
      'the variable’s endpoint asked for it, the lock says where',
    )
    assert.equal(p.checks.length, 2)
    assert.ok(p.checks.every((c) => c.level === 'warn' && /the lock/.test(c.message)))
  })

  it('a bad endpoint, protocol or exporter is a doctor error with the fix; said once for both signals', () => {
    const p = plan(config(), {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_TRACES_EXPORTER: 'zipkin',
    })
    const errors = doctor(p).filter((c) => c.level === 'error')
    assert.equal(errors.length, 3, JSON.stringify(errors))
    assert.match(
      errors[0]!.message,
      /OTEL_EXPORTER_OTLP_ENDPOINT=collector:4318 is not an http\(s\) URL/,
    )
    assert.match(errors[0]!.hint!, /http:\/\/localhost:4318/)
    assert.ok(errors.some((e) => /grpc is not supported/.test(e.hint!)))
    assert.ok(errors.some((e) => /zipkin is not an exporter/.test(e.message)))
  })

  it('a lock alone exports nothing: it says where, not whether', () => {
    const p = plan(config({ lock: { endpoint: 'http://mine:4318' } }), {})
    assert.equal(p.traces.exporter, 'none')
    assert.equal(p.metrics.exporter, 'none')
  })

  it('the config schema refuses a non-http endpoint and unknown keys', () => {
    assert.equal(telemetryConfig.safeParse({ endpoint: 'ftp://x' }).success, false)
    assert.equal(telemetryConfig.safeParse({ traces: { exporter: 'zipkin' } }).success, false)
    assert.equal(telemetryConfig.safeParse({ endpont: 'http://x' }).success, false)
  })
})
