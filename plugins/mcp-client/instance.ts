/**
 * One running mcp-client instance: the connection to one MCP server and what it keeps between
 * connections. Its fields are its state (the supervisor's loop, the registered tools, the holds,
 * the sign-in, what earlier connections learnt); its methods are its behaviour (open a
 * connection, call a tool, answer a server's question, say why a tool is away). The decisions
 * are pure functions beside what they decide: reconnect and backoff in supervisor.ts, the sign-in
 * in oauth/client.ts, a call's failure in failures.ts, a tool's absence in `awayReason` below.
 */
import { createRequire } from 'node:module'
import type { Tool } from '@modelcontextprotocol/client'
import { messageOf, YokeError, type CallContext, type InjectedContext, type ToolOutput } from 'yoke'
import type { McpList, McpServerHandle, McpServerStatus } from '../mcp/api.ts'
import { SdkCall } from './call.ts'
import { callTool as callOnce, type AnswerInput } from './calls.ts'
import { oauthOf, rootsOf, transportOf, type McpClientConfig } from './config.ts'
import { elicitThrough, type Elicit } from './elicit.ts'
import { failure, loginNeeded, Unanswerable } from './failures.ts'
import { Holds } from './holds.ts'
import { LoginRequired, ServerAuth, signedInSince } from './oauth/client.ts'
import { openStore } from './oauth/store.ts'
import { answerSampling } from './sampling.ts'
import { Session, type SessionHost } from './session.ts'
import { Supervisor, type ServerState } from './supervisor.ts'
import { runsAsTask, TaskCalls, TASKS } from './tasks.ts'
import { ServerTools, toOutput } from './tools.ts'
import { ServerSkills } from './skills.ts'
import { secretKey, Transcript } from './transcript.ts'
import { RefusedMessage } from './wire.ts'

/** how often a server that needs a sign-in looks for new credentials */
export const SIGN_IN_POLL_MS = 1000

const { version } = createRequire(import.meta.url)('yoke/package.json') as { version: string }

/** What an instance gets from its context (the plugin's `inject`). */
export type McpClientContext = InjectedContext<['runtime', 'mcp', 'project']>

type Sample = NonNullable<SessionHost['sample']>

/** What `awayReason` needs to know of a server whose tool a call names. */
export interface AwayFacts {
  server: string
  state: ServerState
  /** the supervisor's why for a held server */
  heldFor?: string
  /** the sign-in the server waits for, when it does */
  login?: LoginRequired
  lastError?: string
  /** the supervisor's description of its state ("reconnecting, attempt 2 of 10 …") */
  detail: string
}

/**
 * Why a call of one of this server's tools finds it away, by the server's state: held
 * (MCP_SERVER_HELD), waiting for a sign-in (OAUTH_LOGIN_REQUIRED naming `yoke mcp login`),
 * connected (undefined: it has no such tool), anything else SERVER_UNAVAILABLE with the detail.
 */
export function awayReason(facts: AwayFacts): YokeError | undefined {
  const { server, state } = facts
  if (state === 'held')
    return new YokeError('MCP_SERVER_HELD', { name: server, why: facts.heldFor })
  if (state === 'needs-login')
    return facts.login ?? new LoginRequired(server, facts.lastError ?? 'it needs a sign-in')
  if (state === 'connected') return undefined
  return new YokeError('SERVER_UNAVAILABLE', { server, state: facts.detail })
}

export class McpClientInstance {
  /** the server's name (its tools are `mcp__<server>__<tool>`) */
  readonly server: string
  /** keeps the server connected: backoff, the outage budget, holds, the wait for a sign-in */
  readonly supervisor: Supervisor
  /** the server's tools, as registered in the runtime */
  readonly tools: ServerTools
  /** the holds standing on the server (it stays disconnected while any does) */
  readonly holds: Holds
  /** the server's skills (SEP-2640), in the skills service as `<server>:<skill>` */
  readonly skills: ServerSkills
  /** the OAuth sign-in, for an entry with `oauth` */
  readonly auth?: ServerAuth
  /** the roots the entry lists (none: the capability is not declared) */
  readonly roots: Array<{ uri: string; name: string }>
  /** the last messages with the server, across its connections (none with `transcript: false`) */
  readonly transcript?: Transcript
  /** the calls in flight: a 2025-era question while exactly one runs belongs to that one */
  readonly #running = new Set<CallContext>()
  /** the 2026-07-28 tasks extension's calls, per connection */
  readonly #tasks = new WeakMap<Session, TaskCalls>()
  /** what earlier connections learnt: the server speaks only the 2025 era */
  #legacyOnly = false
  /** who the last connection was talking to: a held server is still shown as it was */
  #last: Pick<McpServerStatus, 'server' | 'protocol'> = {}
  /** why the server waits for a sign-in, while it does */
  #login?: LoginRequired
  /** the look at the credential store while it needs a sign-in */
  #signInPoll?: ReturnType<typeof setInterval>
  readonly #elicit: Elicit
  /** sampling, when the entry opts in: the model is read per request (it may come, go or be replaced) */
  readonly #sample?: Sample

