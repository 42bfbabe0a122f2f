/**
 * Where telemetry goes: the plugin's config and the standard `OTEL_*` variables, resolved into one
 * plan per signal. The config wins over the environment, key by key (as the OpenTelemetry SDKs
 * let code override the environment, and as Codex's `[otel]` table is its source); a `lock` in
 * the user's layer fixes the OTLP destination so nothing below it (the project's config, the
 * per-signal overrides, the environment) redirects spans or metrics. Pure: no OpenTelemetry here.
 */
import { hostname } from 'node:os'
import { z } from 'zod'
import type { DoctorCheck } from 'yoke'

export const EXPORTERS = ['otlp', 'console', 'none'] as const
export const PROTOCOLS = ['http/protobuf', 'http/json'] as const
export type ExporterKind = (typeof EXPORTERS)[number]
export type Protocol = (typeof PROTOCOLS)[number]
export type Signal = 'traces' | 'metrics'

const httpUrl = z
  .string()
  .url()
  .refine((u) => /^https?:$/.test(new URL(u).protocol), 'an http:// or https:// URL')

const signal = {
  /** otlp, console (JSON lines on stderr) or none; unset: otlp when an endpoint is given */
  exporter: z.enum(EXPORTERS).optional(),
  /** this signal's whole URL (`…/v1/traces`), as OTEL_EXPORTER_OTLP_TRACES_ENDPOINT */
  endpoint: httpUrl.optional(),
  protocol: z.enum(PROTOCOLS).optional(),
  headers: z.record(z.string(), z.string()).optional(),
}

export const telemetryConfig = z
  .object({
    traces: z.object(signal).strict().default({}),
    metrics: z
      .object({ ...signal, intervalMs: z.number().int().min(100).optional() })
      .strict()
      .default({}),
    /** the base URL of both signals (`/v1/traces`, `/v1/metrics` appended), as OTEL_EXPORTER_OTLP_ENDPOINT */
    endpoint: httpUrl.optional(),
    protocol: z.enum(PROTOCOLS).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    serviceName: z.string().min(1).optional(),
    /**
     * Set in your user layer ($YOKE_HOME/patch.yaml): every OTLP export goes to this base URL
     * whatever the project's config, the per-signal overrides or the environment say.
     */
    lock: z
      .object({
        endpoint: httpUrl,
        protocol: z.enum(PROTOCOLS).optional(),
        headers: z.record(z.string(), z.string()).optional(),
      })
      .strict()
      .optional(),
    /** prompts, arguments and results on spans: off by default; when on, each cut at maxLength */
    content: z
      .object({
        capture: z.boolean().default(false),
        maxLength: z.number().int().min(16).max(1_000_000).default(2048),
      })
      .strict()
      .default({ capture: false, maxLength: 2048 }),
    /** how many finished spans the `telemetry` service keeps for `recent()` */
    keep: z.number().int().min(1).max(100_000).default(2000),
  })
  .strict()
export type TelemetryConfig = z.output<typeof telemetryConfig>

export interface SignalPlan {
  exporter: ExporterKind
  /** the whole URL an OTLP exporter posts to */
  url: string
  protocol: Protocol
  headers: Record<string, string>
  /** where the destination came from, for doctor */
  from: string
}

export interface Plan {
  traces: SignalPlan
  metrics: SignalPlan & { intervalMs: number }
  serviceName: string
  /** `service.instance.id`: the replica (YOKE_REPLICA_ID, as yoke serve names it), else host-pid */
  instanceId: string
  /** bad values (from the environment: the config's are checked by its schema) and what was ignored */
  checks: DoctorCheck[]
}

type Env = Record<string, string | undefined>

const SIGNAL_VAR = { traces: 'TRACES', metrics: 'METRICS' } as const

