/**
 * mcp-server: yoke as an MCP server and gateway. The tools a runtime scope sees (native, plugin
 * executables, other MCP servers' tools through mcp-client) are served over Streamable HTTP
 * (stateful sessions, bearer token, loopback by default) and over stdio (`yoke serve --stdio`), in
 * named views with their own allow/deny globs. Every call goes through the runtime's pipeline, so
 * policy, approvals (as MCP elicitations), hooks and limits apply; cancellation and progress pass
 * both ways; tool changes (hot reload) reach connected clients as tools/list_changed. Skills are
 * offered as prompts, and their files as resources.
 */
import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { definePlugin, YokeError, type Disposer } from 'yoke'
import { color } from 'yoke/cli'
import type { SkillsApi } from '../skills/api.ts'
import { approvalBridge } from './approval.ts'
import { DEFAULT_VIEW, mcpServerConfig, viewConfig } from './config.ts'
import { HttpEndpoint, isLoopback } from './http.ts'
import { McpSession, type SessionHost } from './session.ts'
import { resolveToken } from './token.ts'
import { View } from './views.ts'
import './errors.ts'

export { mcpServerConfig, type McpServerConfig } from './config.ts'
export type * from './api.ts'

const { version } = createRequire(import.meta.url)('yoke/package.json') as { version: string }

export default definePlugin({
  name: 'mcp-server',
  // its HTTP endpoint holds a port: a reload ends the old version before the new one listens
  exclusive: true,
  inject: ['runtime', 'approval', 'project'],
  provides: ['mcpServer'],
  config: mcpServerConfig,
  async apply(ctx, cfg) {
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

    const sessions = new Map<string, McpSession>() // by caller
    ctx.approval.register(approvalBridge((caller) => sessions.get(caller)))
    const host: SessionHost = {
      version,
      skills: () => ctx.get('skills'),
      closed: (session) => sessions.delete(session.caller),
      warn: (message) => ctx.logger.debug(message), // a client's bad input is its problem, not the log's
    }
    const open = (view: View, id: string) => {
      const session = new McpSession(id, view, host)
      sessions.set(session.caller, session)
      return session
    }
    ctx.effect('mcp sessions', () =>
      Promise.all([...sessions.values()].map((s) => s.close())).then(() => {}),
    )

    // tool changes: each view's list is dropped at once; clients hear once the changes settle
    let timer: NodeJS.Timeout | undefined
    ctx.tap(ctx.runtime.hooks.change, 'mcp-server', () => {
      for (const view of views.values()) view.invalidate()
      timer ??= setTimeout(announce, cfg.changeDebounceMs)
    })
    ctx.effect('tools/list_changed timer', () => clearTimeout(timer))
    function announce() {
      timer = undefined
      if (ctx.signal.aborted) return
      followSkills()
      for (const view of views.values()) {
        if (!view.refresh()) continue
        for (const session of sessions.values()) if (session.view === view) session.notifyTools()
      }
    }

    // skills: a skills instance that (re)starts registers its tools, so a tool change is the moment to look again
    let skillsSeen: SkillsApi | undefined
    let untapSkills: Disposer | undefined
    const notifySkills = () => sessions.forEach((s) => s.notifySkills())
    function followSkills() {
      const skills = ctx.get('skills')
      if (skills === skillsSeen) return
      void untapSkills?.()
      const replaced = skillsSeen !== undefined || skills !== undefined
      skillsSeen = skills
      untapSkills = skills && ctx.tap(skills.hooks.change, 'mcp-server', notifySkills)
      if (replaced) notifySkills()
    }
    followSkills()

    let endpoint: HttpEndpoint | undefined
    let tokenHint: string | undefined
    // the endpoint belongs to what runs until stopped (yoke dev, yoke serve, an application):
    // a one-shot command would take the port a running `yoke dev` holds
    if (cfg.http && cfg.http.enabled && ctx.runMode === 'serve') {
      const token = resolveToken(cfg, ctx.project.home)
      tokenHint = token.hint
      if (token.generated)
        ctx.logger.info(
          `generated the bearer token for MCP clients, kept in ${token.generated.file} (shown once): ${token.generated.token}`,
        )
      const http = (endpoint = new HttpEndpoint(cfg.http, {
        views,
        token,
        maxBodyBytes: cfg.maxBodyBytes,
        idleSessionMs: cfg.idleSessionMs,
        maxSessions: cfg.maxSessions,
        open,
        debug: (message) => ctx.logger.debug(message),
      }))
      ctx.effect('mcp http endpoint', () => http.close())
      await http.listen()
      if (!isLoopback(cfg.http.host))
        ctx.logger.warn(
          `the MCP endpoint listens on ${cfg.http.host}: other machines can reach it (the bearer token still applies)`,
        )
      ctx.logger.debug(
        `MCP endpoint ${http.urlOf(DEFAULT_VIEW)} (views: ${[...views.keys()].join(', ')})`,
      )
    }

    ctx.control('summary:mcp endpoint', () => {
      const url = endpoint?.urlOf(DEFAULT_VIEW)
      if (!url) return undefined
      return { lines: [`${url}${tokenHint ? ` ${color.dim(`· token ${tokenHint}`)}` : ''}`] }
    })

    let stdio = 0
    ctx.provide('mcpServer', {
      get url() {
        return endpoint?.urlOf(DEFAULT_VIEW)
      },
      views: [...views.keys()],
      urlOf: (name) => endpoint?.urlOf(viewOf(name).name),
      tokenHint,
      get sessions() {
        return sessions.size
      },
      async serveStdio(input, output, options = {}) {
        // unique across reloads too: "allow for this session" grants are kept by scope name
        const session = open(
          viewOf(options.view ?? DEFAULT_VIEW),
          `stdio-${++stdio}-${randomUUID().slice(0, 8)}`,
        )
        const end = () => void session.close()
        input.once('end', end)
        input.once('close', end)
        try {
          await session.connect(new StdioServerTransport(input, output))
          await session.ended
        } finally {
          input.off('end', end)
          input.off('close', end)
        }
      },
    })
  },
})

function fail(err: Error): never {
  throw err
}
