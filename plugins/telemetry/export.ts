/**
 * Exporting, loaded only when a signal is exported: the OpenTelemetry SDK's batch span processor
 * and periodic metric reader in front of the OTLP/HTTP exporters (protobuf or JSON) or a console
 * exporter that writes JSON lines to stderr (stdout carries `yoke serve --stdio`'s protocol).
 * A failed export is said once per kind, never thrown into a call.
 */
import type { Attributes as OtelAttributes, HrTime } from '@opentelemetry/api'
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base'
import type { PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics'
import type { Resource } from '@opentelemetry/resources'
import type { Plan, SignalPlan } from './settings.ts'
import type { Span } from './spans.ts'

export interface Exporting {
  /** a finished span, to export */
  span(span: Span): void
  /** the duration metric, when metrics are exported */
  duration?(seconds: number, attributes: Record<string, string>): void
  /** flushes what is pending and stops */
  shutdown(): Promise<void>
}

/** OTel's result codes (core's ExportResultCode) */
const SUCCESS = 0
const FAILED = 1
const TIMEOUT_MS = 3000
/** the GenAI conventions' advice for gen_ai.execute_tool.duration (seconds) */
const BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
]

type Warn = (kind: string, message: string) => void

/** Starts exporting what the plan exports; undefined when it exports nothing. */
export async function startExport(plan: Plan, warn: Warn): Promise<Exporting | undefined> {
  const { traces, metrics } = plan
  if (traces.exporter === 'none' && metrics.exporter === 'none') return undefined
  const { resourceFromAttributes } = await import('@opentelemetry/resources')
  const resource = resourceFromAttributes({
    'service.name': plan.serviceName,
    'service.instance.id': plan.instanceId,
  })
  const spans = traces.exporter === 'none' ? undefined : await spanExport(traces, resource, warn)
  const meter = metrics.exporter === 'none' ? undefined : await metricExport(plan, resource, warn)
  return {
    span: spans?.span ?? (() => {}),
    ...(meter && { duration: meter.duration }),
    shutdown: async () => {
      await Promise.allSettled([spans?.shutdown(), meter?.shutdown()])
    },
  }
}

async function spanExport(sig: SignalPlan, resource: Resource, warn: Warn) {
  const { BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base')
  let exporter: SpanExporter
  if (sig.exporter === 'console') exporter = lines<ReadableSpan[]>((s) => s.map(readableJson))
  else {
    const { OTLPTraceExporter } =
      sig.protocol === 'http/json'
        ? await import('@opentelemetry/exporter-trace-otlp-http')
        : await import('@opentelemetry/exporter-trace-otlp-proto')
    exporter = new OTLPTraceExporter({
      url: sig.url,
      headers: sig.headers,
      timeoutMillis: TIMEOUT_MS,
    })
  }
  const processor = new BatchSpanProcessor(saying('traces', sig, exporter, warn))
  const scope = { name: 'yoke', version: '1' }
  return {
    span: (span: Span) => processor.onEnd(readable(span, resource, scope)),
    shutdown: () => processor.shutdown(),
  }
}

async function metricExport(plan: Plan, resource: Resource, warn: Warn) {
  const sig = plan.metrics
  const { MeterProvider, PeriodicExportingMetricReader } =
    await import('@opentelemetry/sdk-metrics')
  let exporter: PushMetricExporter
  if (sig.exporter === 'console') exporter = lines<ResourceMetrics>((m) => [m])
  else {
    const { OTLPMetricExporter } =
      sig.protocol === 'http/json'
        ? await import('@opentelemetry/exporter-metrics-otlp-http')
        : await import('@opentelemetry/exporter-metrics-otlp-proto')
    exporter = new OTLPMetricExporter({
      url: sig.url,
      headers: sig.headers,
      timeoutMillis: TIMEOUT_MS,
    })
  }
  const reader = new PeriodicExportingMetricReader({
    exporter: saying('metrics', sig, exporter, warn),
    exportIntervalMillis: plan.metrics.intervalMs,
    exportTimeoutMillis: Math.min(TIMEOUT_MS, plan.metrics.intervalMs),
  })
  const provider = new MeterProvider({ resource, readers: [reader] })
  const histogram = provider.getMeter('yoke').createHistogram('gen_ai.execute_tool.duration', {
    unit: 's',
    description: 'Duration of tool executions',
    advice: { explicitBucketBoundaries: BUCKETS },
  })
  return {
    duration: (seconds: number, attributes: Record<string, string>) =>
      histogram.record(seconds, attributes),
    shutdown: () => provider.shutdown(),
  }
}

interface AnyExporter<T> {
  export(items: T, done: (result: { code: number; error?: Error }) => void): void
  shutdown(): Promise<void>
}

/** An exporter whose failures are said once per kind (the signal and the error's message). */
function saying<T, E extends AnyExporter<T>>(
  signal: string,
  sig: SignalPlan,
  exporter: E,
  warn: Warn,
): E {
  const inner = exporter.export.bind(exporter)
  exporter.export = (items, done) =>
    inner(items, (result) => {
      if (result.code !== SUCCESS) {
        const why = result.error?.message ?? 'the export failed'
        warn(
          `${signal}:${why.replace(/\d+/g, '#')}`,
          `${signal} export to ${sig.url} failed: ${why}`,
        )
      }
      done(result)
    })
  return exporter
}

/** A console exporter: one JSON line per item on stderr. */
function lines<T>(
  items: (batch: T) => unknown[],
): AnyExporter<T> & { forceFlush(): Promise<void> } {
  return {
    export(batch, done) {
      try {
        for (const item of items(batch)) process.stderr.write(`${JSON.stringify(item)}\n`)
        done({ code: SUCCESS })
      } catch (err) {
        done({ code: FAILED, error: err as Error })
      }
    },
    shutdown: async () => {},
    forceFlush: async () => {},
  }
}

function readableJson(s: ReadableSpan) {
  const context = s.spanContext()
  return {
    traceId: context.traceId,
    spanId: context.spanId,
    parentSpanId: s.parentSpanContext?.spanId,
    name: s.name,
    attributes: s.attributes,
    events: s.events,
    status: s.status,
    startTime: s.startTime,
    endTime: s.endTime,
  }
}

const KIND = { internal: 0, server: 1, client: 2 } as const
const STATUS = { unset: 0, ok: 1, error: 2 } as const

function hr(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000)
  const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6))
  return [seconds, nanos]
}

/** Our span as the SDK's ReadableSpan, for its processors and exporters. */
function readable(span: Span, resource: Resource, scope: { name: string; version: string }) {
  const context = { traceId: span.traceId, spanId: span.spanId, traceFlags: 1 }
  return {
    name: span.name,
    kind: KIND[span.kind],
    spanContext: () => context,
    ...(span.parentSpanId && {
      parentSpanContext: { traceId: span.traceId, spanId: span.parentSpanId, traceFlags: 1 },
    }),
    startTime: hr(span.startMs),
    endTime: hr(span.endMs),
    duration: hr(span.endMs - span.startMs),
    status: {
      code: STATUS[span.status],
      ...(span.statusMessage !== undefined && { message: span.statusMessage }),
    },
    attributes: span.attributes as OtelAttributes,
    links: [],
    events: span.events.map((e) => ({
      name: e.name,
      time: hr(e.timeMs),
      attributes: e.attributes,
    })),
    ended: true,
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  } satisfies ReadableSpan
}
