/**
 * One running mcp-server instance: the gateway. Its fields are its state: the views it serves,
 * the calls in flight (exchanges) and those served as tasks, the connections (2025-era sessions
 * and stdio pipes; the stateless handlers of 2026-07-28 requests), the list changes due, the HTTP
 * endpoint and who may reach it. Its methods are what it does: start (follow what it serves,
 * listen), open a session, serve a stdio pipe, say where it is, close. index.ts builds one per
 * instance version, registers its close and starts it.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import type { Readable, Writable } from 'node:stream'
import {
  createMcpHandler,
  createRequestStateCodec,
  type RequestStateCodec,
} from '@modelcontextprotocol/server'
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio'
import {
  defineHooks,
  messageOf,
  SyncHook,
  YokeError,
  type InjectedContext,
  type RegisteredTool,
} from 'yoke'
import { color, type SummarySection } from 'yoke/cli'
import type { McpServerApi } from './api.ts'
import { APPROVAL_MS } from './approval.ts'
import { ListChanges } from './changes.ts'
import { DEFAULT_VIEW, viewConfig, type HttpConfig, type McpServerConfig } from './config.ts'
import { Exchanges } from './exchange.ts'
import { HttpEndpoint, isLoopback, portAgain, type LastEndpoint } from './http.ts'
import { Lifecycle, replicaId } from './lifecycle.ts'
import { MIN_SESSION_SECRET, SessionSeal } from './sealed.ts'
import { staticAccess, type Access } from './oauth/access.ts'
import { OAuthAccess } from './oauth/resource.ts'
import { resolveToken } from './oauth/token.ts'
import { buildServer, clientCaused, type Served } from './server.ts'
import { McpSession, type List, type SessionHost } from './session.ts'
import { StatelessHandlers } from './stateless.ts'
import { TaskTable } from './tasks.ts'
import { Upstream } from './upstream.ts'
import { View } from './views.ts'
import './errors.ts'

const { version } = createRequire(import.meta.url)('yoke/package.json') as { version: string }

/** What the gateway uses of its instance's context. */
export type GatewayContext = InjectedContext<['runtime', 'project']>

const NOTIFY: Record<List, 'toolsChanged' | 'promptsChanged' | 'resourcesChanged'> = {
  tools: 'toolsChanged',
  prompts: 'promptsChanged',
  resources: 'resourcesChanged',
}

export class McpGateway implements SessionHost {
  readonly version = version
  /** the views it serves, `default` first */
  readonly views = new Map<string, View>()
  /** the calls in flight, and what ended ones came to (for a late retry) */
  readonly exchanges: Exchanges
  /** calls served as MCP tasks */
  readonly tasks: TaskTable
  /** the upstream servers' prompts and resources, as the views show them */
  readonly upstream: Upstream
  readonly hooks: McpServerApi['hooks'] = defineHooks('mcpServer', {
    listed: new SyncHook(['tools', 'listing']),
  })
  /** seals a 2026-07-28 retry's state (which waiting call it continues), so no client forges another's */
  readonly codec: RequestStateCodec<{ exchange: string }>
  /** 2025-era HTTP sessions and stdio pipes */
  readonly sessions = new Set<McpSession>()
  /** health, readiness and the drain of the HTTP endpoint, and this replica's id */
  readonly lifecycle = new Lifecycle(replicaId())
  /** 2026-07-28 requests over HTTP: a handler per view and token holder */
  readonly #stateless: StatelessHandlers
  readonly #changes: ListChanges
  /** the HTTP endpoint, while it listens */
  #endpoint?: HttpEndpoint
  /** who may reach it: the static token, or OAuth access tokens */
  #access?: Access
  #oauth?: OAuthAccess
  /** stdio connections served so far (their session ids count up) */
  #stdio = 0

