/**
 * One console: the server, its token and port (kept across reloads with `ctx.keep`, so an open
 * page keeps working), the reload feed (kept too), the event hub fed by the kernel's and the
 * plugins' hooks, the approval bridge, and the controls that say the URL.
 */
import { resolve } from 'node:path'
import type { ServerResponse } from 'node:http'
import type { Context, FiberInfo, ReloadNotice } from 'yoke'
import type { McpHub, McpServerHandle } from '../mcp/api.ts'
import type { TelemetryApi } from '../telemetry/api.ts'
import type { ConsoleUrl } from './api.ts'
import { BrowserApprovals } from './approvals.ts'
import { isLoopback, type ConsoleConfig } from './config.ts'
import { EventHub } from './events.ts'
import { newToken } from './guard.ts'
import { configSection } from './host.ts'
import type { About, ReloadEntry, Snapshot, ToolCallRequest } from './protocol.ts'
import type { RunsDesk } from './runs.ts'
import { ConsoleServer, errorBody, type Answer } from './server.ts'
import { DEFAULT_UI_DIR } from './static.ts'
import * as views from './views.ts'

/** The Runs view's modules (module level: see index.ts's loadServer). */
const loadRuns = () => import('./runs.ts')

/** Reload entries kept for the feed. */
const RELOADS = 100
/** Changes that come together (a reload's state changes) make one doctor or tools event. */
const COALESCE_MS = 50

interface Kept {
  token: string
  port?: number
  since?: string
  seq: number
  reloads: ReloadEntry[]
}

type Ctx = Context & { project: { dir: string } }

export class WebConsole {
  readonly kept: Kept
  readonly server: ConsoleServer
  readonly hub: EventHub
  readonly approvals?: BrowserApprovals
  #runs?: Promise<RunsDesk>
  #closed = false
  #timers = new Map<string, NodeJS.Timeout>()
  #recording?: () => void
  #offSpan?: () => void
  /** each MCP server handle's transcript watch: a message pushes its server's row while a page looks */
  readonly #watched = new Map<McpServerHandle, () => void>()

  constructor(
    readonly ctx: Ctx,
    readonly config: ConsoleConfig,
  ) {
    // the token is per launch, not per reload: an open page keeps working
    this.kept = ctx.keep('console', (): Kept => ({ token: newToken(), seq: 0, reloads: [] }))
    const uiDir = config.uiDir ? resolve(ctx.project.dir, config.uiDir) : DEFAULT_UI_DIR
    this.server = new ConsoleServer(config.host, this.kept.token, uiDir)
    this.hub = new EventHub(config.maxQueued, config.heartbeatMs)
    this.hub.onCount = (count) => this.#browsers(count)
    const approval = ctx.get('approval')
    if (approval)
      this.approvals = new BrowserApprovals(
        approval,
        () => this.hub.count,
        (kind, data) => this.hub.send(kind, data as never),
      )
  }

  async start(): Promise<void> {
    const { ctx, config } = this
    const port = await this.#listen(this.kept.port ?? config.port)
    this.kept.port = port
    this.kept.since ??= new Date().toISOString()
    if (!isLoopback(config.host))
      ctx.logger.warn(
        `the console listens on ${config.host}:${port} (allowRemote): anyone who reaches that address and learns the token can run this project's tools as you; bind 127.0.0.1 unless the network is yours alone`,
      )
    this.#taps()
    if (this.approvals) ctx.get('approval')!.register(this.approvals.bridge)
    this.server.routes = {
      snapshot: () => this.snapshot(),
      events: (res) => this.#events(res),
      callTool: (name, body) => this.#call(name, body),
      answer: (id, body) =>
        this.approvals?.answer(id, body) ?? {
          status: 404,
          body: errorBody('NOT_FOUND', 'no approval service here'),
        },
      run: async (id) => (await this.runs()).detail(id),
      runAction: async (id, verb, body) => (await this.runs()).act(id, verb, body),
    }
    this.#controls()
    ctx.logger.info(`web console at ${this.url()} (\`yoke console\` opens it)`)
  }

