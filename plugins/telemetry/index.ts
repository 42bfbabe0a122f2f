/**
 * telemetry: OpenTelemetry for yoke. Spans of every tool call (`execute_tool`, the pipeline's
 * decisions as events), agent runs (`invoke_agent`) and model requests (`chat`), reloads and MCP
 * server connects; the `gen_ai.execute_tool.duration` metric. Exports nothing until asked (the
 * standard `OTEL_*` variables or this config; the config wins, key by key); the `telemetry`
 * service lets in-process consumers (the web console) record and read spans. No tap on the call
 * path while nothing consumes spans. The only plugin that imports OpenTelemetry (export.ts).
 */
import { definePlugin } from 'yoke'
import { describe, plan, telemetryConfig } from './settings.ts'
import { Telemetry, type Kept } from './telemetry.ts'

export type * from './api.ts'

export default definePlugin({
  name: 'telemetry',
  inject: ['runtime'],
  provides: ['telemetry'],
  config: telemetryConfig,
  // where spans (with the user's OTEL headers, and content when captured) go: a project that sets
  // it waits until it is trusted; the user layer's `lock` wins over the project's by layer order
  sendsSecrets: () => [
    'endpoint',
    'headers',
    'traces.endpoint',
    'traces.headers',
    'metrics.endpoint',
    'metrics.headers',
    'lock',
    'content',
  ],
  async apply(ctx, config) {
    const kept = ctx.keep<Kept>('spans', () => ({ recent: [] }))
    const telemetry = new Telemetry(ctx, config, plan(config), kept)
    ctx.provide('telemetry', telemetry)
    ctx.control('telemetry/doctor', () => describe(telemetry.plan))
    ctx.effect('telemetry: flush and stop exporting', () => telemetry.close())
    await telemetry.start()
  },
})
