/**
 * mcp-server: yoke as an MCP server and gateway, for clients of both protocol eras on one
 * endpoint. The tools a runtime scope sees (native, plugin executables, other MCP servers' tools
 * through mcp-client) are served over Streamable HTTP (2026-07-28 requests stateless, 2025-era
 * clients in sessions; bearer token, loopback by default) and over stdio (`yoke serve --stdio`,
 * either era), in named views with their own allow/deny globs. Every call goes through the
 * runtime's pipeline, so policy, approvals (elicitation, or input_required), hooks and limits
 * apply; cancellation and progress pass both ways; spawnOnly tools are served as MCP tasks to
 * clients that support them. The skills are offered as prompts and resources, and so are the
 * upstream servers' prompts, resources and templates; changes reach connected clients.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import { createMcpHandler, createRequestStateCodec } from '@modelcontextprotocol/server'
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio'
import { defineHooks, definePlugin, SyncHook, YokeError, type Disposer } from 'yoke'
import { color } from 'yoke/cli'
import type { McpAnswer, McpAnswerer, McpHub, McpQuestion } from '../mcp/api.ts'
import { APPROVAL_MS, approvalBridge } from './approval.ts'
import type { McpServerApi } from './api.ts'
import { DEFAULT_VIEW, mcpServerConfig, viewConfig } from './config.ts'
import { Exchanges } from './exchange.ts'
import { HttpEndpoint, isLoopback, type EndpointHost } from './http.ts'
import { buildServer, clientCaused, type GatewayHost } from './server.ts'
import { McpSession, type List, type SessionHost } from './session.ts'
import { StatelessHandlers } from './stateless.ts'
import { TaskTable } from './tasks.ts'
import { resolveToken } from './token.ts'
import { staticAccess } from './access.ts'
import { OAuthAccess } from './oauth.ts'
import { promptName, resourceUri, Upstream } from './upstream.ts'
import { View } from './views.ts'
import './errors.ts'

export { mcpServerConfig, type McpServerConfig } from './config.ts'
export type * from './api.ts'

const { version } = createRequire(import.meta.url)('yoke/package.json') as { version: string }

/**
 * The port each instance's endpoint last had, per composition (its kernel's hooks) and instance
 * key: with `port: 0`, a reload of the instance listens on the same port again, so clients keep
 * their URL (module scope: the instance's own state goes with each version).
 */
const lastEndpoint = new WeakMap<object, Map<string, { host: string; port: number; url: string }>>()

const NOTIFY: Record<List, 'toolsChanged' | 'promptsChanged' | 'resourcesChanged'> = {
  tools: 'toolsChanged',
  prompts: 'promptsChanged',
  resources: 'resourcesChanged',
}