  constructor(
    private readonly ctx: McpClientContext,
    readonly cfg: McpClientConfig,
  ) {
    this.server = cfg.serverName
    this.roots = rootsOf(cfg, ctx.project.dir)
    if (cfg.transcript) this.transcript = new Transcript(() => this.#secrets())
    this.#elicit = elicitThrough(this.server, ctx.mcp, ctx.logger, cfg.callMs)
    if (cfg.sampling) this.#sample = (params, signal) => this.#sampled(params, signal)
    this.tools = new ServerTools(
      cfg,
      ctx.runtime,
      (tool, args, call, spawnOnly) => this.callTool(tool, args, call, spawnOnly),
      (m) => ctx.logger.warn(m),
      ctx.signal,
    )
    const oauth = oauthOf(cfg)
    this.auth =
      oauth &&
      new ServerAuth({
        server: this.server,
        url: cfg.url!,
        settings: oauth,
        store: openStore(ctx.project.home),
        ssrfGuard: cfg.ssrfGuard,
        log: (message) => ctx.logger.debug(`MCP server "${this.server}": ${message}`),
      })
    this.skills = new ServerSkills({
      server: this.server,
      enabled: cfg.skills,
      skills: () => ctx.get('skills'),
      client: () => this.#connected()?.client,
      describe: () => this.supervisor.describe(),
      resync: () => {
        const session = this.#connected()
        if (session) this.#syncSkills(session)
      },
      logger: ctx.logger,
    })
    this.supervisor = new Supervisor(cfg.reconnect, {
      open: (signal) => this.#open(signal),
      ready: (session) => {
        this.#syncSkills(session)
        return this.tools.sync(session.client, 'connected')
      },
      blocked: (err) => (this.#login = loginNeeded(err)) !== undefined,
      gaveUp: () => this.#gaveUp(),
      // a connection that ended under a sync may have registered tools after the hold cleared them
      parked: () => {
        this.skills.withdraw()
        return this.tools.clear()
      },
      changed: (state) => this.#changed(state),
      failed: (what, err) =>
        ctx.logger.error(`MCP server "${this.server}": ${what} failed: ${messageOf(err)}`, err),
    })
    this.holds = new Holds((whys) => this.#held(whys))
  }

  /**
   * What the `mcp` hub knows this server by: with `transcript()` (read by the web console and
   * `yoke mcp transcript`) and `onTranscript(listener)` (told of each message, to push the view
   * while someone looks).
   */
  handle(): McpServerHandle {
    return {
      name: this.server,
      instance: this.ctx.key,
      timeoutMs: this.cfg.callMs,
      client: () => this.#connected()?.client,
      restart: () => this.restart(),
      hold: (why) => this.holds.take(why),
      status: () => this.status(),
      stderr: () => [...(this.supervisor.session?.stderr ?? [])],
      transcript: () => this.transcript?.entries() ?? [],
      onTranscript: (listener) => this.transcript?.watch(listener) ?? (() => {}),
    }
  }

  /**
   * What the transcript never shows: the entry's header values (and a bearer's token alone), its
   * env values — every one under a name that looks secret, the others from 6 characters (a shorter
   * one, `1` or `info`, cannot be told from ordinary text) — and its OAuth tokens and client secret.
   */
  #secrets(): string[] {
    const { env, headers } = this.cfg
    const secrets: string[] = []
    for (const value of Object.values(headers))
      secrets.push(value, value.replace(/^\s*\w+\s+/, '').trim())
    for (const [name, value] of Object.entries(env))
      if (value.length >= 6 || (value.length >= 3 && secretKey(name))) secrets.push(value)
    try {
      const stored = this.auth?.credentials
      const client = stored?.client as { client_secret?: string } | undefined
      secrets.push(
        ...[
          stored?.tokens?.access_token,
          stored?.tokens?.refresh_token,
          client?.client_secret,
        ].filter((s): s is string => typeof s === 'string'),
      )
    } catch {
      // a store that cannot be read now holds nothing the transcript could show
    }
    return secrets.filter((s) => s.length >= 3)
  }

  /**
   * Starts the supervisor and waits for its first attempt (not for an instance removed meanwhile).
   * A failure is MCP_CONNECT_FAILED with failOnStartupError, else a warning (none for a sign-in:
   * that is said when the state changes) while the supervisor goes on trying.
   */
  async start(): Promise<void> {
    const { signal, logger } = this.ctx
    const failed = await Promise.race([
      this.supervisor.start(),
      new Promise<undefined>((resolve) =>
        signal.addEventListener('abort', () => resolve(undefined), { once: true }),
      ),
    ])
    if (failed && this.cfg.failOnStartupError)
      throw new YokeError('MCP_CONNECT_FAILED', { server: this.server, reason: failed.message })
    if (failed && !signal.aborted && !loginNeeded(failed))
      logger.warn(
        `MCP server "${this.server}" could not start (${failed.message}); ${this.supervisor.describe()}`,
      )
  }

  /** Ends the connection (and the server's process); returns once it is gone. */
  close(): Promise<void> {
    this.#stopSignInPoll()
    this.skills.withdraw()
    this.auth?.close()
    return this.supervisor.close()
  }

  /** Reconnects now, reading the lists again (not while held). */
  restart(): void {
    if (this.supervisor.heldFor !== undefined) return
    this.#fresh() // a restart reads the lists again, whatever their cache hints say
    this.supervisor.restart()
  }

  status(): McpServerStatus {
    const { supervisor } = this
    const held = supervisor.state === 'held'
    const session = held ? undefined : supervisor.session
    const live = this.#connected()
    const info = live?.client.getServerVersion()
    return {
      name: this.server,
      instance: this.ctx.key,
      transport: session?.kind ?? transportOf(this.cfg),
      state: supervisor.state,
      detail: supervisor.describe(),
      attempt: supervisor.attempt,
      maxAttempts: this.cfg.reconnect.maxAttempts,
      lastError: supervisor.lastError,
      tools: this.tools.count,
      ...(this.skills.count && { skills: this.skills.count }),
      problems: this.tools.problems,
      pid: session?.pid,
      sessionId: session?.sessionId,
      server: info
        ? { name: info.name, version: info.version }
        : held
          ? this.#last.server
          : undefined,
      protocol: live?.protocol ?? (held ? this.#last.protocol : undefined),
      ...(held && { holds: this.holds.whys }),
    }
  }

  /**
   * Why `name` is not there when it is one of this server's tools: in its last list, else by
   * its prefix `mcp__<server>__` (a server never listed yet; the longest prefix of the servers
   * the hub knows wins, so `mcp__a__b__x` is server "a__b"'s when there is one).
   */
  whyAway(name: string): YokeError | undefined {
    const { server, tools, supervisor } = this
    const prefix = `mcp__${server}__`
    const mine =
      tools.listed(name) ||
      tools.leftOut(name) !== undefined ||
      (name.startsWith(prefix) &&
        !this.ctx.mcp
          .list()
          .some((s) => s.name.length > server.length && name.startsWith(`mcp__${s.name}__`)))
    if (!mine) return undefined
    // left out by its entry or for its schema: so whatever the connection does
    const left = tools.leftOut(name)
    if (left) return new YokeError('MCP_TOOL_LEFT_OUT', { server, name: left.tool, why: left.why })
    return awayReason({
      server,
      state: supervisor.state,
      heldFor: supervisor.heldFor,
      login: this.#login,
      lastError: supervisor.lastError,
      detail: supervisor.describe(),
    })
  }

  /**
   * One call of one of the server's tools. A call the server refused for a session it forgot
   * (it restarted) never ran: it is sent once more on a new session; any other failure is the
   * call's (failures.ts says what it means, and whether the connection is dropped).
   */
  async callTool(
    tool: Tool,
    args: Record<string, unknown>,
    call: CallContext,
    spawnOnly: boolean,
    retried = false,
  ): Promise<ToolOutput> {
    const { supervisor, cfg } = this
    const session = this.#connected()
    if (!session) throw this.#unavailable()
    const link = new SdkCall(call)
    let asTask = false
    this.#running.add(call)
    try {
      // a 2026-07-28 server makes a call a task itself (the wire follows it); a 2025 one is asked to
      const caps = session.client.getServerCapabilities()
      asTask = session.era === 'legacy' && runsAsTask(tool, spawnOnly, caps, this.server)
      // a task's questions name their task (elicit.ts): it must not make another call's ambiguous
      if (asTask) this.#running.delete(call)
      const result = asTask
        ? await this.#taskCalls(session).call(tool, args, call, link)
        : await callOnce(session, cfg, tool, args, call, link, this.#answer)
      return toOutput(result)
    } catch (err) {
      if (link.aborted) throw link.reason // the runtime already knows why (abort, timeout, unload)
      if (supervisor.state === 'held') throw this.#unavailable()
      const what = failure(err, cfg, call.call.name, session, asTask)
      if (what.kind === 'expired' && !retried) {
        // the server refused this very call for an unknown session (it restarted): it never ran it,
        // so send it again on a new session. A call merely in flight when that happened is not resent.
        session.drop('the server forgot the session', true)
        const back = await Promise.race([
          supervisor.connected(cfg.startupMs, session),
          new Promise<false>((resolve) => call.onEnd(() => resolve(false))),
        ])
        if (link.aborted) throw link.reason // the caller gave up meanwhile: nothing is sent again
        if (back) return this.callTool(tool, args, call, spawnOnly, true)
      }
      if (what.kind === 'unreachable') session.drop(what.why)
      throw what.error
    } finally {
      this.#running.delete(call)
    }
  }

  /** Opens one connection (the supervisor's `open`): a Session with this instance as its host. */
  async #open(signal: AbortSignal): Promise<Session> {
    const { ctx, server } = this
    const session = await Session.open(
      this.cfg,
      {
        projectDir: ctx.project.dir,
        roots: this.roots,
        version,
        onListChanged: (list) => this.#listChanged(list),
        onError: (err) =>
          // what the wire refused to read is said; the transport's own noise is debug
          ctx.logger[err instanceof RefusedMessage ? 'warn' : 'debug'](
            `MCP server "${server}": ${err.message}`,
          ),
        sample: this.#sample,
        elicit: (params, signal) => this.#elicit(params, this.#onlyCall(), signal),
        legacyOnly: this.#legacyOnly,
        learntLegacy: () => (this.#legacyOnly = true),
        auth: this.auth?.transportAuth(),
        wantScope: this.auth && ((scope) => this.auth!.wantScope(scope)),
        transcript: this.transcript,
      },
      signal,
    )
    void session.lost.then(() => this.#tasks.get(session)?.close())
    // 2026-07-28: a server with the tasks extension may make any call a task; the wire follows it
    if (session.era === 'modern' && session.client.getServerCapabilities()?.extensions?.[TASKS])
      session.wire.tasks = (created, progress, signal) =>
        this.#taskCalls(session).drive(created, progress, signal)
    return session
  }

  /** The supervisor's state changed: said in the log, and to the hub. */
  #changed(state: ServerState): void {
    const { ctx, server, supervisor, tools } = this
    if (state === 'held') {
      this.skills.withdraw()
      tools
        .clear()
        .catch((err) =>
          ctx.logger.error(`MCP server "${server}": unregistering its tools failed`, err),
        )
      ctx.logger.info(
        `MCP server "${server}" is held (${supervisor.heldFor}): disconnected, its tools unregistered`,
      )
    }
    if (state === 'connected') {
      const info = supervisor.session?.client.getServerVersion()
      this.#last = {
        server: info && { name: info.name, version: info.version },
        protocol: supervisor.session?.protocol,
      }
    }
    if (state === 'needs-login') {
      ctx.logger.warn(supervisor.lastError ?? `MCP server "${server}" needs a sign-in`)
      this.#watchSignIn()
    }
    if (state === 'reconnecting' && supervisor.attempt === 1)
      ctx.logger.warn(`MCP server "${server}" disconnected (${supervisor.lastError}); reconnecting`)
    if (state === 'connected' && supervisor.generation > 1)
      ctx.logger.info(`MCP server "${server}" connected again (${tools.count} tools)`)
    ctx.mcp.changed(server)
  }

  async #gaveUp(): Promise<void> {
    this.skills.withdraw()
    this.ctx.logger.error(
      `MCP server "${this.server}": ${this.supervisor.describe()}; its tools are unregistered`,
    )
    await this.tools.clear()
  }

  /** The holds changed: held while any stands; the last release connects again as at start. */
  #held(whys: string[]): void {
    if (this.ctx.signal.aborted) return // this instance is gone: a late release starts nothing
    if (whys.length) return this.supervisor.hold(whys.join('; '))
    this.ctx.logger.info(`MCP server "${this.server}": its last hold was released; connecting`)
    this.#fresh()
    this.supervisor.release()
  }

  /** The next connection is made as at start: the lists read again, the era negotiated again. */
  #fresh(): void {
    this.tools.stale()
    this.#legacyOnly = false
  }

