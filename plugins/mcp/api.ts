/**
 * The public face of the mcp plugin: the `mcp` service, the hub every mcp-client instance joins
 * (server names stay unique; `yoke mcp list` and `yoke mcp restart` read and act through it), and
 * what one server looks like to it.
 */
import type { Client } from '@modelcontextprotocol/client'
import type { Disposer, QuestionAnswer, SyncHook, ToolCall } from 'yoke'

export interface McpServerStatus {
  name: string
  instance: string
  transport: 'stdio' | 'http' | 'sse'
  /** `failed`: an instance that never joined (shown by yoke mcp list); `waiting`: one that has not
   *  started yet, for `yoke trust`, a key or a service (detail says which, and what to do);
   *  `needs-login`: an OAuth server waiting for `yoke mcp login`; `held`: disconnected on purpose
   *  while a hold stands */
  state:
    | 'waiting'
    | 'connecting'
    | 'connected'
    | 'reconnecting'
    | 'needs-login'
    | 'gave-up'
    | 'held'
    | 'closed'
    | 'failed'
  /** "reconnecting, attempt 3 of 10 (last error: …)"; "held: <why>; <why>" */
  detail: string
  attempt: number
  maxAttempts: number
  lastError?: string
  tools: number
  /** the skills it offers through the MCP Skills extension, in the skills service (absent: none) */
  skills?: number
  /** what the last tool sync skipped or refused */
  problems: string[]
  pid?: number
  /** the Streamable HTTP session */
  sessionId?: string
  /** the server's own name and version, from the handshake (legacy) or server/discover (modern);
   *  while held, those of the last connection */
  server?: { name: string; version: string }
  /** what the connection negotiated: the 2025 era (initialize, sessions) or 2026-07-28 and later;
   *  while held, the last connection's */
  protocol?: { era: 'legacy' | 'modern'; version: string }
  /** while held: why, one entry per hold standing */
  holds?: string[]
}

/** What an mcp-client instance registers. */
export interface McpServerHandle {
  readonly name: string
  readonly instance: string
  status(): McpServerStatus
  /** the SDK (v2) client while connected */
  client(): Client | undefined
  /** per-request timeout for the hub's resource and prompt requests */
  readonly timeoutMs: number
  /** reconnects; does nothing while held */
  restart(): void
  /**
   * Disconnects the server until every hold is released: its process ends (an HTTP session is
   * ended), its tools go, no reconnect runs; state `held`, detail naming the whys. Releasing the
   * last hold connects it again as at start. The disposer (the release) is idempotent.
   */
  hold(why: string): Disposer
  /** the last lines (up to 40) the server's process wrote to stderr; none over HTTP */
  stderr?(): string[]
  /** the last exchanges with the server, each request paired with its answer, secrets masked */
  transcript?(): McpTranscriptEntry[]
  /** tells `listener` of each message recorded (to push a view while someone looks) */
  onTranscript?(listener: () => void): () => void
}

/** One exchange of a server's protocol transcript (mcp-client keeps them; masked when read). */
export interface McpTranscriptEntry {
  /** the JSON-RPC id (none: a notification) */
  id?: string | number
  method: string
  /** who sent the request or notification */
  from: 'yoke' | 'server'
  /** when it was sent or received (epoch ms) */
  at: number
  /** from the request to its answer */
  durationMs?: number
  /** the request's or notification's params (a line that is not JSON-RPC: that line) */
  request?: unknown
  response?: unknown
  error?: unknown
  /** its sender cancelled it before any answer came */
  cancelled?: true
  /** something in it was cut */
  truncated?: true
}

/** `mcp/transcript`'s answer: the server's exchanges (absent: no such server, or it keeps none). */
export interface McpTranscriptAnswer {
  entries?: McpTranscriptEntry[]
  /** false: the server is there but keeps no transcript (`transcript: false`) */
  offered?: boolean
  servers: string[]
}

export type McpList = 'tools' | 'resources' | 'prompts'