export default definePlugin({
  name: 'mcp-server',
  // its HTTP endpoint holds a port: a reload ends the old version before the new one listens
  exclusive: true,
  inject: ['runtime', 'approval', 'project'],
  provides: ['mcpServer'],
  config: mcpServerConfig,
  // who may reach the tools it serves, and so run them as the user: a cloned project's token or a
  // host of 0.0.0.0 waits for `yoke trust`
  sendsSecrets: () => ['token', 'tokenEnv', 'http.host', 'oauth'],
  async apply(ctx, cfg) {
    // a retry's state lives as long as the longest wait for an answer (stdio and sessions: APPROVAL_MS)
    const stateMs = Math.ceil(Math.max(APPROVAL_MS, cfg.answerWaitMs) / 1000) * 1000
    const views = new Map<string, View>()
    const configured = Object.entries(cfg.views).filter(([name]) => name !== DEFAULT_VIEW)
    for (const [name, view] of [
      [DEFAULT_VIEW, cfg.views[DEFAULT_VIEW] ?? viewConfig.parse({})] as const,
      ...configured,
    ]) {
      views.set(name, new View(ctx.runtime, ctx.key, name, view, cfg.scope))
    }
    const viewOf = (name: string) =>
      views.get(name) ??
      fail(new YokeError('MCP_VIEW_UNKNOWN', { view: name, views: [...views.keys()].join(', ') }))
    const debug = (message: string) => ctx.logger.debug(message) // a client's bad input is its problem, not the log's
    const warn = (message: string, error?: unknown) => ctx.logger.warn(message, error)
    const report = (where: string, err: Error) =>
      (clientCaused(err) ? debug : warn)(`${where}: ${err.message}`)

    const exchanges = new Exchanges(
      { total: cfg.maxWaitingCalls, perView: cfg.maxWaitingCallsPerView },
      stateMs,
    )
    const tasks = new TaskTable(() => ctx.get('tasks'), {
      total: cfg.maxTasks,
      perView: cfg.maxTasksPerView,
    })
    const upstream = new Upstream(() => ctx.get('mcp'), warn)
    const hooks: McpServerApi['hooks'] = defineHooks('mcpServer', {
      listed: new SyncHook(['tools', 'listing']),
    })
    const gateway: GatewayHost = {
      version,
      exchanges,
      tasks,
      upstream,
      skills: () => ctx.get('skills'),
      claudePlugins: () => ctx.get('claudePlugins'),
      toolSearch: () => ctx.get('toolSearch'),
      // a retry's state says which waiting call it continues: sealed, so no client forges another's
      codec: createRequestStateCodec({ key: randomBytes(32), ttlSeconds: stateMs / 1000 }),
      report,
      listed(tools, { view, callerBase, era }) {
        // a tap's failure is its own: the client still gets its list
        try {
          hooks.listed.call(tools, {
            view: view.name,
            scope: view.scope.key,
            connection: callerBase,
            era,
          })
        } catch (err) {
          warn(`MCP view ${view.name}: tools/list was answered, but ${(err as Error).message}`, err)
        }
      },
    }
    ctx.approval.register(approvalBridge((caller) => exchanges.byCaller(caller)))
    ctx.effect('mcp calls and tasks', () => {
      tasks.cancelAll()
      exchanges.abortAll('the MCP gateway stopped')
    })

    const sessions = new Set<McpSession>()
    const sessionHost: SessionHost = { gateway, closed: (session) => sessions.delete(session) }
    const open = (view: View, id: string) => {
      const session = new McpSession(id, view, sessionHost)
      sessions.add(session)
      return session
    }
    ctx.effect('mcp sessions', () =>
      Promise.all([...sessions].map((s) => s.close())).then(() => {}),
    )

    // 2026-07-28 over HTTP: stateless handlers, per view and token holder (stateless.ts); each
    // request gets a Server of its own
    const stateless = new StatelessHandlers(
      (view, served) =>
        createMcpHandler(
          () =>
            buildServer(gateway, {
              view,
              era: 'modern',
              ...served,
              session: false,
              answerMs: cfg.answerWaitMs,
            }),
          {
            legacy: 'reject',
            onerror: (err) => report(`MCP (2026-07-28, view ${view.name})`, err),
          },
        ),
      cfg.maxHolders,
    )
    ctx.effect('mcp modern handlers', () => stateless.close())

    /** Tells the clients of `view` that a list changed. */
    const notify = (list: List, view: View) => {
      for (const session of sessions) if (session.view === view) session.notify(list)
      for (const handler of stateless.handlersOf(view)) handler.notify[NOTIFY[list]]()
    }

    // changes settle for changeDebounceMs, then each view's clients hear once per list
    const due = new Map<List, Set<View>>()
    let timer: NodeJS.Timeout | undefined
    const soon = (lists: List[], to: Iterable<View> = views.values()) => {
      const targets = [...to]
      if (!targets.length) return
      for (const list of lists) {
        const set = due.get(list) ?? new Set<View>()
        for (const view of targets) set.add(view)
        due.set(list, set)
      }
      timer ??= setTimeout(announce, cfg.changeDebounceMs)
    }
    // only the views that show skills hear of them, and of an upstream server only those that
    // may show something of its namespace
    const showingSkills = () => [...views.values()].filter((v) => v.config.skills)
    const showing = (server: string, list: 'prompts' | 'resources') =>
      [...views.values()].filter((v) =>
        v.showsUnder(list === 'prompts' ? promptName(server, '') : resourceUri(server, '')),
      )
    ctx.effect('list_changed timer', () => clearTimeout(timer))
    function announce() {
      timer = undefined
      if (ctx.signal.aborted) return
      const lists = [...due]
      due.clear()
      follow()
      for (const [list, targets] of lists) {
        if (list !== 'tools') for (const view of targets) notify(list, view)
        else for (const view of views.values()) if (view.refresh()) notify('tools', view)
      }
    }
    ctx.tap(ctx.runtime.hooks.change, 'mcp-server', () => {
      for (const view of views.values()) view.invalidate()
      soon(['tools'])
    })

    // skills and the mcp hub may come and go (a reload): a tool change is the moment to look again.
    // Each `ctx.get('mcp')` is a copy bound to this instance, so a service is known by its hooks
    // (one object for all its copies): what is still there is neither re-tapped nor news.
    let skillsSeen: object | undefined
    let pluginsSeen: object | undefined
    let hubSeen: object | undefined
    let untap: Disposer[] = []
    let followed = false
    function follow() {
      const skills = ctx.get('skills')
      const plugins = ctx.get('claudePlugins')
      const hub = ctx.get('mcp')
      if (skills?.hooks === skillsSeen && plugins?.hooks === pluginsSeen && hub?.hooks === hubSeen)
        return
      for (const off of untap) void off()
      // a service that came or went is news to connected clients (at the start there are none)
      const replaced = followed
      followed = true
      skillsSeen = skills?.hooks
      pluginsSeen = plugins?.hooks
      hubSeen = hub?.hooks
      untap = [
        ...(skills
          ? [
              ctx.tap(skills.hooks.change, 'mcp-server', () =>
                soon(['prompts', 'resources'], showingSkills()),
              ),
            ]
          : []),
        ...(plugins
          ? [
              ctx.tap(plugins.hooks.change, 'mcp-server', () =>
                soon(
                  ['prompts'],
                  [...views.values()].filter((v) => v.config.commands),
                ),
              ),
            ]
          : []),
        ...(hub ? followHub(hub) : []),
      ]
      upstream.forget()
      if (replaced) soon(['prompts', 'resources'])
    }
    function followHub(hub: McpHub): Disposer[] {
      return [
        ctx.tap(hub.hooks.listChanged, 'mcp-server', (name, list) => {
          upstream.forget(name)
          if (list !== 'tools') soon([list], showing(name, list))
        }),
        // an upstream server's own question about a call of ours goes to the client that made it
        ...(typeof hub.answerer === 'function' ? [hub.answerer(relay(exchanges))] : []),
        ctx.tap(hub.hooks.change, 'mcp-server', (status) => {
          upstream.forget(status.name)
          for (const list of upstream.offersChanged(status.name))
            soon([list], showing(status.name, list))
        }),
      ]
    }
    follow()

    let endpoint: HttpEndpoint | undefined
    let tokenHint: string | undefined
    let oauth: OAuthAccess | undefined
    // the endpoint belongs to what runs until stopped (yoke dev, yoke serve, an application):
    // a one-shot command would take the port a running `yoke dev` holds
    if (cfg.http && cfg.http.enabled && ctx.runMode === 'serve') {
      // with oauth, the static token is taken only when it is configured as well (no file is made)
      const token =
        !cfg.oauth || cfg.token || cfg.tokenEnv ? resolveToken(cfg, ctx.project.home) : undefined
      if (token?.generated)
        ctx.logger.info(
          `generated the bearer token for MCP clients in ${token.generated.file} (mode 0600; read it there, it is never printed)`,
        )
      if (cfg.oauth)
        oauth = new OAuthAccess(cfg.oauth, { views, urlOf: (v) => endpoint!.urlOf(v), warn }, token)
      const access = oauth ?? staticAccess(token!)
      tokenHint = access.hint
      void oauth?.warm()
      const endpointHost: EndpointHost = {
        views,
        access,
        maxBodyBytes: cfg.maxBodyBytes,
        idleSessionMs: cfg.idleSessionMs,
        maxSessions: cfg.maxSessions,
        open,
        modern: (view, who) => stateless.of(view, who),
        debug,
        warn,
      }
      // port 0 is any free port, once: a reload of this instance takes the one it had again
      const byKey = lastEndpoint.get(ctx.hooks) ?? new Map()
      lastEndpoint.set(ctx.hooks, byKey)
      const last = byKey.get(ctx.key)
      const again = cfg.http.port === 0 && last?.host === cfg.http.host ? last.port : undefined
      const http = (endpoint = new HttpEndpoint(cfg.http, endpointHost))
      ctx.effect('mcp http endpoint', () => http.close())
      await http.listen(again)
      const url = http.urlOf(DEFAULT_VIEW)
      byKey.set(ctx.key, { host: cfg.http.host, port: http.port, url })
      if (!isLoopback(cfg.http.host))
        ctx.logger.warn(
          `the MCP endpoint listens on ${cfg.http.host}: other machines can reach it (the bearer token still applies)`,
        )
      // clients of the old URL are cut off: say where the endpoint is now (yoke serve prints it)
      if (last && last.url !== url)
        ctx.logger.info(
          `the MCP endpoint moved to ${url} (it was ${last.url}): clients must use the new URL`,
        )
      ctx.logger.debug(`MCP endpoint ${url} (views: ${[...views.keys()].join(', ')})`)
    }

    ctx.control('summary:mcp endpoint', () => {
      const url = endpoint?.urlOf(DEFAULT_VIEW)
      if (!url) return undefined
      const how = cfg.oauth ? `OAuth tokens from ${cfg.oauth.issuer}` : `token ${tokenHint}`
      return { lines: [`${url}${tokenHint ? ` ${color.dim(`· ${how}`)}` : ''}`] }
    })

    let stdio = 0
    ctx.provide('mcpServer', {
      hooks,
      get url() {
        return endpoint?.urlOf(DEFAULT_VIEW)
      },
      views: [...views.keys()],
      urlOf: (name) => endpoint?.urlOf(viewOf(name).name),
      tokenHint,
      oauth: oauth && {
        issuer: oauth.issuer.issuer,
        resourceOf: (name) => (endpoint ? oauth!.resourceOf(viewOf(name).name) : undefined),
        metadataUrlOf: (name) => (endpoint ? oauth!.metadataUrlOf(viewOf(name).name) : undefined),
      },
      get sessions() {
        return sessions.size
      },
      async serveStdio(input, output, options = {}) {
        // unique across reloads too: "allow for this session" grants are kept by scope name
        const session = open(
          viewOf(options.view ?? DEFAULT_VIEW),
          `stdio-${++stdio}-${randomUUID().slice(0, 8)}`,
        )
        // the opening exchange picks the era; one Server is pinned to the pipe for its life
        const handle = serveStdio(({ era }) => session.serverFor(era), {
          transport: new StdioServerTransport(input, output),
          onerror: (err) => report(`MCP stdio session ${session.id}`, err),
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
      },
    })
  },
})

/** Upstream servers' questions (the `mcp` hub's answerers) about calls this gateway runs. */
function relay(exchanges: Exchanges): McpAnswerer {
  const exchangeOf = (question: McpQuestion) =>
    question.call ? exchanges.byCaller(question.call.caller) : undefined
  return {
    name: 'mcp-server (the MCP client that made the call)',
    handles: (question) => exchangeOf(question) !== undefined,
    async ask(question) {
      const exchange = exchangeOf(question)
      if (!exchange) return { action: 'cancel' }
      const answer = await exchange.elicit(
        question.mode === 'url'
          ? {
              mode: 'url',
              message: question.message,
              url: question.url ?? '',
              elicitationId: question.elicitationId,
            }
          : {
              mode: 'form',
              message: question.message,
              requestedSchema: question.requestedSchema ?? { type: 'object', properties: {} },
            },
        question.signal,
      )
      return answer as McpAnswer
    },
  }
}

function fail(err: Error): never {
  throw err
}
