/**
 * One running mcp-server instance: the gateway. Its fields are its state: the views it serves,
 * the calls in flight (exchanges) and those served as tasks, the connections (2025-era sessions
 * and stdio pipes; the stateless handlers of 2026-07-28 requests), the list changes due, the HTTP
 * endpoint and who may reach it. Its methods are what it does: start (follow what it serves,
 * listen), open a session, serve a stdio pipe, say where it is, close. index.ts builds one per
 * instance version, registers its close and starts it.
 */
import { hkdfSync, randomBytes, randomUUID } from 'node:crypto'
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
import { serveRelayedRetry, type RetryState } from './call.ts'
import { ListChanges } from './changes.ts'
import { Cluster } from './cluster.ts'
import { DEFAULT_VIEW, viewConfig, type HttpConfig, type McpServerConfig } from './config.ts'
import { Exchanges } from './exchange.ts'
import {
  HttpEndpoint,
  isLoopback,
  portAgain,
  type ClientAnswer,
  type LastEndpoint,
} from './http.ts'
import { Lifecycle, replicaId } from './lifecycle.ts'
import { sharedGrants } from './grants.ts'
import { RateLimiter } from './rate.ts'
import { MIN_SESSION_SECRET, SessionSeal } from './sealed.ts'
import { staticAccess, type Access } from './oauth/access.ts'
import { OAuthAccess } from './oauth/resource.ts'
import { resolveToken } from './oauth/token.ts'
import { buildServer, clientCaused, serveRelayedTask, type Served } from './server.ts'
import { SharedTasks } from './shared-tasks.ts'
import { McpSession, type List, type SessionHost } from './session.ts'
import { StatelessHandlers } from './stateless.ts'
import { TaskTable } from './tasks.ts'
import { Upstream } from './upstream.ts'
import { View } from './views.ts'
import './errors.ts'

const { version } = createRequire(import.meta.url)('yoke/package.json') as { version: string }

/** What the gateway uses of its instance's context. */
export type GatewayContext = InjectedContext<['runtime', 'project']>