/** The plan of both signals from the instance's config and the environment. */
export function plan(config: TelemetryConfig, env: Env = process.env): Plan {
  const checks: DoctorCheck[] = []
  const traces = signalPlan('traces', config, env, checks)
  const metrics = signalPlan('metrics', config, env, checks)
  const interval =
    config.metrics.intervalMs ?? envNumber(env, 'OTEL_METRIC_EXPORT_INTERVAL', checks)
  return {
    traces,
    metrics: { ...metrics, intervalMs: interval ?? 60_000 },
    serviceName: config.serviceName ?? (env.OTEL_SERVICE_NAME || 'yoke'),
    instanceId: env.YOKE_REPLICA_ID?.trim() || `${hostname()}-${process.pid}`,
    // a shared variable read for both signals is said once
    checks: checks.filter((c, i) => checks.findIndex((d) => d.message === c.message) === i),
  }
}

function signalPlan(sig: Signal, config: TelemetryConfig, env: Env, checks: DoctorCheck[]) {
  const own = config[sig]
  const S = SIGNAL_VAR[sig]
  const envSignalUrl = envUrl(env, `OTEL_EXPORTER_OTLP_${S}_ENDPOINT`, checks)
  const envBase = envUrl(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', checks)
  const lock = config.lock
  let url: string | undefined
  let from: string
  if (lock) {
    url = join(lock.endpoint, sig)
    from = 'lock (the user layer)'
    const ignored = [
      own.endpoint && `config ${sig}.endpoint`,
      config.endpoint && config.endpoint !== lock.endpoint && 'config endpoint',
      envSignalUrl && `OTEL_EXPORTER_OTLP_${S}_ENDPOINT`,
      envBase && 'OTEL_EXPORTER_OTLP_ENDPOINT',
    ].filter(Boolean)
    if (ignored.length)
      checks.push({
        level: 'warn',
        message: `${sig}: ${ignored.join(', ')} ignored: the lock sends them to ${lock.endpoint}`,
        hint: 'remove the lock from your user layer ($YOKE_HOME/patch.yaml) to send them elsewhere',
      })
  } else if (own.endpoint) [url, from] = [own.endpoint, `config ${sig}.endpoint`]
  else if (config.endpoint) [url, from] = [join(config.endpoint, sig), 'config endpoint']
  else if (envSignalUrl) [url, from] = [envSignalUrl, `OTEL_EXPORTER_OTLP_${S}_ENDPOINT`]
  else if (envBase) [url, from] = [join(envBase, sig), 'OTEL_EXPORTER_OTLP_ENDPOINT']
  else from = 'the default'
  // an endpoint given asks for otlp; the lock alone does not (it says where, not whether)
  const asked = own.endpoint ?? config.endpoint ?? envSignalUrl ?? envBase
  const exporter =
    own.exporter ?? envExporter(env, `OTEL_${S}_EXPORTER`, checks) ?? (asked ? 'otlp' : 'none')
  const protocol =
    lock?.protocol ??
    own.protocol ??
    config.protocol ??
    envProtocol(env, `OTEL_EXPORTER_OTLP_${S}_PROTOCOL`, checks) ??
    envProtocol(env, 'OTEL_EXPORTER_OTLP_PROTOCOL', checks) ??
    'http/protobuf'
  const headers = {
    ...envHeaders(env, 'OTEL_EXPORTER_OTLP_HEADERS', checks),
    ...envHeaders(env, `OTEL_EXPORTER_OTLP_${S}_HEADERS`, checks),
    ...config.headers,
    ...own.headers,
    ...lock?.headers,
  }
  return {
    exporter,
    url: url ?? `http://localhost:4318/v1/${sig}`,
    protocol,
    headers,
    from,
  } satisfies SignalPlan
}

/** A base URL with the signal's path, as the OTLP spec says for OTEL_EXPORTER_OTLP_ENDPOINT. */
function join(base: string, sig: Signal): string {
  return `${base.replace(/\/+$/, '')}/v1/${sig}`
}

function envUrl(env: Env, name: string, checks: DoctorCheck[]): string | undefined {
  const value = env[name]?.trim()
  if (!value) return undefined
  try {
    if (/^https?:$/.test(new URL(value).protocol)) return value
  } catch {
    // said below
  }
  checks.push({
    level: 'error',
    message: `${name}=${value} is not an http(s) URL: it is not used`,
    hint: `set ${name} to the collector's OTLP/HTTP URL, e.g. http://localhost:4318`,
  })
  return undefined
}

function envExporter(env: Env, name: string, checks: DoctorCheck[]): ExporterKind | undefined {
  const value = env[name]?.trim()
  if (!value) return undefined
  const kinds = value.split(',').map((v) => v.trim())
  const known = kinds.find((k): k is ExporterKind => (EXPORTERS as readonly string[]).includes(k))
  const unknown = kinds.filter((k) => k && k !== known)
  if (unknown.length)
    checks.push({
      level: 'error',
      message: `${name}=${value}: ${unknown.join(', ')} is not an exporter yoke has`,
      hint: `use ${EXPORTERS.join(', ')} (one of them)`,
    })
  return known
}

function envProtocol(env: Env, name: string, checks: DoctorCheck[]): Protocol | undefined {
  const value = env[name]?.trim()
  if (!value) return undefined
  if ((PROTOCOLS as readonly string[]).includes(value)) return value as Protocol
  checks.push({
    level: 'error',
    message: `${name}=${value} is not a protocol yoke exports with: http/protobuf is used`,
    hint: `set ${name} to http/protobuf or http/json (grpc is not supported: the collector's HTTP port is 4318)`,
  })
  return undefined
}

function envNumber(env: Env, name: string, checks: DoctorCheck[]): number | undefined {
  const value = env[name]?.trim()
  if (!value) return undefined
  const n = Number(value)
  if (Number.isInteger(n) && n >= 100) return n
  checks.push({
    level: 'error',
    message: `${name}=${value} is not a whole number of milliseconds ≥ 100: 60000 is used`,
    hint: `set ${name} to e.g. 10000`,
  })
  return undefined
}

/** `k=v,k2=v2` with percent-encoded values (the OTLP exporter spec). */
function envHeaders(env: Env, name: string, checks: DoctorCheck[]): Record<string, string> {
  const value = env[name]?.trim()
  const out: Record<string, string> = {}
  if (!value) return out
  for (const pair of value.split(',')) {
    const at = pair.indexOf('=')
    const key = pair.slice(0, at).trim()
    if (at <= 0 || !key) {
      checks.push({
        level: 'error',
        message: `${name} has an entry that is not key=value: it is left out`,
        hint: `write ${name} as key=value,key2=value2`,
      })
      continue
    }
    try {
      out[key] = decodeURIComponent(pair.slice(at + 1).trim())
    } catch {
      out[key] = pair.slice(at + 1).trim()
    }
  }
  return out
}

/** What doctor says about where spans and metrics go. */
export function describe(p: Plan): DoctorCheck[] {
  const where = (s: SignalPlan) =>
    s.exporter === 'otlp'
      ? `OTLP ${s.protocol} to ${s.url} (from ${s.from})`
      : 'the console (JSON lines on stderr)'
  const on = (['traces', 'metrics'] as const).filter((s) => p[s].exporter !== 'none')
  const lines: DoctorCheck[] = on.map((s) => ({
    level: 'ok',
    message: `${s} go to ${where(p[s])}, service.name ${p.serviceName}`,
  }))
  if (!on.length)
    lines.push({
      level: 'ok',
      message: 'nothing is exported (spans stay in memory for the console while it records)',
      hint: 'export with OTEL_TRACES_EXPORTER=otlp OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 (and OTEL_METRICS_EXPORTER=otlp), or the telemetry config (plugins/telemetry/README.md)',
    })
  return [...lines, ...p.checks]
}
