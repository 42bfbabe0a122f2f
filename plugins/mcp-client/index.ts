/**
 * mcp-client: one MCP server (stdio, Streamable HTTP or SSE; the 2025 era or 2026-07-28) whose
 * tools run through the runtime's pipeline like any other, as `mcp__<server>__<tool>`. A
 * supervisor keeps it connected (backoff, an outage budget, then giving up until restarted);
 * during an outage its calls end at once with SERVER_UNAVAILABLE saying what is going on. A hold
 * (`mcp.hold`) disconnects it on purpose until released. Every instance joins the `mcp`
 * registry, which also carries the server's questions to yoke.
 */
import { createRequire } from 'node:module'
import type { Tool } from '@modelcontextprotocol/client'
import { definePlugin, YokeError, type CallContext, type ToolOutput } from 'yoke'
import type { McpList, McpServerHandle, McpServerStatus } from '../mcp/api.ts'
import { SdkCall } from './call.ts'
import { callTool as callOnce, type AnswerInput } from './calls.ts'
import { mcpClientConfig, oauthOf, rootsOf, transportOf } from './config.ts'
import { elicitThrough } from './elicit.ts'
import { failure, loginNeeded, Unanswerable } from './failures.ts'
import { Holds } from './holds.ts'
import { LoginRequired, ServerAuth } from './oauth/client.ts'
import { openStore } from './oauth/store.ts'
import { answerSampling } from './sampling.ts'
import { Session } from './session.ts'
import { Supervisor } from './supervisor.ts'
import { runsAsTask, TaskCalls, TASKS } from './tasks.ts'
import { RefusedMessage } from './wire.ts'
import { ServerTools, toOutput } from './tools.ts'
import './errors.ts'

export { mcpClientConfig, publicToolName, type McpClientConfig } from './config.ts'
export { toOutput } from './tools.ts'

/** how often a server that needs a sign-in looks for new credentials */
const SIGN_IN_POLL_MS = 1000

const { version } = createRequire(import.meta.url)('yoke/package.json') as { version: string }