  #connected(): Session | undefined {
    return this.supervisor.state === 'connected' ? this.supervisor.session : undefined
  }

  /** The call a 2025-era question belongs to: the one running, when exactly one does. */
  #onlyCall() {
    return this.#running.size === 1 ? [...this.#running][0]!.call : undefined
  }

  #unavailable(): YokeError {
    return new YokeError('SERVER_UNAVAILABLE', {
      server: this.server,
      state: this.supervisor.describe(),
    })
  }

  async #sampled(...[params, signal]: Parameters<Sample>) {
    const { ctx, cfg } = this
    const { result, usage } = await answerSampling(
      ctx.get('model'),
      params,
      cfg.samplingMaxTokens,
      signal,
    )
    ctx.logger.info(
      `MCP server "${this.server}" sampled ${result.model} (${usage.inputTokens} in / ${usage.outputTokens} out tokens)`,
    )
    return result
  }

  /**
   * While it needs a sign-in, the credential store is read every second: a `yoke mcp login`
   * (another process) that stored new credentials for this server reconnects it.
   */
  #watchSignIn(): void {
    if (this.#signInPoll) return
    const seen = this.auth?.credentials?.savedAt
    this.#signInPoll = setInterval(() => {
      if (this.supervisor.state !== 'needs-login') return this.#stopSignInPoll()
      let arrived: boolean
      try {
        arrived = signedInSince(seen, this.auth?.credentials)
      } catch {
        return // a store that cannot be read now (mode, JSON) is reported on the next attempt
      }
      if (!arrived) return
      this.#stopSignInPoll()
      this.supervisor.restart()
    }, SIGN_IN_POLL_MS)
    this.#signInPoll.unref()
  }

  #stopSignInPoll(): void {
    clearInterval(this.#signInPoll)
    this.#signInPoll = undefined
  }

  /** A list changed on the server: tools are read again; the hub passes every change on. */
  #listChanged(list: McpList): void {
    const { ctx, server } = this
    const session = this.supervisor.session
    if (list === 'resources' && session && !session.isLost) this.#syncSkills(session)
    if (list !== 'tools') return ctx.mcp.listChanged(server, list)
    if (!session || session.isLost) return // the sync of the next connection will see the new list
    // queued behind a sync under way (the one on connect, too)
    this.tools.sync(session.client, 'changed').then(
      () => ctx.mcp.listChanged(server, 'tools'),
      (err) => {
        if (!session.isLost)
          ctx.logger.warn(
            `MCP server "${server}": re-reading its tools failed (${messageOf(err)}); the previous tools stay`,
          )
      },
    )
  }

  /** Reads the server's skills again (on connect, on resources/list_changed); the previous stay on failure. */
  #syncSkills(session: Session): void {
    this.skills.sync(session.client).catch((err) => {
      if (!session.isLost)
        this.ctx.logger.warn(
          `MCP server "${this.server}": reading its skills failed (${messageOf(err)}); the previous skills stay`,
        )
    })
  }

  /** What a 2026-07-28 server asks for inside a call's result, answered for that call. */
  readonly #answer: AnswerInput = async ({ method, params }, call) => {
    if (method === 'elicitation/create')
      return { ...(await this.#elicit(params as never, call.call, call.signal)) }
    if (method === 'sampling/createMessage' && this.#sample)
      return { ...(await this.#sample(params as never, call.signal)) }
    if (method === 'roots/list' && this.roots.length)
      return { roots: this.roots.map((r) => ({ ...r })) }
    throw new Unanswerable(`MCP server "${this.server}" asked for ${unanswered(method)}`)
  }

  #taskCalls(session: Session): TaskCalls {
    let calls = this.#tasks.get(session)
    if (!calls) {
      const info = { name: 'yoke', version }
      const only = () => this.#onlyCall()
      calls = new TaskCalls(session, this.cfg, info, session.capabilities, this.#elicit, only)
      this.#tasks.set(session, calls)
    }
    return calls
  }
}

/** What a server asked for that yoke does not answer, and how to change that. */
function unanswered(method: string): string {
  if (method === 'sampling/createMessage')
    return 'sampling, which is off for it (set sampling: true in its entry to let it use the model)'
  if (method === 'roots/list') return 'roots, and its entry lists none'
  return `${method}, which yoke does not answer`
}
