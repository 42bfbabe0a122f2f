/**
 * One running telemetry instance: the plan of where spans go, the exporter (loaded only when
 * something is exported), the spans kept for `recent()` (across reloads, by `ctx.keep`), and the
 * taps, which are on only while something consumes spans: an exporter, or a `record()` hold.
 * With neither, no hook of the call path has a tap of ours.
 */
import type { FiberInfo, InjectedContext, ReloadNotice, TraceContext } from 'yoke'
import type { AgentApi } from '../agent-loop/api.ts'
import type { SpanRecord, TelemetryApi } from './api.ts'
import { tapAgent } from './agent.ts'
import type { Exporting } from './export.ts'
import type { Plan, TelemetryConfig } from './settings.ts'
import { now, Span, type Attributes } from './spans.ts'
import { tapTools, type Tap, type ToolSpanHost } from './tools.ts'

export type TelemetryContext = InjectedContext<['runtime']>

/** What outlives a reload of the instance: the recent spans. */
export interface Kept {
  recent: SpanRecord[]
}

export class Telemetry implements TelemetryApi {
  #holds = 0
  #off: (() => void) | undefined
  #exporting: Exporting | undefined
  readonly #listeners = new Set<(span: SpanRecord) => void>()
  readonly #warned = new Set<string>()
  /** the agent service tapped now, and the removal of its taps */
  #agent: { api: AgentApi; off: () => void } | undefined

  constructor(
    private readonly ctx: TelemetryContext,
    private readonly config: TelemetryConfig,
    readonly plan: Plan,
    private readonly kept: Kept,
  ) {}

  /** Exports from now when the plan says so (the tap stay on for the instance's life). */
  async start(): Promise<void> {
    if (this.plan.traces.exporter === 'none' && this.plan.metrics.exporter === 'none') return
    const { startExport } = await import('./export.ts')
    this.#exporting = await startExport(this.plan, (kind, message) => this.warnOnce(kind, message))
    this.#hold()
  }

  /** Flushes and stops the exporter; the taps go. */
  async close(): Promise<void> {
    this.#off?.()
    this.#off = undefined
    await this.#exporting?.shutdown()
  }

  record(): () => void {
    this.#hold()
    let held = true
    return () => {
      if (!held) return
      held = false
      if (--this.#holds === 0) {
        this.#off?.()
        this.#off = undefined
      }
    }
  }

  recent(limit?: number): SpanRecord[] {
    const { recent } = this.kept
    const n = Math.min(limit ?? Infinity, this.config.keep)
    return recent.slice(Math.max(0, recent.length - n))
  }

  onSpan(listener: (span: SpanRecord) => void): () => void {
    const own = (span: SpanRecord) => listener(span)
    this.#listeners.add(own)
    return () => void this.#listeners.delete(own)
  }

  /** Whether our taps are on (a test reads it; doctor says it). */
  get active(): boolean {
    return this.#off !== undefined
  }

