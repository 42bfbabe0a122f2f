/**
 * The public face of the mcp plugin: the `mcp` service, the hub every mcp-client instance joins
 * (server names stay unique; `yoke mcp list` and `yoke mcp restart` read and act through it), and
 * what one server looks like to it.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Disposer, SyncHook } from 'yoke'

export interface McpServerStatus {
  name: string
  instance: string
  transport: 'stdio' | 'http' | 'sse'
  /** `failed`: an instance that never joined (shown by yoke mcp list) */
  state: 'connecting' | 'connected' | 'reconnecting' | 'gave-up' | 'closed' | 'failed'
  /** "reconnecting, attempt 3 of 10 (last error: …)" */
  detail: string
  attempt: number
  maxAttempts: number
  lastError?: string
  tools: number
  /** what the last tool sync skipped or refused */
  problems: string[]
  pid?: number
  /** the Streamable HTTP session */
  sessionId?: string
  /** the server's own name and version, from the handshake */
  server?: { name: string; version: string }
}

/** What an mcp-client instance registers. */
export interface McpServerHandle {
  readonly name: string
  readonly instance: string
  status(): McpServerStatus
  /** the SDK client while connected */
  client(): Client | undefined
  /** per-request timeout for the hub's resource and prompt requests */
  readonly timeoutMs: number
  restart(): void
}

export interface McpHub {
  readonly hooks: { change: SyncHook<[McpServerStatus]> }
  /** Joins a server; a name already in use is MCP_NAME_CONFLICT naming both instances. */
  add(handle: McpServerHandle): Disposer
  /** A server's state changed. */
  changed(name: string): void
  list(): McpServerStatus[]
  get(name: string): McpServerHandle | undefined
  /** false when no server has that name */
  restart(name: string): boolean
}

declare module 'yoke' {
  interface Services {
    mcp: McpHub
  }
}
