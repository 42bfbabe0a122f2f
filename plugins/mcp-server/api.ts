/**
 * The public face of mcp-server: the `mcpServer` service (where the endpoint listens, its views,
 * where the token is, stdio connections for `yoke serve --stdio`, either protocol era, and a hook
 * on every tools/list answer), its control (`mcp-server/summary`: the endpoint on the dev screen
 * and in `yoke doctor`) and the instance's config schema.
 */
import type { Readable, Writable } from 'node:stream'
import type { RegisteredTool, SyncHook } from 'yoke'
import type { SummarySection } from 'yoke/cli'

export { mcpServerConfig, type McpServerConfig } from './config.ts'

/** Which answer a `listed` tap hears of: the view, its scope, and the connection it went to. */
export interface McpListing {
  view: string
  /** the view's runtime scope (`mcp-server:<instance>:<view>`), whose tools were listed */
  scope: string
  /**
   * `mcp:<view>:<connection>`, as each call's caller begins (a 2026-07-28 request: `…:http`, or
   * `…:holder-<hash>` with an OAuth token)
   */
  connection: string
  era: 'legacy' | 'modern'
}

/** The `mcpServer` service: where the endpoint is, for `yoke serve`, `yoke dev` and embedders. */
export interface McpServerApi {
  readonly hooks: {
    /**
     * Each tools/list answer (both eras, HTTP and stdio), with the tools it sent: a deferred view's
     * are what tool-search offers that connection (the direct tools, what it found, tool_search).
     * The list is cached per view, so no runtime hook runs for it; this one does, every time.
     */
    listed: SyncHook<[readonly RegisteredTool[], McpListing]>
  }
  /** the default view's URL while HTTP listens (`http://127.0.0.1:PORT/mcp`) */
  readonly url?: string
  /** the view names, `default` first */
  readonly views: string[]
  /** a view's URL (undefined without HTTP); MCP_VIEW_UNKNOWN for a view that does not exist */
  urlOf(view: string): string | undefined
  /**
   * where the bearer token HTTP clients send is (`in ~/.yoke/mcp-token`, `from $VAR`), or what it
   * must be (`an OAuth access token from ISSUER`); never the token itself
   */
  readonly tokenHint?: string
  /** with `oauth`: whose access tokens it takes, and each view's resource and metadata URLs */
  readonly oauth?: {
    readonly issuer: string
    /** the view's resource identifier: the `aud` its tokens carry (unless oauth.audience says otherwise) */
    resourceOf(view: string): string | undefined
    /** where the view's protected resource metadata is (RFC 9728) */
    metadataUrlOf(view: string): string | undefined
  }
  /** the sessions open now: 2025-era HTTP sessions and stdio pipes (2026-07-28 requests hold none) */
  readonly sessions: number
  /** this replica's id (`YOKE_REPLICA_ID`, else host-pid): in /healthz, /readyz and each answer's `yoke-replica` header */
  readonly replica: string
  /**
   * Drains the HTTP endpoint: /readyz answers 503 and new requests get 503 with Retry-After from
   * now on; resolves when the requests in flight finished, or after `ms` (default: http.drainMs).
   * The MCP tasks it runs get what is left of the bound to end (their results stay readable on the
   * other replicas when a store is shared); those still running then are cancelled, saying so.
   */
  drain(ms?: number): Promise<{
    finished: number
    cut: number
    ms: number
    tasks: { finished: number; cut: number }
  }>
  /**
   * Serves one connection over a stream pair (stdin and stdout), in the era its client opens with,
   * until the input ends or the session closes.
   */
  serveStdio(input: Readable, output: Writable, options?: { view?: string }): Promise<void>
}

declare module 'yoke' {
  interface Services {
    mcpServer: McpServerApi
  }
  interface Controls {
    /** the section `mcp endpoint` (its URL and what clients send); none while HTTP does not listen */
    'mcp-server/summary': {
      request: Record<string, never>
      answer: (SummarySection & { title: string }) | undefined
    }
  }
}