/** how soon a replica that could not reach the shared store tries again */
const REJOIN_MS = 5_000

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
  /**
   * seals a 2026-07-28 retry's state (which waiting call it continues, on which replica), so no
   * client forges another's; every replica must seal alike: a key from the replicas' session
   * secret, or one they share through the store, else this process's own
   */
  codec: RequestStateCodec<RetryState>
  /** the other replicas, while the composition has a store (cluster.ts) */
  cluster?: Cluster
  /** joins (or re-joins, or leaves) the replicas, one attempt at a time */
  #joining: Promise<void> = Promise.resolve()
  #rejoin?: NodeJS.Timeout
  /** 2025-era HTTP sessions and stdio pipes */
  readonly sessions = new Set<McpSession>()
  /** health, readiness and the drain of the HTTP endpoint, and this replica's id */
  readonly lifecycle = new Lifecycle(replicaId())
  readonly replica = this.lifecycle.replica
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
    this.#stateSeconds = stateMs / 1000
    const secret = this.#sessionSecret()
    this.codec = this.#codec(
      secret
        ? Buffer.from(hkdfSync('sha256', secret, 'yoke mcp-server', 'requestState v1', 32))
        : randomBytes(32),
    )
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
    this.lifecycle.sharing = () => (this.cluster ? 'store' : this.#alone)
    this.#changes.start()
    // a store may be applied after this instance: each load or reload is the moment to look again
    this.ctx.tap(this.ctx.hooks.reload, 'mcp-server', () => this.#join())
    await this.#join()
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
        this.tasks.cancelAll('cancelled: the MCP gateway stopped')
        this.exchanges.abortAll('the MCP gateway stopped')
      },
      () => this.tasks.shared?.flush(),
      () => {
        clearTimeout(this.#rejoin)
        return this.cluster?.close()
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

  grantsOf(connection: string) {
    return sharedGrants(this.cluster!.store, connection, (message) => this.#warn(message))
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
      drain: (ms) => this.#drain(ms),
      serveStdio: (input, output, options) => this.serveStdio(input, output, options),
    }
  }

  // ---- internals ----

  /** The endpoint's drain, then what is left of the bound for the MCP tasks this replica runs. */
  async #drain(ms?: number) {
    const bound = ms ?? (this.cfg.http ? this.cfg.http.drainMs : 0)
    const started = performance.now()
    const requests = this.#endpoint
      ? await this.#endpoint.drain(bound)
      : { finished: 0, cut: 0, ms: 0 }
    const left = Math.max(0, bound - (performance.now() - started))
    const tasks = await this.tasks.settle(
      left,
      `cut off: replica ${this.replica} was stopped before it ended`,
    )
    return { ...requests, ms: Math.round(performance.now() - started), tasks }
  }

  /**
   * Joins the other replicas through the composition's store (a relay for what another replica
   * holds, the tasks' shared copies, list changes broadcast), or follows the store's change: a
   * new one is joined again, none leaves. A store that cannot be reached now is tried again
   * every REJOIN_MS meanwhile, serving alone.
   */
  #join(): Promise<void> {
    return (this.#joining = this.#joining.then(async () => {
      clearTimeout(this.#rejoin)
      const store = this.ctx.get('store')
      if (store === this.cluster?.store || this.ctx.signal.aborted) return
      const old = this.cluster
      this.cluster = undefined
      this.tasks.shared = undefined
      this.#changes.broadcast = undefined
      await old?.close()
      if (!store) return
      const cluster = new Cluster(
        store,
        this.replica,
        (message) => this.#warn(message),
        (message) => this.ctx.logger.info(message),
      )
      cluster.handle('retry', (body, signal) =>
        serveRelayedRetry(this, this.viewOf(String(body.view)), body, signal),
      )
      cluster.handle('task', async (body) => serveRelayedTask(this, body))
      cluster.hear('changes', (lists) => this.#changes.hear(lists as Array<[string, string[]]>))
      cluster.handle('answer', async (body) => {
        await this.#endpoint?.deliver(body.answer as ClientAnswer)
        return {}
      })
      try {
        await cluster.start()
        if (!this.#sessionSecret())
          this.codec = this.#codec(await cluster.sharedSecret('request-state'))
      } catch (err) {
        await cluster.close()
        this.#warn(
          `could not join the other replicas through the shared store (${messageOf(err)}): this replica serves alone and tries again in ${REJOIN_MS / 1000} s`,
        )
        this.#alone = `alone: the shared store did not answer (${messageOf(err)})`
        this.#rejoin = setTimeout(() => void this.#join(), REJOIN_MS)
        this.#rejoin.unref()
        return
      }
      this.cluster = cluster
      this.#alone = undefined
      cluster.onLost = () => {
        this.tasks.saveAll()
        // a store that restarted empty gets the replicas' key back before a new replica makes another
        if (!this.#sessionSecret()) void cluster.keepSecret('request-state', this.#stateKey!)
      }
      this.tasks.shared = new SharedTasks(cluster, (message) => this.#warn(message))
      this.#changes.broadcast = (lists) =>
        void cluster
          .shout('changes', lists)
          .catch((err: unknown) =>
            this.#warn(`a list change was not sent to the other replicas: ${messageOf(err)}`),
          )
      this.ctx.logger.debug(`replica ${this.replica} joined the others through the shared store`)
    }))
  }

  #stateSeconds: number
  /** why this replica serves alone while a store is configured (it could not join) */
  #alone?: string

  /** the requestState key the replicas share through the store (no session secret set) */
  #stateKey?: string

  #codec(key: Uint8Array | string): RequestStateCodec<RetryState> {
    return createRequestStateCodec<RetryState>({ key, ttlSeconds: this.#stateSeconds })
  }

  /** The replicas' shared secret (`http.sessionKeyEnv`), when one long enough is set. */
  #sessionSecret(): string | undefined {
    const env = this.cfg.http ? this.cfg.http.sessionKeyEnv : undefined
    const secret = env ? process.env[env] : undefined
    return secret && secret.length >= MIN_SESSION_SECRET ? secret : undefined
  }

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
      rate: new RateLimiter(
        () => this.cluster?.store,
        (message) => this.#warn(message),
      ),
      rateLimitOf: (view) => view.config.rateLimit ?? cfg.rateLimit,
      // a 2025-era client's answer may reach a replica that does not hold the question
      relayAnswer: async (replica, answer) => {
        if (!this.cluster) return false
        try {
          await this.cluster.request(replica, { op: 'answer', answer })
          return true
        } catch (err) {
          this.ctx.logger.debug(
            `a client's answer for replica ${replica} was not passed on: ${messageOf(err)}`,
          )
          return false
        }
      },
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
    const secret = this.#sessionSecret()
    if (secret) return new SessionSeal(secret)
    if (process.env[http.sessionKeyEnv]) {
      this.ctx.logger.warn(
        `$${http.sessionKeyEnv} is shorter than ${MIN_SESSION_SECRET} characters: session ids stay random, so a 2025-era session lives in the replica that opened it; give every replica the same longer secret`,
      )
    }
    return undefined
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
