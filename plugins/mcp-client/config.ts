/**
 * The config of one mcp-client instance (one MCP server), and the names and environment rules
 * that every server shares.
 */
import { createHash } from 'node:crypto'
import { homedir } from 'node:os'
import { basename, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { messageOf } from 'yoke'
import { z } from 'zod'
import { BLOCKED_ENV } from '../process/api.ts'
import { insecureOAuthUrl } from './addresses.ts'
import type { OAuthSettings } from './oauth/client.ts'

export { BLOCKED_ENV }

/** the names `yoke mcp import` gives foreign servers it renames: 1-32 characters, room for tool names */
export const SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/

/**
 * What a serverName may be: 1-64 characters (a tool name's length) of A-Z a-z 0-9 _ -. A plugin's
 * server has the name Claude Code gives it, `plugin_<plugin>_<server>`, however long; a tool whose
 * `mcp__<server>__<tool>` passes 64 is cut (publicToolName).
 */
export const SERVER_NAME_RULE = /^[A-Za-z0-9_-]{1,64}$/

/** the values of `protocol`: negotiate, the 2025 era only, or the 2026-07-28 revision only */
export const PROTOCOLS = ['auto', 'legacy', '2026-07-28'] as const
export type ProtocolChoice = (typeof PROTOCOLS)[number]

/** The longest delay a Node timer takes: a longer one fires after 1 ms (TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2 ** 31 - 1

const timerMs = () =>
  z
    .number()
    .int()
    .positive()
    .max(MAX_TIMER_MS, `at most ${MAX_TIMER_MS} ms (2^31-1, the longest delay a timer takes)`)
const ms = (fallback: number) => timerMs().default(fallback)

export const mcpClientConfig = z
  .object({
    /** `^[A-Za-z0-9_-]{1,64}$`: the middle of every tool name, `mcp__<serverName>__<tool>` */
    serverName: z
      .string()
      .regex(SERVER_NAME_RULE, 'serverName must be 1-64 characters of A-Z a-z 0-9 _ -'),
    /** default: stdio with `command`, else Streamable HTTP falling back to SSE */
    transport: z.enum(['stdio', 'http', 'sse']).optional(),
    /**
     * the MCP revision to speak: `auto` probes `server/discover` (2026-07-28) and falls back to
     * the 2025 handshake; `legacy` is the 2025 handshake only; `2026-07-28` that revision or nothing
     */
    protocol: z.enum(PROTOCOLS).default('auto'),
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    /** added to a scrubbed environment (HOME, LOGNAME, PATH, SHELL, TERM, USER) */
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not a variable name'), z.string())
      .default({}),
    cwd: z.string().min(1).optional(),
    url: z.url({ protocol: /^https?$/ }).optional(),
    headers: z.record(z.string().min(1), z.string()).default({}),
    /** globs over the server's own tool names: only these (default all) */
    enabledTools: z.array(z.string().min(1)).optional(),
    /** globs over the server's own tool names, applied after enabledTools */
    disabledTools: z.array(z.string().min(1)).default([]),
    /**
     * globs over the server's own tool names: these run as yoke background tasks (spawnOnly),
     * backed by an MCP task on the server when the tool supports tasks
     */
    spawnOnly: z.array(z.string().min(1)).default([]),
    /** bounds the connection (spawn, handshake) and tools/list */
    startupMs: ms(30_000),
    /** a call with no progress for this long times out (progress resets it) */
    callMs: ms(60_000),
    /** a call times out after this long however much progress it reports (default 10 × callMs) */
    maxCallMs: timerMs().optional(),
    reconnect: z
      .object({
        initialDelayMs: ms(500),
        maxDelayMs: ms(30_000),
        maxAttempts: z.number().int().nonnegative().default(10),
      })
      .strict()
      .refine((r) => r.maxDelayMs >= r.initialDelayMs, {
        message:
          'maxDelayMs must be at least initialDelayMs (the backoff grows from one to the other)',
        path: ['maxDelayMs'],
      })
      .prefault({}),
    /**
     * the directories the server is told about when it asks for roots (roots/list), relative to
     * the project directory; none by default: roots/list is not even declared, so a server such as
     * server-filesystem keeps the directories its command line gave it
     */
    roots: z.array(z.string().min(1)).max(64).default([]),
    /** tools/list is read up to this many tools; the rest are left out with a warning */
    maxTools: z.number().int().positive().max(50_000).default(5000),
    /** true: the instance fails when the server cannot start; false: it is reported and retried */
    failOnStartupError: z.boolean().default(false),
    /** `safe` calls may overlap; `exclusive` ones run alone */
    concurrency: z.enum(['safe', 'exclusive']).default('safe'),
    /** default: low for tools annotated readOnlyHint, else medium */
    risk: z.enum(['low', 'medium', 'high', 'critical']).optional(),
    /** descriptions are cut to this (a long one floods the model's context) */
    descriptionChars: z.number().int().min(80).default(2048),
    /** the largest message a stdio server may send (at most 512 MiB: a longer line cannot become a string) */
    maxMessageBytes: z
      .number()
      .int()
      .positive()
      .max(512 * 1024 * 1024)
      .default(64 * 1024 * 1024),
    /**
     * OAuth 2.1 (an HTTP server that answers 401): `true`, or settings. Sign in with
     * `yoke mcp login <serverName>`; tokens live in the OS keyring or $YOKE_HOME, never here
     */
    oauth: z
      .union([
        z.boolean(),
        z
          .object({
            /** the scopes to ask for (default: what the server's 401 or its metadata names) */
            scopes: z
              .array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'not an OAuth scope'))
              .default([]),
            /** a client id registered with the authorization server (else CIMD or dynamic registration) */
            clientId: z.string().min(1).optional(),
            /** yoke's Client ID Metadata Document, an https URL, used where the server supports CIMD */
            clientMetadataUrl: z.url({ protocol: /^https$/ }).optional(),
            /** a fixed port for the loopback redirect http://127.0.0.1:PORT/callback (default: a free one) */
            callbackPort: z.number().int().min(1).max(65535).optional(),
            /** development only: an authorization server on a loopback address (and plain http for it) */
            allowLoopback: z.boolean().default(false),
          })
          .strict(),
      ])
      .default(false),
    /** refuse private, loopback, link-local and metadata addresses and redirects (for URLs from packages) */
    ssrfGuard: z.boolean().default(false),
    /** let the server ask the `model` service for completions (MCP sampling); off by default: it spends your tokens */
    sampling: z.boolean().default(false),
    /** the most output tokens one sampling request may ask for */
    samplingMaxTokens: z.number().int().positive().default(4096),
    /** read the server's skills (the MCP Skills extension) into the skills service; false leaves them out */
    skills: z.boolean().default(true),
    /**
     * keep the server's protocol transcript (its last messages both ways, by reference; masked and
     * cut when read) for the web console; false keeps none
     */
    transcript: z.boolean().default(true),
  })
  .strict()
  .superRefine((cfg, issues) => {
    const problem = (message: string, path: string[] = []) =>
      issues.addIssue({ code: 'custom', message, path })
    const kind = transportOf(cfg)
    if (cfg.command && cfg.url) problem('give either command (stdio) or url (HTTP), not both')
    else if (kind === 'stdio' && !cfg.command) problem('a stdio server needs command', ['command'])
    else if (kind !== 'stdio' && !cfg.url) problem(`an ${kind} server needs url`, ['url'])
    if (cfg.oauth && kind === 'stdio')
      problem('oauth is for HTTP servers (url); a stdio server gets its secrets through env', [
        'oauth',
      ])
    else if (cfg.oauth && cfg.url) {
      const insecure = insecureOAuthUrl(cfg.url, cfg.oauth !== true && cfg.oauth.allowLoopback)
      if (insecure) problem(insecure, ['url'])
    }
    for (const name of Object.keys(cfg.env))
      if (BLOCKED_ENV.has(name.toUpperCase()))
        problem(`${name} may not be set: it makes a process load foreign code`, ['env', name])
    cfg.roots.forEach((entry, i) => {
      if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry) && !/^file:\/\//i.test(entry))
        problem('a root is a directory: a path, or a file:// URL', ['roots', String(i)])
      else if (/^file:\/\//i.test(entry)) {
        try {
          fileURLToPath(entry)
        } catch (err) {
          problem(`not a file URL this system can use: ${messageOf(err)}`, ['roots', String(i)])
        }
      }
    })
  })

