/**
 * mcp-client: one MCP server (stdio, Streamable HTTP or SSE) whose tools run through the runtime's
 * pipeline like any other, as `mcp__<server>__<tool>`. A supervisor keeps it connected (backoff,
 * an outage budget, then giving up until restarted); during an outage its calls end at once with
 * SERVER_UNAVAILABLE saying what is going on. Every instance joins the `mcp` registry.
 */
import { createRequire } from 'node:module'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import { definePlugin, YokeError, type CallContext, type ToolOutput } from 'yoke'
import type { McpServerHandle } from '../mcp/api.ts'
import {
  mcpClientConfig,
  rootsOf,
  totalCallMs,
  transportOf,
  type McpClientConfig,
} from './config.ts'
import { sessionExpired } from './http.ts'
import { answerSampling } from './sampling.ts'
import { Session } from './session.ts'
import { Supervisor } from './supervisor.ts'
import { SdkCall } from './call.ts'
import { ServerTools, toOutput } from './tools.ts'
import './errors.ts'

export { mcpClientConfig, publicToolName, type McpClientConfig } from './config.ts'
export { toOutput } from './tools.ts'

const { version } = createRequire(import.meta.url)('yoke/package.json') as { version: string }

export default definePlugin({
  name: 'mcp-client',
  inject: ['runtime', 'mcp', 'project'],
  config: mcpClientConfig,
  async apply(ctx, cfg) {
    const server = cfg.serverName
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
    const tools = new ServerTools(
      cfg,
      ctx.runtime,
      (raw, args, call) => callTool(raw, args, call),
      (m) => ctx.logger.warn(m),
      ctx.signal,
    )
    const supervisor: Supervisor = new Supervisor(cfg.reconnect, {
      open: (signal) =>
        Session.open(
          cfg,
          {
            projectDir: ctx.project.dir,
            roots: rootsOf(cfg, ctx.project.dir),
            version,
            onToolsChanged: resync,
            onError: (err) => ctx.logger.debug(`MCP server "${server}": ${err.message}`),
            sample,
          },
          signal,
        ),
      ready: (session) => tools.sync(session.client),
      async gaveUp() {
        ctx.logger.error(
          `MCP server "${server}" ${supervisor.describe()}; its tools are unregistered`,
        )
        await tools.clear()
      },
      changed: (state) => {
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
    const handle: McpServerHandle = {
      name: server,
      instance: ctx.key,
      timeoutMs: cfg.callMs,
      client: () => (supervisor.state === 'connected' ? supervisor.session?.client : undefined),
      restart: () => supervisor.restart(),
      status: () => {
        const session = supervisor.session
        const info =
          supervisor.state === 'connected' ? session?.client.getServerVersion() : undefined
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
          server: info && { name: info.name, version: info.version },
        }
      },
    }
    ctx.mcp.add(handle)
    ctx.effect(`mcp ${server} connection`, () => supervisor.close())
    // an instance removed while its server starts does not wait for the attempt to end
    const failed = await Promise.race([
      supervisor.start(),
      new Promise<undefined>((resolve) =>
        ctx.signal.addEventListener('abort', () => resolve(undefined), { once: true }),
      ),
    ])
    if (failed && cfg.failOnStartupError)
      throw new YokeError('MCP_CONNECT_FAILED', { server, reason: failed.message })
    if (failed && !ctx.signal.aborted)
      ctx.logger.warn(
        `MCP server "${server}" could not start (${failed.message}); ${supervisor.describe()}`,
      )

    function resync() {
      const session = supervisor.session
      if (!session || session.isLost) return // the sync of the next connection will see the new list
      // queued behind a sync under way (the one on connect, too)
      tools.sync(session.client).catch((err) => {
        if (!session.isLost)
          ctx.logger.warn(
            `MCP server "${server}": re-reading its tools failed (${(err as Error).message}); the previous tools stay`,
          )
      })
    }

    async function callTool(
      raw: string,
      args: Record<string, unknown>,
      call: CallContext,
      retried = false,
    ): Promise<ToolOutput> {
      const session = supervisor.session
      if (!session || supervisor.state !== 'connected')
        throw unavailable(cfg, supervisor.describe())
      const link = new SdkCall(call)
      try {
        const result = await session.client.callTool({ name: raw, arguments: args }, undefined, {
          timeout: cfg.callMs,
          resetTimeoutOnProgress: true,
          maxTotalTimeout: totalCallMs(cfg),
          signal: link as unknown as AbortSignal,
          onprogress: link.onprogress,
        })
        return toOutput(result)
      } catch (err) {
        if (link.aborted) throw link.reason // the runtime already knows why (abort, timeout, unload)
        if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
          // callMs passed without progress, or maxCallMs in all
          const ms = /total/i.test(err.message) ? totalCallMs(cfg) : cfg.callMs
          throw new YokeError('TIMEOUT', { name: call.call.name, ms }, { cause: err })
        }
        if (sessionExpired(err) && !retried) {
          // the server refused this very call for an unknown session (it restarted): it never ran it,
          // so send it again on a new session. A call merely in flight when that happened is not resent.
          session.drop('the server forgot the session', true)
          const back = await Promise.race([
            supervisor.connected(cfg.startupMs, session),
            new Promise<false>((resolve) => call.onEnd(() => resolve(false))),
          ])
          if (link.aborted) throw link.reason // the caller gave up meanwhile: nothing is sent again
          if (back) return callTool(raw, args, call, true)
        }
        if (
          session.isLost ||
          (err instanceof McpError && err.code === ErrorCode.ConnectionClosed)
        ) {
          throw unavailable(
            cfg,
            `the connection closed during the call (${session.why ?? 'connection closed'}); reconnecting`,
          )
        }
        // a JSON-RPC error, or a result the SDK refused (a zod error), is the server's answer; anything
        // else (fetch failed, HTTP 5xx) means it could not be reached
        if (!(err instanceof McpError) && !Array.isArray((err as { issues?: unknown })?.issues)) {
          session.drop(`a request failed (${(err as Error)?.message ?? err})`)
          throw unavailable(
            cfg,
            `the request failed (${(err as Error)?.message ?? err}); reconnecting`,
          )
        }
        throw new Error(`MCP server "${server}" answered: ${(err as Error).message}`, {
          cause: err,
        })
      }
    }
  },
})

function unavailable(cfg: McpClientConfig, state: string) {
  return new YokeError('SERVER_UNAVAILABLE', { server: cfg.serverName, state })
}