  async close(): Promise<void> {
    for (const timer of this.#timers.values()) clearTimeout(timer)
    for (const unwatch of this.#watched.values()) unwatch()
    this.#watched.clear()
    this.#release()
    this.#closed = true
    ;(await this.#runs?.catch(() => undefined))?.close()
    this.hub.close()
    await this.server.close()
  }

  base(): string {
    const host = this.config.host.includes(':') ? `[${this.config.host}]` : this.config.host
    return `http://${host}:${this.kept.port}/`
  }

  url(): string {
    return `${this.base()}?token=${this.kept.token}`
  }

  about(): About {
    return {
      project: this.ctx.project.dir,
      url: this.base(),
      ...(this.ctx.command && { command: this.ctx.command }),
      pid: process.pid,
      since: this.kept.since!,
    }
  }

  async snapshot(): Promise<Snapshot> {
    const { ctx } = this
    return {
      at: new Date().toISOString(),
      about: this.about(),
      doctor: await views.doctor(ctx),
      instances: views.instances(ctx),
      config: configSection(ctx),
      reloads: this.kept.reloads,
      tools: views.tools(ctx),
      calls: views.calls(ctx),
      servers: views.servers(ctx),
      skills: views.skills(ctx),
      approvals: this.approvals?.pending() ?? [],
      runs: (await this.runs()).section(),
    }
  }

  /** Listens on `port`; a kept port another process took meanwhile falls back to any free one. */
  async #listen(port: number): Promise<number> {
    try {
      return await this.server.listen(port)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port === this.config.port)
        throw err
      return this.server.listen(this.config.port)
    }
  }

  #controls() {
    const { ctx } = this
    ctx.control('console/url', (): ConsoleUrl => ({
      listening: true,
      url: this.url(),
      base: this.base(),
      port: this.kept.port!,
    }))
    ctx.control('console/summary', () => ({
      title: 'console',
      rows: [['url', this.url()] as [string, string]],
    }))
    ctx.control('console/inspect', () => ({
      title: 'console',
      note: `${this.hub.count} browser${this.hub.count === 1 ? '' : 's'} connected`,
      lines: [`url ${this.base()} (yoke console opens it with its token)`],
      data: {
        base: this.base(),
        browsers: this.hub.count,
        approvals: this.approvals?.pending().length ?? 0,
      },
    }))
    ctx.control('console/doctor', () => [
      {
        level: 'ok' as const,
        message: `web console at ${this.base()} (\`yoke console\` opens it)`,
      },
    ])
  }

  #taps() {
    const { ctx } = this
    ctx.tap(ctx.hooks.reload, 'console', (notice: ReloadNotice) => this.#reload(notice))
    ctx.tap(ctx.hooks.state, 'console', (fiber: FiberInfo) => {
      if (!this.hub.count) return
      this.hub.send('instance', views.instanceRow(ctx, fiber))
      this.#soon('doctor', () => this.#doctor())
    })
    ctx.tap(ctx.hooks.log, 'console', (record) => {
      if (!this.hub.count || (record.level !== 'warn' && record.level !== 'error')) return
      this.hub.send('log', {
        at: new Date().toISOString(),
        level: record.level,
        ...(record.fiber && { instance: record.fiber.key }),
        message: record.message,
        ...(record.error !== undefined && { error: views.errorJson(record.error) }),
      })
    })
    const rt = ctx.get('runtime')
    if (rt)
      ctx.tap(rt.hooks.change, 'console', () => {
        if (this.hub.count) this.#soon('tools', () => this.hub.send('tools', views.tools(ctx)))
      })
    const hub = ctx.get('mcp') as McpHub | undefined
    if (!hub) return
    ctx.tap(hub.hooks.change, 'console', (status) => {
      this.#watch(hub)
      if (this.hub.count) this.hub.send('server', views.serverRow(status, hub))
    })
    this.#watch(hub)
  }

