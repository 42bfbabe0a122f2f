/**
 * The config of an mcp-server instance: where HTTP listens, the views (endpoints with their own
 * allow/deny globs), the bearer token or the OAuth issuer whose access tokens it takes, and the
 * limits on requests and sessions.
 */
import { isIPv4, isIPv6 } from 'node:net'
import { z } from 'zod'

export const VIEW_NAME = /^[A-Za-z0-9_-]{1,64}$/
export const DEFAULT_VIEW = 'default'

const globs = z.array(z.string().min(1))

/**
 * requests each caller (a token holder) may make per window in a view, counted across the replicas
 * when the composition has a store; past it, 429 with Retry-After
 */
const rateLimit = z
  .object({
    max: z.number().int().positive(),
    windowMs: z
      .number()
      .int()
      .positive()
      .max(24 * 60 * 60_000)
      .default(60_000),
  })
  .strict()

export const viewConfig = z
  .object({
    /** tool-name globs: only these tools (default all that the scope sees) */
    allow: globs.optional(),
    /** tool-name globs taken out, after allow */
    deny: globs.optional(),
    /** offer the skills as prompts and their files as resources */
    skills: z.boolean().default(true),
    /** offer Claude Code plugins' commands as prompts (`plugin:command`, one `arguments` argument) */
    commands: z.boolean().default(true),
    /**
     * deferred mode (the tool-search plugin's exposure): tools/list holds tool_search and the
     * direct tools, and what a session finds is listed for it from then on (list_changed says so)
     */
    toolSearch: z.boolean().default(false),
    /** this view's own rate limit, in place of the instance's `rateLimit` */
    rateLimit: rateLimit.optional(),
  })
  .strict()

const httpConfig = z
  .object({
    enabled: z.boolean().default(true),
    /** loopback by default: anything else exposes the tools to the network (the token still applies) */
    host: z.string().min(1).default('127.0.0.1'),
    /** 0: any free port (the service and `yoke serve` print the URL); a string from ${VAR} is read as a number */
    port: z.coerce.number().int().min(0).max(65535).default(0),
    /** the default view's path; other views are at `<path>/<view>` */
    path: z
      .string()
      .regex(/^\/[A-Za-z0-9_./-]*$/, 'a path like /mcp')
      .default('/mcp'),
    /**
     * the most sessions one client (one remote address) holds; at it, its new session takes the
     * place of its idlest one. Default: a quarter of maxSessions (64)
     */
    maxSessionsPerClient: z.number().int().positive().optional(),
    /**
     * how long `yoke serve` waits, on SIGTERM or Ctrl-C, for the calls in flight to finish while it
     * refuses new ones (503, Retry-After) and /readyz says 503; then it stops and says what it cut off
     */
    drainMs: z.number().int().min(0).max(600_000).default(10_000),
    /**
     * how long an event stream (a 2025 session's GET, subscriptions/listen, a call answered as a
     * stream) may stay quiet before a `: keep-alive` comment is written on it, so balancers and
     * proxies that cut idle connections keep it; 0: never
     */
    keepAliveMs: z.number().int().min(0).max(3_600_000).default(15_000),
    /**
     * the environment variable holding a secret every replica shares (32 characters or more): with
     * it, a 2025-era session id is sealed (AES-256-GCM) so any replica resumes the session; without
     * it, session ids are random and a session lives in the replica that opened it
     */
    sessionKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
      .default('YOKE_SESSION_KEY'),
  })
  .strict()

/** An http(s) URL whose host is this machine's loopback (plain http is allowed for it alone). */
export function isLoopbackUrl(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

/** 0.0.0.0 or :: (in any spelling): every address of this machine, none a client could name. */
export function isWildcard(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '')
  if (isIPv4(bare)) return bare === '0.0.0.0'
  return isIPv6(bare) && new URL(`http://[${bare}]`).hostname === '[::]'
}

/** https, or http to a loopback host (a development authorization server on this machine). */
const secureUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .refine((value) => {
    const url = new URL(value)
    return url.protocol === 'https:' || isLoopbackUrl(url)
  }, 'must be https (plain http only for a loopback host: 127.0.0.1, ::1, localhost)')
  .refine((value) => !new URL(value).hash && !new URL(value).search, 'must have no ? or #')

/** RFC 6749's scope-token: printable ASCII without space, `"` and `\`. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+$/

export const oauthConfig = z
  .object({
    /** the authorization server's issuer identifier: its tokens' `iss`, where its metadata is found */
    issuer: secureUrl,
    /** the issuer's JWKS; default: its metadata's jwks_uri */
    jwksUri: secureUrl.optional(),
    /**
     * the default view's public URL, when clients reach the gateway through a proxy (views are at
     * `<resource>/<view>`); default: the URL it listens on. Each view is a resource of its own
     */
    resource: secureUrl.optional(),
    /**
     * the `aud` tokens must carry, when the authorization server cannot put the resource URL there
     * (one API identifier for every view: the scopes then decide the view). Default: the view's resource
     */
    audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    /** scope → the view(s) a token with it may use; without it, a valid token may use every view */
    scopes: z
      .record(
        z.string().regex(SCOPE, 'a scope is printable ASCII without spaces, quotes or backslashes'),
        z.union([z.string().regex(VIEW_NAME), z.array(z.string().regex(VIEW_NAME)).min(1)]),
      )
      .optional(),
    /** how far a token's exp / nbf / iat may be off this machine's clock */
    clockToleranceSec: z.number().int().nonnegative().max(300).default(30),
    /**
     * RFC 9068 to the letter: a token's `typ` must be at+jwt. Default: a plain JWT type, or none,
     * is taken too (issuers that predate RFC 9068 send them; `aud` still keeps ID tokens out)
     */
    strictType: z.boolean().default(false),
  })
  .strict()

