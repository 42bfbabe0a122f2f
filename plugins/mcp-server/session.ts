/**
 * One connection with a life of its own: a 2025-era Streamable HTTP session, or a stdio pipe
 * (either era: `serveStdio` pins one Server to the pipe once the opening exchange says which).
 * It has a scope of its own under its view's, so "allow for this session" approvals stay with
 * it, and it tells its client when tools, prompts or resources change: the 2025 era by
 * notification (once the client said initialized), 2026-07-28 on the pipe's `subscriptions/listen`
 * streams (serveStdio routes the pinned Server's notices there).
 */
import type { Server } from '@modelcontextprotocol/server'
import type { ScopeHandle } from 'yoke'
import { APPROVAL_MS } from './approval.ts'
import { buildServer, type Era, type GatewayHost } from './server.ts'
import type { View } from './views.ts'

/** The gateway a session serves for: it builds the session's Servers, and hears when it closes. */
export interface SessionHost extends GatewayHost {
  closed(session: McpSession): void
}

export type List = 'tools' | 'prompts' | 'resources'

export class McpSession {
  readonly scope: ScopeHandle
  /** settles once the session has closed (the client went, it was idle, or the server stops) */
  readonly ended: Promise<void>
  /** a Server's own close ends the session (HTTP: the transport is the session) */
  closeWithServer = false
  /** runs once when the session closes (stdio: the pipe's serving handle) */
  onClose?: () => Promise<void> | void
  #end!: () => void
  #closed = false
  /** the Servers serving it, and whether each may be told of changes yet */
  readonly #servers = new Map<Server, { ready: boolean }>()

  constructor(
    readonly id: string,
    readonly view: View,
    private readonly host: SessionHost,
  ) {
    this.ended = new Promise((resolve) => (this.#end = resolve))
    this.scope = view.sessionScope(id)
  }

  get closed(): boolean {
    return this.#closed
  }

  /** A Server for this session, in `era` (the factory of serveStdio and of the HTTP legacy leg). */
  serverFor(era: Era): Server {
    const server = buildServer(this.host, {
      view: this.view,
      era,
      scope: this.scope,
      callerBase: `mcp:${this.view.name}:${this.id}`,
      session: true,
      answerMs: APPROVAL_MS,
    })
    const state = { ready: era === 'modern' }
    this.#servers.set(server, state)
    server.oninitialized = () => (state.ready = true)
    server.onclose = () => {
      this.#servers.delete(server)
      if (this.closeWithServer) void this.close()
    }
    server.onerror = (err) => this.host.report(`MCP session ${this.id}`, err)
    return server
  }

  notify(list: List): void {
    if (this.#closed) return
    for (const [server, { ready }] of this.#servers) {
      if (!ready) continue
      const sent =
        list === 'tools'
          ? server.sendToolListChanged()
          : list === 'prompts'
            ? server.sendPromptListChanged()
            : server.sendResourceListChanged()
      sent.catch(() => {}) // a Server whose connection has gone
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.host.closed(this)
    try {
      await this.onClose?.()
      await Promise.all([...this.#servers.keys()].map((s) => s.close()))
      await this.scope.dispose()
    } catch {
      // closing is best effort: the session is gone either way
    } finally {
      this.#servers.clear()
      this.#end()
    }
  }
}