  /** Watches each server's transcript (once per handle): its row is pushed as messages come. */
  #watch(hub: McpHub) {
    for (const status of hub.list()) {
      const handle = hub.get(status.name)
      if (!handle?.onTranscript || this.#watched.has(handle)) continue
      const unwatch = handle.onTranscript(() => {
        if (!this.hub.count) return
        this.#soon(`server ${status.name}`, () => {
          const now = hub.list().find((s) => s.name === status.name)
          if (now) this.hub.send('server', views.serverRow(now, hub))
        })
      })
      this.#watched.set(handle, unwatch)
    }
    // a handle gone (its instance stopped) is not watched any longer
    const live = new Set(hub.list().map((s) => hub.get(s.name)))
    for (const [handle, unwatch] of this.#watched)
      if (!live.has(handle)) {
        unwatch()
        this.#watched.delete(handle)
      }
  }

  #reload(n: ReloadNotice) {
    const entry: ReloadEntry = {
      seq: ++this.kept.seq,
      at: new Date().toISOString(),
      type: n.type,
      ok: n.ok,
      trigger: n.trigger,
      added: n.added,
      removed: n.removed,
      restarted: n.restarted,
      unchanged: n.unchanged,
      failed: n.failed.map((f) => ({ instance: f.instance, error: views.errorJson(f.error)! })),
      errors: n.errors.map((e) => views.errorJson(e)!),
      durationMs: n.durationMs,
    }
    this.kept.reloads.push(entry)
    if (this.kept.reloads.length > RELOADS) this.kept.reloads.shift()
    this.hub.send('reload', entry)
    this.#soon('doctor', () => this.#doctor())
    // the agent loop or the model may have come or gone (replay and fork say so), or the folder moved
    this.#soon('runs', () => void this.#sendRuns())
    if (n.ok) this.#soon('config', () => this.hub.send('config', configSection(this.ctx)))
  }

  /**
   * The Runs view's desk; its modules load when a page first asks for runs, not at the dev's
   * start (the console's cost on `yoke dev`'s ready time).
   */
  runs(): Promise<RunsDesk> {
    return (this.#runs ??= loadRuns().then(
      ({ RunsDesk }) =>
        new RunsDesk(this.ctx, this.config, (job) => {
          this.hub.send('run-job', job)
          this.#soon('runs', () => void this.#sendRuns())
        }),
    ))
  }

  /** Watches the runs folder while a browser is here: runs started anywhere appear at once. */
  async #watchRuns(on: boolean) {
    const runs = await this.runs()
    if (on && !this.#closed && this.hub.count)
      runs.watch(() => this.#soon('runs', () => void this.#sendRuns()))
    else if (!on) runs.unwatch()
  }

  /** The runs section again, when it changed since the last one sent. */
  async #sendRuns() {
    try {
      await this.#watchRuns(true)
      const section = (await this.runs()).section()
      const text = JSON.stringify(section)
      if (text === this.#runsSent) return
      this.#runsSent = text
      this.hub.send('runs', section)
    } catch (err) {
      this.ctx.logger.debug(`console: the runs section failed: ${(err as Error).message}`)
    }
  }

  #runsSent?: string

  #doctor() {
    views.doctor(this.ctx).then(
      (section) => this.hub.send('doctor', section),
      (err) =>
        this.ctx.logger.debug(`console: the doctor section failed: ${(err as Error).message}`),
    )
  }

  /** Runs `send` once after changes stop coming for a moment. */
  #soon(kind: string, send: () => void) {
    if (this.#timers.has(kind)) return
    const timer = setTimeout(() => {
      this.#timers.delete(kind)
      if (this.hub.count) send()
    }, COALESCE_MS)
    timer.unref()
    this.#timers.set(kind, timer)
  }

  #events(res: ServerResponse) {
    this.hub.open(res, { at: new Date().toISOString(), about: this.about() })
  }

  /** A browser came or went: spans are recorded only while one watches. */
  #browsers(count: number) {
    if (count === 0) this.#runsSent = undefined
    this.#watchRuns(count > 0).catch((err) =>
      this.ctx.logger.debug(`console: the runs folder: ${(err as Error).message}`),
    )
    clearTimeout(this.#timers.get('unattended'))
    this.#timers.delete('unattended')
    if (count === 0 && this.approvals) {
      // a page that reloads comes back within the grace; after it, no call waits on the browser
      const timer = setTimeout(() => this.approvals!.unattended(), this.config.unattendedMs)
      timer.unref()
      this.#timers.set('unattended', timer)
    }
    if (count > 0 && !this.#recording) {
      const telemetry = this.ctx.get('telemetry') as TelemetryApi | undefined
      if (!telemetry) return
      this.#recording = telemetry.record()
      this.#offSpan = telemetry.onSpan((span) => this.hub.send('span', views.spanRow(span)))
    } else if (count === 0) this.#release()
  }

  #release() {
    this.#offSpan?.()
    this.#recording?.()
    this.#offSpan = this.#recording = undefined
  }

  async #call(name: string, body: unknown): Promise<Answer> {
    const request = body as Partial<ToolCallRequest> | null
    const args = request?.args ?? {}
    if (
      !request ||
      typeof args !== 'object' ||
      Array.isArray(args) ||
      (request.scope !== undefined && typeof request.scope !== 'string')
    )
      return {
        status: 400,
        body: errorBody('BAD_REQUEST', 'the body is { "args": { … }, "scope"?: "…" }'),
      }
    const rt = this.ctx.get('runtime')
    if (!rt) return { status: 503, body: errorBody('UNAVAILABLE', 'no runtime') }
    const result = await rt.call(name, args, {
      caller: 'console',
      ...(request.scope !== undefined && { scope: request.scope }),
    })
    const telemetry = this.ctx.get('telemetry') as TelemetryApi | undefined
    const span = telemetry
      ?.recent(200)
      .findLast((s) => s.attributes['gen_ai.tool.call.id'] === result.callId)
    return {
      status: 200,
      body: { result, ...(span && { traceId: span.traceId, spanId: span.spanId }) },
    }
  }
}
