/**
 * The config of an mcp-server instance: where HTTP listens, the views (endpoints with their own
 * allow/deny globs), the bearer token, and the limits on requests and sessions.
 */
import { z } from 'zod'

export const VIEW_NAME = /^[A-Za-z0-9_-]{1,64}$/
export const DEFAULT_VIEW = 'default'

const globs = z.array(z.string().min(1))

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
  })
  .strict()

export type McpServerConfig = z.output<typeof mcpServerConfig>
export type ViewConfig = z.output<typeof viewConfig>
export type HttpConfig = Exclude<McpServerConfig['http'], false>