export const mcpServerConfig = z
  .object({
    /** Streamable HTTP (stateful sessions), or false for stdio only (`yoke serve --stdio`) */
    http: z.union([z.literal(false), httpConfig]).prefault({}),
    /** named endpoints; `default` (at `path`) serves everything the scope sees unless configured here */
    views: z
      .record(
        z.string().regex(VIEW_NAME, 'view names are 1-64 characters of A-Z a-z 0-9 _ -'),
        viewConfig,
      )
      .default({}),
    /** the bearer token; default: read from tokenEnv, else from (or generated into) $YOKE_HOME/mcp-token */
    token: z.string().min(16, 'a token needs at least 16 characters').optional(),
    /** the environment variable that holds the token */
    tokenEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not a variable name')
      .optional(),
    /**
     * require OAuth access tokens (JWTs) from this issuer; with it, the static token is accepted
     * only when token or tokenEnv is configured too
     */
    oauth: oauthConfig.optional(),
    /** requests with a bigger body are answered 413 before they are read */
    maxBodyBytes: z
      .number()
      .int()
      .positive()
      .default(4 * 1024 * 1024),
    /** a session with no request and no open stream for this long is closed */
    idleSessionMs: z
      .number()
      .int()
      .positive()
      .max(2 ** 31 - 1)
      .default(30 * 60_000),
    /**
     * the most sessions at once; past it, a new session takes the place of the idlest session of
     * the client that holds the most (503 only when every session has a request in flight)
     */
    maxSessions: z.number().int().positive().max(100_000).default(256),
    /** the most OAuth token holders per view whose stateless requests keep a scope of their own */
    maxHolders: z.number().int().positive().max(100_000).default(256),
    /** the runtime scope whose tools are served (default the global one) */
    scope: z.string().min(1).default('global'),
    /** how long tool changes settle before clients are told (tools/list_changed) */
    changeDebounceMs: z.number().int().nonnegative().default(100),
    /**
     * how long a 2026-07-28 call over HTTP (and a task) waits for the client's answer to its
     * question (input_required); then the call ends, and what it held goes
     */
    answerWaitMs: z
      .number()
      .int()
      .positive()
      .max(60 * 60_000)
      .default(2 * 60_000),
    /** the most 2026-07-28 calls waiting for an answer (input_required) at once; past it, a call is refused */
    maxWaitingCalls: z.number().int().positive().max(100_000).default(64),
    /** the same, in one view */
    maxWaitingCallsPerView: z.number().int().positive().max(100_000).default(16),
    /** the most MCP tasks running at once; past it, a call that would be a task is refused */
    maxTasks: z.number().int().positive().max(100_000).default(128),
    /** the same, in one view */
    maxTasksPerView: z.number().int().positive().max(100_000).default(32),
    /**
     * requests each caller (a token holder) may make per window in each view, counted across the
     * replicas when the composition has a store; past it, 429 with Retry-After. Default: none
     */
    rateLimit: rateLimit.optional(),
  })
  .strict()
  .superRefine((cfg, issues) => {
    // a resource URL on a wildcard address is one no client reaches, and no token is issued for
    if (
      cfg.oauth &&
      !cfg.oauth.resource &&
      cfg.http &&
      cfg.http.enabled &&
      isWildcard(cfg.http.host)
    )
      issues.addIssue({
        code: 'custom',
        path: ['oauth', 'resource'],
        message: `http.host ${cfg.http.host} is every address of this machine, and a resource URL on it is one no client can use: set oauth.resource to the URL clients reach the gateway at (e.g. https://mcp.example.com/mcp), or listen on the one address clients use`,
      })
    for (const [scope, target] of Object.entries(cfg.oauth?.scopes ?? {}))
      for (const view of typeof target === 'string' ? [target] : target)
        if (view !== DEFAULT_VIEW && !(view in cfg.views))
          issues.addIssue({
            code: 'custom',
            path: ['oauth', 'scopes', scope],
            message: `no view named "${view}" (views: ${[DEFAULT_VIEW, ...Object.keys(cfg.views)].join(', ')})`,
          })
  })

export type McpServerConfig = z.output<typeof mcpServerConfig>
export type ViewConfig = z.output<typeof viewConfig>
export type OAuthConfig = z.output<typeof oauthConfig>
export type HttpConfig = Exclude<McpServerConfig['http'], false>