export default definePlugin({
  name: 'mcp-client',
  inject: ['runtime', 'mcp', 'project'],
  config: mcpClientConfig,
  // a stdio server from a project's own config starts after `yoke trust`; a url one needs no trust
  runsProjectCode: (cfg) => cfg.command !== undefined,
  // sampling lets the server ask the user's model for completions, on the user's key
  sendsSecrets: (cfg) => (cfg.sampling ? ['sampling'] : []),
  async apply(ctx, cfg) {
    const server = cfg.serverName
    const roots = rootsOf(cfg, ctx.project.dir)
    // sampling, when opted in: the model is read per request (it may come, go or be replaced)
    const sample = cfg.sampling
      ? async (params: Parameters<typeof answerSampling>[1], signal: AbortSignal) => {
          const { result, usage } = await answerSampling(
            ctx.get('model'),
            params,
            cfg.samplingMaxTokens,
            signal,
          )
          ctx.logger.info(
            `MCP server "${server}" sampled ${result.model} (${usage.inputTokens} in / ${usage.outputTokens} out tokens)`,
          )
          return result
        }
      : undefined
    const elicit = elicitThrough(server, ctx.mcp, ctx.logger, cfg.callMs)
    /** the calls in flight: a 2025-era question while exactly one runs belongs to that one */
    const running = new Set<CallContext>()
    /** what earlier connections learnt: the server speaks only the 2025 era */
    let legacyOnly = false
    /** who the last connection was talking to: a held server is still shown as it was */
    let last: Pick<McpServerStatus, 'server' | 'protocol'> = {}
    const tools = new ServerTools(
      cfg,
      ctx.runtime,
      (tool, args, call, spawnOnly) => callTool(tool, args, call, spawnOnly),
      (m) => ctx.logger.warn(m),
      ctx.signal,
    )
    const tasks = new WeakMap<Session, TaskCalls>()
    /** why the server waits for a sign-in, while it does */
    let login: LoginRequired | undefined
    const oauth = oauthOf(cfg)
    const serverAuth =
      oauth &&
      new ServerAuth({
        server,
        url: cfg.url!,
        settings: oauth,
        store: openStore(ctx.project.home),
        ssrfGuard: cfg.ssrfGuard,
        log: (message) => ctx.logger.debug(`MCP server "${server}": ${message}`),
      })
    const supervisor: Supervisor = new Supervisor(cfg.reconnect, {
      open: async (signal) => {
        const session = await Session.open(
          cfg,
          {
            projectDir: ctx.project.dir,
            roots,
            version,
            onListChanged: listChanged,
            onError: (err) =>
              // what the wire refused to read is said; the transport's own noise is debug
              ctx.logger[err instanceof RefusedMessage ? 'warn' : 'debug'](
                `MCP server "${server}": ${err.message}`,
              ),
            sample,
            elicit: (params, signal) =>
              elicit(params, running.size === 1 ? [...running][0]!.call : undefined, signal),
            legacyOnly,
            learntLegacy: () => (legacyOnly = true),
            auth: serverAuth?.transportAuth(),
            wantScope: serverAuth && ((scope) => serverAuth.wantScope(scope)),
          },
          signal,
        )
        void session.lost.then(() => tasks.get(session)?.close())
        // 2026-07-28: a server with the tasks extension may make any call a task; the wire follows it
        if (session.era === 'modern' && session.client.getServerCapabilities()?.extensions?.[TASKS])
          session.wire.tasks = (created, progress, signal) =>
            taskCalls(session).drive(created, progress, signal)
        return session
      },
      ready: (session) => tools.sync(session.client, 'connected'),
      blocked: (err) => (login = loginNeeded(err)) !== undefined,
      async gaveUp() {
        ctx.logger.error(
          `MCP server "${server}": ${supervisor.describe()}; its tools are unregistered`,
        )
        await tools.clear()
      },
      // a connection that ended under a sync may have registered tools after the hold cleared them
      parked: () => tools.clear(),
      changed: (state) => {
        if (state === 'held') {
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
          last = {
            server: info && { name: info.name, version: info.version },
            protocol: supervisor.session?.protocol,
          }
        }
        if (state === 'needs-login') {
          ctx.logger.warn(supervisor.lastError ?? `MCP server "${server}" needs a sign-in`)
          watchSignIn()
        }
        if (state === 'reconnecting' && supervisor.attempt === 1)
          ctx.logger.warn(
            `MCP server "${server}" disconnected (${supervisor.lastError}); reconnecting`,
          )
        if (state === 'connected' && supervisor.generation > 1)
          ctx.logger.info(`MCP server "${server}" connected again (${tools.count} tools)`)
        ctx.mcp.changed(server)
      },
      failed: (what, err) =>
        ctx.logger.error(
          `MCP server "${server}": ${what} failed: ${(err as Error)?.message ?? err}`,
          err,
        ),
    })
    let watching = false
    const connected = () => (supervisor.state === 'connected' ? supervisor.session : undefined)
    const holds = new Holds((whys) => {
      if (ctx.signal.aborted) return // this instance is gone: a late release starts nothing
      if (whys.length) return supervisor.hold(whys.join('; '))
      ctx.logger.info(`MCP server "${server}": its last hold was released; connecting`)
      fresh()
      supervisor.release()
    })
    /** the next connection is made as at start: the lists read again, the era negotiated again */
    const fresh = () => {
      tools.stale()
      legacyOnly = false
    }
    const handle: McpServerHandle = {
      name: server,
      instance: ctx.key,
      timeoutMs: cfg.callMs,
      client: () => connected()?.client,
      restart: () => {
        if (supervisor.heldFor !== undefined) return
        fresh() // a restart reads the lists again, whatever their cache hints say
        supervisor.restart()
      },
      hold: (why) => holds.take(why),
      status: () => {
        const held = supervisor.state === 'held'
        const session = held ? undefined : supervisor.session
        const live = connected()
        const info = live?.client.getServerVersion()
        return {
          name: server,
          instance: ctx.key,
          transport: session?.kind ?? transportOf(cfg),
          state: supervisor.state,
          detail: supervisor.describe(),
          attempt: supervisor.attempt,
          maxAttempts: cfg.reconnect.maxAttempts,
          lastError: supervisor.lastError,
          tools: tools.count,
          problems: tools.problems,
          pid: session?.pid,
          sessionId: session?.sessionId,
          server: info
            ? { name: info.name, version: info.version }
            : held
              ? last.server
              : undefined,
          protocol: live?.protocol ?? (held ? last.protocol : undefined),
          ...(held && { holds: holds.whys }),
        }
      },
    }
    ctx.mcp.add(handle)
    // a call to one of its tools while they are away answers why, not UNKNOWN_TOOL
    ctx.tap(ctx.runtime.hooks.unknownTool, 'mcp-client', (name) => whyAway(name))
    ctx.effect(`mcp ${server} connection`, () => {
      serverAuth?.close()
      return supervisor.close()
    })
    // an instance removed while its server starts does not wait for the attempt to end
    const failed = await Promise.race([
      supervisor.start(),
      new Promise<undefined>((resolve) =>
        ctx.signal.addEventListener('abort', () => resolve(undefined), { once: true }),
      ),
    ])
    if (failed && cfg.failOnStartupError)
      throw new YokeError('MCP_CONNECT_FAILED', { server, reason: failed.message })
    if (failed && !ctx.signal.aborted && !loginNeeded(failed))
      ctx.logger.warn(
        `MCP server "${server}" could not start (${failed.message}); ${supervisor.describe()}`,
      )

    /**
     * While it needs a sign-in, the credential store is read every second: a `yoke mcp login`
     * (another process) that stored new credentials for this server reconnects it.
     */
    function watchSignIn() {
      if (watching) return
      watching = true
      const seen = serverAuth?.credentials?.savedAt
      const timer = setInterval(() => {
        if (supervisor.state !== 'needs-login') return stop()
        let now: number | undefined
        try {
          now = serverAuth?.credentials?.savedAt
        } catch {
          return // a store that cannot be read now (mode, JSON) is reported on the next attempt
        }
        if (now !== seen && serverAuth?.credentials?.tokens) {
          stop()
          supervisor.restart()
        }
      }, SIGN_IN_POLL_MS)
      timer.unref()
      const stop = () => {
        clearInterval(timer)
        watching = false
      }
    }

    /** A list changed on the server: tools are read again; the hub passes every change on. */
    function listChanged(list: McpList) {
      if (list !== 'tools') return ctx.mcp.listChanged(server, list)
      const session = supervisor.session
      if (!session || session.isLost) return // the sync of the next connection will see the new list
      // queued behind a sync under way (the one on connect, too)
      tools.sync(session.client, 'changed').then(
        () => ctx.mcp.listChanged(server, 'tools'),
        (err) => {
          if (!session.isLost)
            ctx.logger.warn(
              `MCP server "${server}": re-reading its tools failed (${(err as Error).message}); the previous tools stay`,
            )
        },
      )
    }

    /** What a 2026-07-28 server asks for inside a call's result, answered for that call. */
    const answer: AnswerInput = async ({ method, params }, call) => {
      if (method === 'elicitation/create')
        return { ...(await elicit(params as never, call.call, call.signal)) }
      if (method === 'sampling/createMessage' && sample)
        return { ...(await sample(params as never, call.signal)) }
      if (method === 'roots/list' && roots.length) return { roots: roots.map((r) => ({ ...r })) }
      const why =
        method === 'sampling/createMessage'
          ? 'sampling, which is off for it (set sampling: true in its entry to let it use the model)'
          : method === 'roots/list'
            ? 'roots, and its entry lists none'
            : `${method}, which yoke does not answer`
      throw new Unanswerable(`MCP server "${server}" asked for ${why}`)
    }

    function taskCalls(session: Session): TaskCalls {
      let calls = tasks.get(session)
      if (!calls) {
        const info = { name: 'yoke', version }
        const only = () => (running.size === 1 ? [...running][0]!.call : undefined)
        calls = new TaskCalls(session, cfg, info, session.capabilities, elicit, only)
        tasks.set(session, calls)
      }
      return calls
    }

    async function callTool(
      tool: Tool,
      args: Record<string, unknown>,
      call: CallContext,
      spawnOnly: boolean,
      retried = false,
    ): Promise<ToolOutput> {
      const session = connected()
      if (!session) throw unavailable(supervisor.describe())
      const link = new SdkCall(call)
      let asTask = false
      running.add(call)
      try {
        // a 2026-07-28 server makes a call a task itself (the wire follows it); a 2025 one is asked to
        const caps = session.client.getServerCapabilities()
        asTask = session.era === 'legacy' && runsAsTask(tool, spawnOnly, caps, server)
        const result = asTask
          ? await taskCalls(session).call(tool, args, call, link)
          : await callOnce(session, cfg, tool, args, call, link, answer)
        return toOutput(result)
      } catch (err) {
        if (link.aborted) throw link.reason // the runtime already knows why (abort, timeout, unload)
        if (supervisor.state === 'held') throw unavailable(supervisor.describe())
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
          if (back) return callTool(tool, args, call, spawnOnly, true)
        }
        if (what.kind === 'unreachable') session.drop(what.why)
        throw what.error
      } finally {
        running.delete(call)
      }
    }

    /**
     * Why `name` is not there when it is one of this server's tools: in its last list, else by
     * its prefix `mcp__<server>__` (a server never listed yet; the longest prefix of the servers
     * the hub knows wins, so `mcp__a__b__x` is server "a__b"'s when there is one).
     */
    function whyAway(name: string): YokeError | undefined {
      const prefix = `mcp__${server}__`
      const mine =
        tools.listed(name) ||
        tools.leftOut(name) !== undefined ||
        (name.startsWith(prefix) &&
          !ctx.mcp
            .list()
            .some((s) => s.name.length > server.length && name.startsWith(`mcp__${s.name}__`)))
      if (!mine) return undefined
      // left out by its entry or for its schema: so whatever the connection does
      const left = tools.leftOut(name)
      if (left)
        return new YokeError('MCP_TOOL_LEFT_OUT', { server, name: left.tool, why: left.why })
      const state = supervisor.state
      if (state === 'held')
        return new YokeError('MCP_SERVER_HELD', { name: server, why: supervisor.heldFor })
      if (state === 'needs-login')
        return login ?? new LoginRequired(server, supervisor.lastError ?? 'it needs a sign-in')
      if (state === 'connected') return undefined // it has no such tool
      return unavailable(supervisor.describe())
    }

    function unavailable(state: string) {
      return new YokeError('SERVER_UNAVAILABLE', { server, state })
    }
  },
})