/** The SDK's result-schema lookup once per era and method on a v2 Client or Server (sdk.ts). */
export { probeResultsOnce } from './sdk.ts'

/** The tools the hub registers to reach every connected server's resources and prompts. */
export const HUB_TOOLS = [
  'list_mcp_resources',
  'list_mcp_resource_templates',
  'read_mcp_resource',
  'list_mcp_prompts',
  'get_mcp_prompt',
] as const

/**
 * An upstream server's question to the person or agent behind a call (MCP elicitation: the 2025
 * era's `elicitation/create`, or an `input_required` result on 2026-07-28). It is not a tool
 * approval: the answer is the server's to act on.
 */
export interface McpQuestion {
  /** the server that asks */
  server: string
  /** the call it asks about; absent when that cannot be told (a 2025-era server asking while several of its calls run) */
  call?: ToolCall
  /** `form`: fill in `requestedSchema`; `url`: open `url` (sign in, pay, consent) and say when done */
  mode: 'form' | 'url'
  message: string
  /** a flat object schema of primitive fields (form mode) */
  requestedSchema?: Record<string, unknown>
  url?: string
  elicitationId?: string
  /** aborted when the call ends or the question times out */
  signal: AbortSignal
}

/** `accept` with content, `decline` (a refusal), `cancel` (dismissed, or nobody could answer) */
export type McpAnswer = QuestionAnswer

/** Who answers upstream questions: the terminal, a gateway's MCP client, an agent. */
export interface McpAnswerer {
  name: string
  /** which questions it answers; one without it answers any question no specific answerer handles */
  handles?(question: McpQuestion): boolean
  ask(question: McpQuestion): Promise<McpAnswer>
}

export interface McpHub {
  readonly hooks: {
    /** a server's state changed (connected, reconnecting, …) */
    change: SyncHook<[McpServerStatus]>
    /** a server announced that one of its lists changed (or it reconnected with a new one) */
    listChanged: SyncHook<[name: string, list: McpList]>
  }
  /** Joins a server; a name already in use is MCP_NAME_CONFLICT naming both instances. */
  add(handle: McpServerHandle): Disposer
  /** A server's state changed. */
  changed(name: string): void
  /** A server's list changed: calls hooks.listChanged (a throwing tap is logged, not thrown). */
  listChanged(name: string, list: McpList): void
  list(): McpServerStatus[]
  get(name: string): McpServerHandle | undefined
  /** false when no server has that name; a held server is not reconnected (check its status) */
  restart(name: string): boolean
  /**
   * Holds the server of that name as it is now (McpServerHandle.hold): undefined when there is
   * none. Through a plugin's own `mcp` service the hold is released with that plugin, too.
   * hooks.change tells followers when it goes `held` and when it comes back.
   */
  hold(name: string, why: string): Disposer | undefined
  /**
   * Registers an answerer of upstream questions; the newest that `handles` a question is asked,
   * else the newest without `handles`. Returns its removal.
   */
  answerer(answerer: McpAnswerer): Disposer
  /**
   * Puts a server's question to an answerer. Never throws: with no answerer, a failing one, or
   * the question's signal aborting first, the answer is `cancel` and `why` says what happened.
   */
  ask(question: McpQuestion): Promise<McpAnswer & { by?: string; why?: string }>
}

/** `mcp/restart`'s answer: restarted, or why not (held: the holds' whys; else the names there are). */
export interface McpRestartAnswer {
  restarted: boolean
  held?: string[]
  servers: string[]
}

declare module 'yoke' {
  interface Services {
    mcp: McpHub
  }
  interface Controls {
    /** every MCP server, with those that never joined the hub (failed, waiting): `yoke mcp list` */
    'mcp/list': { request: Record<string, never>; answer: McpServerStatus[] }
    /** reconnects one server (not a held one): `yoke mcp restart NAME` */
    'mcp/restart': { request: { name: string }; answer: McpRestartAnswer }
    /** one server's protocol transcript, masked: `yoke mcp transcript NAME` */
    'mcp/transcript': { request: { name: string }; answer: McpTranscriptAnswer }
  }
}