  constructor(
    private readonly ctx: GatewayContext,
    private readonly cfg: McpServerConfig,
  ) {
    // a retry's state lives as long as the longest wait for an answer (stdio and sessions: APPROVAL_MS)
    const stateMs = Math.ceil(Math.max(APPROVAL_MS, cfg.answerWaitMs) / 1000) * 1000
    const configured = Object.entries(cfg.views).filter(([name]) => name !== DEFAULT_VIEW)
    for (const [name, view] of [
      [DEFAULT_VIEW, cfg.views[DEFAULT_VIEW] ?? viewConfig.parse({})] as const,
      ...configured,
    ])
      this.views.set(name, new View(ctx.runtime, ctx.key, name, view, cfg.scope))
    this.exchanges = new Exchanges(
      { total: cfg.maxWaitingCalls, perView: cfg.maxWaitingCallsPerView },
      stateMs,
    )
    this.tasks = new TaskTable(() => ctx.get('tasks'), {
      total: cfg.maxTasks,
      perView: cfg.maxTasksPerView,
    })
    this.upstream = new Upstream(
      () => ctx.get('mcp'),
      (message) => this.#warn(message),
    )
    this.codec = createRequestStateCodec({ key: randomBytes(32), ttlSeconds: stateMs / 1000 })
    this.#stateless = new StatelessHandlers(
      (view, served) => this.#modernHandler(view, served),
      cfg.maxHolders,
    )
    this.#changes = new ListChanges(
      ctx,
      this.views,
      this.upstream,
      (list, view) => this.#notify(list, view),
      cfg.changeDebounceMs,
    )
  }

  /**
   * Starts serving: list changes, and the HTTP endpoint where the instance runs until stopped (yoke dev, yoke serve, an application): a one-shot command would
   * take the port a running `yoke dev` holds.
   */
  async start(): Promise<void> {
    this.#changes.start()
    const http = this.cfg.http
    if (http && http.enabled && this.ctx.runMode === 'serve') await this.#listen(http)
  }

  async close(): Promise<void> {
    const steps = [
      () => this.#endpoint?.close(),
      () => this.#changes.close(),
      () => this.#stateless.close(),
      () => Promise.all([...this.sessions].map((s) => s.close())),
      () => {
        this.tasks.cancelAll()
        this.exchanges.abortAll('the MCP gateway stopped')
      },
    ]
    const failed: unknown[] = []
    for (const step of steps)
      await Promise.resolve()
        .then(step)
        .catch((err) => failed.push(err))
    if (failed.length) throw new AggregateError(failed, 'the MCP gateway did not close cleanly')
  }

  // ---- GatewayHost: what every Server it builds shares ----

  skills() {
    return this.ctx.get('skills')
  }

  claudePlugins() {
    return this.ctx.get('claudePlugins')
  }

  toolSearch() {
    return this.ctx.get('toolSearch')
  }

  /** a client's bad input is its problem, worth a debug line; anything else a warning */
  report(where: string, err: Error): void {
    if (clientCaused(err)) this.ctx.logger.debug(`${where}: ${err.message}`)
    else this.#warn(`${where}: ${err.message}`)
  }

  /** tools/calls whose `_meta` carried a malformed traceparent or tracestate (each ignored) */
  malformedTraces = 0

  malformedTrace(why: string): void {
    this.malformedTraces++
    this.ctx.logger.debug(
      `tools/call: a malformed trace context in _meta, ignored (${this.malformedTraces} so far): ${why}`,
    )
  }

  listed(tools: readonly RegisteredTool[], { view, callerBase, era }: Served): void {
    // a tap's failure is its own: the client still gets its list
    try {
      this.hooks.listed.call(tools, {
        view: view.name,
        scope: view.scope.key,
        connection: callerBase,
        era,
      })
    } catch (err) {
      this.#warn(`MCP view ${view.name}: tools/list was answered, but ${messageOf(err)}`, err)
    }
  }

  // ---- sessions ----

  /** A new session of `view` (a 2025-era HTTP session, a stdio pipe). */
  open(view: View, id: string): McpSession {
    const session = new McpSession(id, view, this)
    this.sessions.add(session)
    return session
  }

  closed(session: McpSession): void {
    this.sessions.delete(session)
  }

  /** Serves one connection over a stream pair until the input ends or the session closes. */
  async serveStdio(input: Readable, output: Writable, options: { view?: string } = {}) {
    // unique across reloads too: "allow for this session" grants are kept by scope name
    const session = this.open(
      this.viewOf(options.view ?? DEFAULT_VIEW),
      `stdio-${++this.#stdio}-${randomUUID().slice(0, 8)}`,
    )
    // the opening exchange picks the era; one Server is pinned to the pipe for its life
    const handle = serveStdio(({ era }) => session.serverFor(era), {
      transport: new StdioServerTransport(input, output),
      onerror: (err) => this.report(`MCP stdio session ${session.id}`, err),
    })
    session.onClose = () => handle.close()
    const end = () => void session.close()
    input.once('end', end)
    input.once('close', end)
    try {
      await session.ended
    } finally {
      input.off('end', end)
      input.off('close', end)
    }
  }

  viewOf(name: string): View {
    const view = this.views.get(name)
    if (view) return view
    throw new YokeError('MCP_VIEW_UNKNOWN', {
      view: name,
      views: [...this.views.keys()].join(', '),
    })
  }

  // ---- where it is ----

  /** a view's URL while HTTP listens */
  urlOf(view: string): string | undefined {
    return this.#endpoint?.urlOf(view)
  }

  /** where the token is, or what it must be (never the token) */
  get tokenHint(): string | undefined {
    return this.#access?.hint
  }

  /** The dev screen's and `yoke doctor`'s section: the URL, and what clients must send. */
  summary(): (SummarySection & { title: string }) | undefined {
    const url = this.urlOf(DEFAULT_VIEW)
    if (!url) return undefined
    const hint = this.tokenHint
    const how = this.cfg.oauth ? `OAuth tokens from ${this.cfg.oauth.issuer}` : `token ${hint}`
    return { title: 'mcp endpoint', lines: [`${url}${hint ? ` ${color.dim(`· ${how}`)}` : ''}`] }
  }

  /** The `mcpServer` service: where the endpoint is, for yoke serve, yoke dev and embedders. */
  service(): McpServerApi {
    const urlOf = (name: string) => this.urlOf(this.viewOf(name).name)
    const { sessions } = this
    const oauth = this.#oauth
    const listening = () => this.#endpoint !== undefined
    return {
      hooks: this.hooks,
      get url() {
        return urlOf(DEFAULT_VIEW)
      },
      views: [...this.views.keys()],
      urlOf,
      tokenHint: this.tokenHint,
      oauth: oauth && {
        issuer: oauth.issuer.issuer,
        resourceOf: (name) => (listening() ? oauth.resourceOf(this.viewOf(name).name) : undefined),
        metadataUrlOf: (name) =>
          listening() ? oauth.metadataUrlOf(this.viewOf(name).name) : undefined,
      },
      get sessions() {
        return sessions.size
      },
      replica: this.lifecycle.replica,
      drain: async (ms) => {
        const http = this.cfg.http
        if (!this.#endpoint || !http) return { finished: 0, cut: 0, ms: 0 }
        return this.#endpoint.drain(ms ?? http.drainMs)
      },
      serveStdio: (input, output, options) => this.serveStdio(input, output, options),
    }
  }

  // ---- internals ----

  /**
   * Listens: port 0 is any free port, once; a reload of this instance takes the one it had again
   * (kept with ctx.keep), so clients keep their URL.
   */
  async #listen(http: HttpConfig) {
    const { ctx, cfg } = this
    // with oauth, the static token is taken only when it is configured as well (no file is made)
    const token =
      !cfg.oauth || cfg.token || cfg.tokenEnv ? resolveToken(cfg, ctx.project.home) : undefined
    if (token?.generated)
      ctx.logger.info(
        `generated the bearer token for MCP clients in ${token.generated.file} (mode 0600; read it there, it is never printed)`,
      )
    if (cfg.oauth)
      this.#oauth = new OAuthAccess(
        cfg.oauth,
        {
          views: this.views,
          urlOf: (v) => this.#endpoint!.urlOf(v),
          warn: (message, error) => this.#warn(message, error),
        },
        token,
      )
    const access = (this.#access = this.#oauth ?? staticAccess(token!))
    void this.#oauth?.warm()
    const kept = ctx.keep('endpoint', (): { last?: LastEndpoint } => ({}))
    const last = kept.last
    const endpoint = (this.#endpoint = new HttpEndpoint(http, {
      views: this.views,
      access,
      maxBodyBytes: cfg.maxBodyBytes,
      idleSessionMs: cfg.idleSessionMs,
      maxSessions: cfg.maxSessions,
      lifecycle: this.lifecycle,
      seal: this.#sessionSeal(http),
      open: (view, id) => this.open(view, id),
      modern: (view, who) => this.#stateless.of(view, who),
      debug: (message) => ctx.logger.debug(message),
      warn: (message) => this.#warn(message),
    }))
    await endpoint.listen(portAgain(last, http))
    const url = endpoint.urlOf(DEFAULT_VIEW)
    kept.last = { host: http.host, port: endpoint.port, url }
    if (!isLoopback(http.host))
      ctx.logger.warn(
        `the MCP endpoint listens on ${http.host}: other machines can reach it (the bearer token still applies)`,
      )
    // clients of the old URL are cut off: say where the endpoint is now (yoke serve prints it)
    if (last && last.url !== url)
      ctx.logger.info(
        `the MCP endpoint moved to ${url} (it was ${last.url}): clients must use the new URL`,
      )
    ctx.logger.debug(`MCP endpoint ${url} (views: ${[...this.views.keys()].join(', ')})`)
  }

  /** With the replicas' shared secret in `http.sessionKeyEnv`: sealed 2025-era session ids. */
  #sessionSeal(http: HttpConfig): SessionSeal | undefined {
    const secret = process.env[http.sessionKeyEnv]
    if (!secret) return undefined
    if (secret.length < MIN_SESSION_SECRET) {
      this.ctx.logger.warn(
        `$${http.sessionKeyEnv} is shorter than ${MIN_SESSION_SECRET} characters: session ids stay random, so a 2025-era session lives in the replica that opened it; give every replica the same longer secret`,
      )
      return undefined
    }
    return new SessionSeal(secret)
  }

  /** 2026-07-28 over HTTP: each request gets a Server of its own (stateless.ts). */
  #modernHandler(view: View, served: Pick<Served, 'scope' | 'callerBase'>) {
    return createMcpHandler(
      () =>
        buildServer(this, {
          view,
          era: 'modern',
          ...served,
          session: false,
          answerMs: this.cfg.answerWaitMs,
        }),
      {
        legacy: 'reject',
        onerror: (err) => this.report(`MCP (2026-07-28, view ${view.name})`, err),
      },
    )
  }

  /** Tells the clients of `view` that a list changed. */
  #notify(list: List, view: View) {
    for (const session of this.sessions) if (session.view === view) session.notify(list)
    for (const handler of this.#stateless.handlersOf(view)) handler.notify[NOTIFY[list]]()
  }

  #warn(message: string, error?: unknown) {
    this.ctx.logger.warn(message, error)
  }
}