export type McpClientConfig = z.output<typeof mcpClientConfig>

/** The entry's OAuth settings, or undefined when it does not use OAuth. */
export function oauthOf(cfg: Pick<McpClientConfig, 'oauth'>): OAuthSettings | undefined {
  if (!cfg.oauth) return undefined
  return cfg.oauth === true ? { scopes: [], allowLoopback: false } : cfg.oauth
}

/** How long a call may run in all, progress or not: maxCallMs, else 10 × callMs (within a timer's range). */
export function totalCallMs(cfg: Pick<McpClientConfig, 'callMs' | 'maxCallMs'>): number {
  return cfg.maxCallMs ?? Math.min(cfg.callMs * 10, MAX_TIMER_MS)
}

/** The roots a server is told about: each entry resolved against the project directory (`~/` is the home directory). */
export function rootsOf(
  cfg: Pick<McpClientConfig, 'roots'>,
  projectDir: string,
): Array<{ uri: string; name: string }> {
  return cfg.roots.map((entry) => {
    if (/^file:\/\//i.test(entry)) return { uri: entry, name: basename(fileURLToPath(entry)) }
    const path = entry === '~' || entry.startsWith('~/') ? join(homedir(), entry.slice(1)) : entry
    const dir = resolve(projectDir, path)
    return { uri: pathToFileURL(dir).href, name: basename(dir) || dir }
  })
}

export function transportOf(
  cfg: Pick<McpClientConfig, 'transport' | 'command' | 'url'>,
): 'stdio' | 'http' | 'sse' {
  return cfg.transport ?? (cfg.url && !cfg.command ? 'http' : 'stdio')
}

/**
 * `mcp__<server>__<raw>`. A name that had to change (characters outside A-Z a-z 0-9 _ -) or is
 * longer than 64 is cut and suffixed with 12 hex of sha256(server \0 raw), so two different raw
 * names never meet. The `mcp__<server>__` prefix stays whole (rules on `mcp__<server>__*` match)
 * while at least 6 hex fit after it; only a server name past 51 characters loses it.
 * The raw name is kept beside it for the wire: never parse it back.
 */
export function publicToolName(server: string, raw: string): string {
  const plain = `mcp__${server}__${raw}`
  const clean = plain.replace(/[^A-Za-z0-9_-]/gu, '_')
  if (clean === plain && clean.length <= 64) return clean
  const hash = createHash('sha256').update(`${server}\0${raw}`).digest('hex')
  const prefix = `mcp__${server}__`
  const room = 64 - prefix.length
  if (prefix.length <= 64 - 13 || room < 6) return `${clean.slice(0, 64 - 13)}_${hash.slice(0, 12)}`
  return prefix + hash.slice(0, Math.min(room, 12))
}