  warnOnce(kind: string, message: string): void {
    if (this.#warned.has(kind)) return
    this.#warned.add(kind)
    this.ctx.logger.warn(`${message} (said once)`)
  }

  #hold(): void {
    if (this.#holds++ === 0 && !this.#off && !this.ctx.signal.aborted) this.#off = this.#on()
  }

  /** Taps everything that makes spans; returns their removal. */
  #on(): () => void {
    const { ctx } = this
    const tap: Tap = (hook, fn, options) => ctx.tap(hook, ctx.key, fn, options)
    const host: ToolSpanHost = {
      start: (name, parent, attributes, kind = 'internal') =>
        this.#start(name, kind, parent, attributes),
      content: this.config.content,
      duration: this.#exporting?.duration,
      mcpStatus: (name) => ctx.get('mcp')?.get(name)?.status(),
    }
    const removals = [
      tapTools(ctx.runtime, host, tap),
      tap(ctx.hooks.reload, (notice) => this.#reload(notice)),
      tap(ctx.hooks.state, (fiber) => {
        this.#connect(fiber)
        this.#followAgent(host, tap)
      }),
      () => {
        this.#agent?.off()
        this.#agent = undefined
      },
      () => {
        for (const span of this.#connects.values()) span.end()
        this.#connects.clear()
      },
    ]
    this.#followAgent(host, tap)
    return () => removals.forEach((remove) => remove())
  }

  #start(
    name: string,
    kind: SpanRecord['kind'],
    parent: TraceContext | Span | undefined,
    attributes: Attributes,
  ): Span {
    return new Span(name, kind, parent, attributes, (span) => this.#ended(span))
  }

  #ended(span: Span): void {
    this.#exporting?.span(span)
    const record = span.record()
    const { recent } = this.kept
    recent.push(record)
    // trimmed in one go past twice the limit (recent() reads the last `keep`): no shift per span
    if (recent.length >= 2 * this.config.keep) recent.splice(0, recent.length - this.config.keep)
    for (const listener of this.#listeners)
      try {
        listener(record)
      } catch (err) {
        this.warnOnce('listener', `an onSpan listener threw: ${(err as Error).message}`)
      }
  }

  /** Taps the agent service's hooks when it appears or is replaced. */
  #followAgent(host: ToolSpanHost, tap: Tap): void {
    const api = this.ctx.get('agent')
    if (api === this.#agent?.api) return
    this.#agent?.off()
    this.#agent = api ? { api, off: tapAgent(api, host, tap) } : undefined
  }

  /** A load or reload as a span of its own (it happened: its start is its duration ago). */
  #reload(notice: ReloadNotice): void {
    const end = now()
    const span = this.#start(`yoke.${notice.type}`, 'internal', undefined, {
      'yoke.reload.type': notice.type,
      'yoke.reload.ok': notice.ok,
      'yoke.reload.trigger': notice.trigger,
      'yoke.reload.added': notice.added,
      'yoke.reload.removed': notice.removed,
      'yoke.reload.restarted': notice.restarted,
      'yoke.reload.unchanged.count': notice.unchanged.length,
      'yoke.reload.failed': notice.failed.map((f) => f.instance),
      'yoke.reload.duration_ms': notice.durationMs,
    })
    span.startMs = end - notice.durationMs
    for (const f of notice.failed)
      span.event('yoke.reload.instance_failed', {
        'yoke.instance': f.instance,
        'yoke.reason': f.error.message,
      })
    for (const error of notice.errors)
      span.event('yoke.reload.error', { 'yoke.reason': error.message })
    if (!notice.ok || notice.failed.length)
      span.fail(notice.ok ? `${notice.failed.length} instance(s) failed` : 'the config has errors')
    span.end(end)
  }

  readonly #connects = new Map<number, Span>()

  /** An MCP server's connect: an mcp-client instance from loading to active, failed or waiting. */
  #connect(fiber: FiberInfo): void {
    if (fiber.plugin.name !== 'mcp-client') return
    const open = this.#connects.get(fiber.id)
    if (fiber.state === 'loading') {
      if (open) return
      const server = (fiber.config as { serverName?: unknown } | undefined)?.serverName
      const name = typeof server === 'string' ? server : fiber.key
      this.#connects.set(
        fiber.id,
        this.#start(`mcp.connect ${name}`, 'client', undefined, {
          'yoke.mcp.server': name,
          'yoke.instance': fiber.key,
        }),
      )
      return
    }
    if (!open) return
    this.#connects.delete(fiber.id)
    const server = String(open.attributes['yoke.mcp.server'])
    const status = this.ctx.get('mcp')?.get(server)?.status()
    open.set({
      'yoke.state': fiber.state,
      ...(status?.protocol && { 'mcp.protocol.version': status.protocol.version }),
      ...(status && { 'network.transport': status.transport === 'stdio' ? 'pipe' : 'tcp' }),
      ...(status?.server && { 'yoke.mcp.server.version': status.server.version }),
    })
    if (fiber.state === 'failed' || fiber.state === 'pending')
      open.fail(fiber.error?.message ?? fiber.state)
    else if (fiber.state === 'active') open.status = 'ok'
    open.end()
  }
}
