/**
 * @module plugins/mcp-client/import
 * Converts MCP server configs written for other harnesses into mcp-client instance entries:
 * Claude Code's `.mcp.json` (bare or `{ mcpServers }`), Claude Desktop's
 * `claude_desktop_config.json` and Codex's `config.toml` (`[mcp_servers.<id>]`). Everything is pure
 * except importFile, which reads one bounded file. An unusable file throws; an unusable entry is
 * skipped with a warning, so one bad server does not cost the others.
 */
import { isIP } from 'node:net'
import { basename, extname } from 'node:path'
import { parse as parseToml, TomlError } from 'smol-toml'
import { Document } from 'yaml'
import { messageOf, readConfigText, YokeError } from 'yoke'
import { BLOCKED_ENV, PROTOCOLS, SERVER_NAME, type ProtocolChoice } from './config.ts'
import { isPrivateAddress } from './addresses.ts'

export interface ImportedServer {
  /** the instance key for the yoke preset: `mcp-<serverName>` */
  key: string
  /** `^[A-Za-z0-9_-]{1,32}$`: the foreign name, sanitised and made unique */
  serverName: string
  enabled: boolean
  /** the mcp-client config; keys absent in the source are absent here */
  config: Record<string, unknown>
}

export interface ImportOptions {
  /**
   * The file is the user's own: its URLs are reached as written. Without it every HTTP entry gets
   * `ssrfGuard: true` (someone else's file may point at this machine or its network).
   */
  trustUrls?: boolean
  /**
   * The caller names the servers itself (a plugin's servers get Claude Code's names): each keeps
   * its name as the source wrote it, not sanitised, cut or suffixed.
   */
  asWritten?: boolean
}

export interface ImportResult {
  format: 'mcp.json' | 'claude-desktop' | 'codex-toml'
  servers: ImportedServer[]
  warnings: string[]
}

/** Same bound as yoke's own config files: these hold choices, not data. */
/** mcp-client's env keys, and names that go inside `${…}` (yoke's interpolation takes no others) */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

type Fields = Record<string, unknown>
type Converted = { enabled: boolean; config: Fields; notes: string[] }

/** Thrown while converting one entry: the entry is skipped and the message names the field. */
class SkipEntry extends Error {}

const isObject = (v: unknown): v is Fields =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date)
const isString = (v: unknown): v is string => typeof v === 'string'
const isText = (v: unknown): v is string => isString(v) && v !== '' // command, cwd, url: mcp-client wants them non-empty
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString)
const isStringMap = (v: unknown): v is Record<string, string> =>
  isObject(v) && Object.values(v).every(isString)
const isEnvName = (v: unknown): v is string => isString(v) && ENV_NAME.test(v)
const isEnvMap = (v: unknown): v is Record<string, string> =>
  isStringMap(v) && Object.keys(v).every(isEnvName)
const isPositive = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0
/** http(s), or left to interpolation: mcp-client checks the expanded URL itself */
const isHttpUrl = (v: unknown): v is string => isText(v) && /^(https?:\/\/|\$\{)/i.test(v)
const ref = (name: string) => '${' + name + '}'
/** mcp-client wants whole, positive milliseconds */
const toMs = (value: number | undefined, scale = 1) =>
  value === undefined ? undefined : Math.ceil(value * scale)

/**
 * Typed, recording reads of one entry's fields. A present field of the wrong type skips the entry;
 * keys never read are reported as unknown, so each format's converter decides what it knows.
 */
function fieldReader(entry: Fields) {
  const read = new Set<string>()
  const notes: string[] = []
  const get = <T>(key: string, check: (v: unknown) => v is T, want: string): T | undefined => {
    read.add(key)
    const value = entry[key]
    if (value === undefined) return undefined
    if (!check(value)) throw new SkipEntry(`${key} must be ${want}`)
    // fresh copies: TOML tables have a null prototype, and the caller's input is never shared
    return (Array.isArray(value) ? [...value] : isObject(value) ? { ...value } : value) as T
  }
  if (entry.command !== undefined && entry.url !== undefined) {
    throw new SkipEntry(
      'has both command and url; an entry is either a stdio server or an HTTP server',
    )
  }
  return {
    text: (key: string) => get(key, isText, 'a non-empty string'),
    strings: (key: string) => get(key, isStrings, 'an array of strings'),
    stringMap: (key: string) => get(key, isStringMap, 'a table of strings'),
    env: (key: string) => get(key, isEnvMap, 'a table of strings keyed by variable names'),
    url: (key: string) => get(key, isHttpUrl, 'an http:// or https:// URL'),
    envName: (key: string) => get(key, isEnvName, 'an environment variable name'),
    envNames: (key: string) =>
      get(
        key,
        (v): v is string[] => Array.isArray(v) && v.every(isEnvName),
        'an array of environment variable names',
      ),
    envNameMap: (key: string) =>
      get(
        key,
        (v): v is Record<string, string> => isObject(v) && Object.values(v).every(isEnvName),
        'a table of environment variable names',
      ),
    positive: (key: string) => get(key, isPositive, 'a positive number'),
    protocol: (key: string) =>
      get(
        key,
        (v): v is ProtocolChoice => (PROTOCOLS as readonly unknown[]).includes(v),
        PROTOCOLS.join(', ').replace(/, ([^,]+)$/, ' or $1'),
      ),
    boolean: (key: string) =>
      get(key, (v): v is boolean => typeof v === 'boolean', 'true or false'),
    has: (key: string) => entry[key] !== undefined,
    /** any value, marked read */
    raw: (key: string) => get(key, (_v): _v is unknown => true, 'a value'),
    ignore: (...keys: string[]) => keys.forEach((k) => read.add(k)),
    note: (message: string) => notes.push(message),
    /** mcp-client refuses these names outright (the instance would fail), so they go, with a note */
    dropBlocked(env: Record<string, string> | undefined) {
      for (const name of Object.keys(env ?? {}).filter((n) => BLOCKED_ENV.has(n.toUpperCase()))) {
        notes.push(
          `env ${name} dropped: mcp-client never passes variables that make a process load foreign code`,
        )
        delete env![name]
      }
      return env
    },
    /** the notes, then the unknown keys: call once every known key has been read */
    notes(): string[] {
      const unknown = Object.keys(entry).filter((k) => !read.has(k))
      return unknown.length ? [...notes, `ignored unknown keys: ${unknown.join(', ')}`] : notes
    },
  }
}

/** Drops undefined values, so a key absent in the source stays absent in the config. */
const compact = (fields: Fields): Fields =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined))

/** Merges maps, later ones winning; undefined when every part is absent. */
function mergeMaps(...parts: Array<Record<string, string> | undefined>) {
  return parts.some((p) => p !== undefined)
    ? (Object.assign({}, ...parts) as Record<string, string>)
    : undefined
}

/** The scopes that are OAuth scope tokens (RFC 6749 §3.3); the others are dropped with a note. */
function oauthScopes(scopes: unknown[], r: ReturnType<typeof fieldReader>): string[] {
  const ok = (s: unknown): s is string =>
    typeof s === 'string' && /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s)
  const bad = scopes.filter((s) => !ok(s))
  if (bad.length)
    r.note(
      `oauth scopes dropped (not OAuth scope tokens): ${bad.map((s) => JSON.stringify(s)).join(', ')}`,
    )
  return scopes.filter(ok)
}

/**
 * Claude Code's `oauth` object (clientId, callbackPort, scopes as one string,
 * authServerMetadataUrl) as mcp-client's; `oauth: true` too. A client secret is never carried.
 */
function claudeOauth(
  value: unknown,
  r: ReturnType<typeof fieldReader>,
): Fields | boolean | undefined {
  if (value === undefined || value === false) return undefined
  if (value === true) return true
  if (!isObject(value)) {
    r.note('oauth dropped: it is not an object')
    return undefined
  }
  const out: Fields = {}
  if (typeof value.clientId === 'string' && value.clientId) out.clientId = value.clientId
  if (Number.isInteger(value.callbackPort)) out.callbackPort = value.callbackPort
  const scopes =
    typeof value.scopes === 'string'
      ? value.scopes.trim().split(/\s+/).filter(Boolean)
      : Array.isArray(value.scopes)
        ? value.scopes
        : []
  const kept = oauthScopes(scopes, r)
  if (kept.length) out.scopes = kept
  if (value.authServerMetadataUrl !== undefined)
    r.note(
      'oauth.authServerMetadataUrl is not supported: yoke discovers the authorization server from the server',
    )
  if (value.clientSecret !== undefined)
    r.note('oauth.clientSecret dropped: yoke signs in as a public client (PKCE)')
  return Object.keys(out).length ? out : true
}

/** One `.mcp.json` / Claude Desktop entry. The type defaults as Claude Code's does: command → stdio, else http. */
function fromMcpJson(entry: Fields): Converted {
  const r = fieldReader(entry)
  const type = r.text('type') ?? (r.has('command') ? 'stdio' : 'http')
  if (type === 'ws') throw new SkipEntry('uses the ws transport, which mcp-client does not support')
  if (!['stdio', 'http', 'sse'].includes(type))
    throw new SkipEntry(`type must be stdio, http, sse or ws, not "${type}"`)
  r.ignore('alwaysLoad', 'headersHelper') // alwaysLoad: Claude Code's own client setting
  if (r.has('headersHelper'))
    r.note('headersHelper is not supported; add the headers it produces under config.headers')
  const callMs = toMs(r.positive('timeout'))
  // yoke's own key, passed through when an entry carries it (auto | legacy | 2026-07-28)
  const protocol = r.protocol('protocol')
  let config: Fields
  if (type === 'stdio') {
    const command = r.text('command')
    if (command === undefined) throw new SkipEntry('a stdio server needs a command')
    config = { command, args: r.strings('args'), env: r.dropBlocked(r.env('env')) }
    if (r.raw('oauth') !== undefined) r.note('oauth dropped: OAuth is for HTTP servers')
  } else {
    const url = r.url('url')
    if (url === undefined) throw new SkipEntry(`an ${type} server needs a url`)
    // plain http is left to inference (streamable HTTP with SSE fallback); sse is pinned
    config = {
      url,
      headers: r.stringMap('headers'),
      transport: type === 'sse' ? 'sse' : undefined,
      oauth: claudeOauth(r.raw('oauth'), r),
    }
  }
  return { enabled: true, config: compact({ ...config, callMs, protocol }), notes: r.notes() }
}

/** One Codex `[mcp_servers.<id>]` table. Fields of the other transport count as unknown keys. */
function fromCodex(entry: Fields): Converted {
  const r = fieldReader(entry)
  // a top-level key written below a [table] belongs to that table in TOML: a common slip
  const misplaced = Object.keys(entry).filter((k) => CODEX_TOP_LEVEL.has(k))
  if (misplaced.length)
    r.note(
      `${misplaced.join(', ')}: Codex's top-level keys, here inside this server's table (TOML puts a key written below a [table] in it): move them above the first table`,
    )
  let config: Fields
  if (r.has('command')) {
    // env_vars forwards variables from our environment: written as `${NAME}` for yoke to expand
    const forwarded = r.envNames('env_vars')?.map((name) => [name, ref(name)])
    const env = r.dropBlocked(mergeMaps(forwarded && Object.fromEntries(forwarded), r.env('env')))
    config = { command: r.text('command'), args: r.strings('args'), env, cwd: r.text('cwd') }
  } else if (r.has('url')) {
    const fromEnv = r.envNameMap('env_http_headers')
    const bearer = r.envName('bearer_token_env_var')
    const envHeaders =
      fromEnv &&
      Object.fromEntries(Object.entries(fromEnv).map(([header, name]) => [header, ref(name)]))
    const auth = bearer === undefined ? undefined : { Authorization: `Bearer ${ref(bearer)}` }
    const scopes = r.strings('scopes')
    r.ignore('oauth_resource')
    if (r.has('oauth_resource'))
      r.note('oauth_resource is not needed: yoke sends the resource its metadata names')
    config = {
      url: r.url('url'),
      headers: mergeMaps(r.stringMap('http_headers'), envHeaders, auth),
      // Codex's `scopes` are for its `codex mcp login`: yoke's is `yoke mcp login` (a bearer set
      // too is sent as it is; the server's 401 decides whether the sign-in is needed)
      oauth: scopes?.length ? { scopes: oauthScopes(scopes, r) } : undefined,
    }
  } else throw new SkipEntry('needs a command or a url')
  const startupSec = r.positive('startup_timeout_sec')
  const startupMs =
    startupSec === undefined ? toMs(r.positive('startup_timeout_ms')) : toMs(startupSec, 1000)
  r.ignore('startup_timeout_ms') // the legacy spelling loses to startup_timeout_sec
  const timing = { startupMs, callMs: toMs(r.positive('tool_timeout_sec'), 1000) }
  const tools = {
    enabledTools: r.strings('enabled_tools'),
    disabledTools: r.strings('disabled_tools'),
  }
  const failOnStartupError = r.boolean('required') ? true : undefined
  const enabled = r.boolean('enabled') ?? true
  const risk = approvalRisk(r)
  return {
    enabled,
    config: compact({ ...config, ...tools, ...timing, failOnStartupError, risk }),
    notes: r.notes(),
  }
}

/**
 * Codex's tool approvals as the server's risk: `prompt` (ask before each call) is high, which the
 * policy plugin asks for (the base preset's askRisks); `approve` (never ask) is low; `auto` and
 * `writes` leave yoke's default, the tools' annotations (a destructive tool is high, a read-only
 * one low). A per-tool `approval_mode` is left out, said, with the policy rule that does it.
 */
function approvalRisk(r: ReturnType<typeof fieldReader>): 'low' | 'high' | undefined {
  const mode = r.text('default_tools_approval_mode')
  const tools = r.raw('tools')
  const perTool = isObject(tools)
    ? Object.entries(tools).filter(([, t]) => isObject(t) && t.approval_mode !== undefined)
    : []
  if (perTool.length)
    r.note(
      `tools.<tool>.approval_mode left out (${perTool.map(([name]) => name).join(', ')}): yoke's risk is per server; a policy rule asks per tool (ask: ["mcp__<server>__<tool>"])`,
    )
  if (mode === 'prompt') {
    r.note('default_tools_approval_mode "prompt" is risk: high (the policy asks before each call)')
    return 'high'
  }
  if (mode === 'approve') return 'low'
  if (mode !== undefined && mode !== 'auto' && mode !== 'writes')
    r.note(
      `default_tools_approval_mode "${mode}" left out: Codex knows auto, prompt, approve, writes`,
    )
  return undefined
}

/** Where yoke has what a Codex config.toml sets beside its MCP servers (`yoke mcp import` reads only those). */
const CODEX_ELSEWHERE: Record<string, string> = {
  otel: "yoke's telemetry plugin exports OpenTelemetry: give it the exporter there",
  approval_policy: 'the policy plugin decides what asks first (askRisks, ask rules)',
  sandbox_mode: 'yoke has no OS sandbox of its own: its exec tools and servers run as you',
  plugins: "a Codex plugin's servers come with its folder: point claude-plugins at it",
  model: 'the model is a provider instance (openai, anthropic) of the preset',
}

/** Codex's own top-level keys, which a server's table never has */
const CODEX_TOP_LEVEL = new Set([
  ...Object.keys(CODEX_ELSEWHERE),
  'model_provider',
  'model_reasoning_effort',
  'profile',
  'profiles',
  'projects',
  'features',
  'hooks',
  'project_doc_fallback_filenames',
])

/** One warning per top-level key of a Codex config that is not carried over, naming it. */
function codexLeftOut(doc: Fields): string[] {
  const keys = Object.keys(doc).filter((k) => k !== 'mcp_servers')
  const known = keys.filter((k) => k in CODEX_ELSEWHERE)
  const rest = keys.filter((k) => !(k in CODEX_ELSEWHERE))
  // [otel] exporter = { otlp-http = { endpoint = "…" } }: say where it sent, for telemetry's endpoint
  const exporter = isObject(doc.otel) && isObject(doc.otel.exporter) ? doc.otel.exporter : {}
  const endpoint = Object.values(exporter).find((e) => isObject(e) && isText(e.endpoint)) as
    { endpoint: string } | undefined
  const where = (k: string) =>
    k === 'otel' && endpoint
      ? `${CODEX_ELSEWHERE[k]} (Codex exports to ${endpoint.endpoint}; telemetry's traces go to an OTLP endpoint, OTEL_EXPORTER_OTLP_ENDPOINT)`
      : CODEX_ELSEWHERE[k]
  return [
    ...known.map((k) => `"${k}" is not imported (only mcp_servers is): ${where(k)}`),
    ...(rest.length ? [`not imported (not MCP servers): ${rest.join(', ')}`] : []),
  ]
}

/** Sanitised, unique server names; names that were valid already keep them, whatever the order. */
function assignNames(names: string[], warnings: string[]): string[] {
  const taken = new Set(names.filter((n) => SERVER_NAME.test(n)))
  return names.map((name) => {
    if (SERVER_NAME.test(name)) return name
    const base = name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 32) || 'server'
    let candidate = base
    for (let n = 2; taken.has(candidate); n++)
      candidate = base.slice(0, 32 - `-${n}`.length) + `-${n}`
    taken.add(candidate)
    warnings.push(`server "${name}" renamed to "${candidate}"`)
    return candidate
  })
}

const shapeError = (
  reason: string,
  site: { file: string; line?: number; col?: number },
  cause?: unknown,
) => new YokeError('CONFIG_SHAPE', { reason }, { ...site, cause })

function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text)
  } catch (err) {
    const message = messageOf(err)
    // V8 reports "… in JSON at position N" (or "Unexpected end of JSON input"); turn it into line:col
    const at = /at position (\d+)/.exec(message)
    const offset = at ? Number(at[1]) : /end of JSON input/.test(message) ? text.length : undefined
    const reason = `not valid JSON: ${message.replace(/\s+in JSON at position \d+.*$/, '')}`
    const before = text.slice(0, offset ?? 0)
    const site =
      offset === undefined
        ? { file }
        : { file, line: before.split('\n').length, col: offset - before.lastIndexOf('\n') }
    throw shapeError(reason, site, err)
  }
}

function parseTomlText(text: string, file: string, what = 'TOML'): Fields {
  try {
    return parseToml(text)
  } catch (err) {
    if (!(err instanceof TomlError)) throw err
    // smol-toml appends a code frame to the message; the site carries the position instead
    const reason = err.message.split('\n')[0].replace(/^Invalid TOML document:\s*/, '')
    throw shapeError(`not valid ${what}: ${reason}`, { file, line: err.line, col: err.column }, err)
  }
}

/** Parses by extension when it is .toml or .json, else by content: JSON first, then TOML. */
function parseSource(text: string, file: string): { syntax: 'json' | 'toml'; doc: unknown } {
  const ext = extname(file).toLowerCase()
  if (ext === '.toml') return { syntax: 'toml', doc: parseTomlText(text, file) }
  if (ext === '.json' || text.trimStart().startsWith('{'))
    return { syntax: 'json', doc: parseJson(text, file) }
  try {
    return { syntax: 'json', doc: JSON.parse(text) }
  } catch {
    return { syntax: 'toml', doc: parseTomlText(text, file, 'JSON or TOML') }
  }
}

function detect(
  text: string,
  file: string,
): { format: ImportResult['format']; entries: Array<[string, unknown]>; leftOut?: string[] } {
  const { syntax, doc } = parseSource(text.replace(/^\uFEFF/, ''), file) // editors on Windows may add a BOM
  const none = (what: string) => shapeError(`no MCP servers found: ${what}`, { file })
  if (syntax === 'toml') {
    const servers = (doc as Fields).mcp_servers
    if (!isObject(servers) || !Object.keys(servers).length)
      throw none('expected [mcp_servers.<name>] tables')
    return {
      format: 'codex-toml',
      entries: Object.entries(servers),
      leftOut: codexLeftOut(doc as Fields),
    }
  }
  if (!isObject(doc)) throw shapeError('expected a JSON object of MCP servers', { file })
  if ('mcpServers' in doc) {
    const servers = doc.mcpServers
    if (!isObject(servers)) throw shapeError('mcpServers must be an object of servers', { file })
    if (!Object.keys(servers).length) throw none('mcpServers is empty')
    // same entry shape either way; the name only tells the user which tool the file came from
    const desktop =
      /^claude_desktop_config/i.test(basename(file)) ||
      'globalShortcut' in doc ||
      'preferences' in doc
    return { format: desktop ? 'claude-desktop' : 'mcp.json', entries: Object.entries(servers) }
  }
  const looksLikeServer = (v: unknown) =>
    isObject(v) && ('command' in v || 'url' in v || 'type' in v)
  if (!Object.values(doc).some(looksLikeServer))
    throw none('expected { "mcpServers": { … } } or { "<name>": { "command" | "url": … } }')
  return { format: 'mcp.json', entries: Object.entries(doc) }
}

/**
 * Converts the text of a foreign MCP config. `file` names the source in errors and warnings, and
 * a `.toml` / `.json` extension picks the parser.
 * @example importText('{"mcpServers":{"fs":{"command":"npx","args":["-y","server-fs"]}}}', '.mcp.json')
 *   // → { format: 'mcp.json', servers: [{ key: 'mcp-fs', serverName: 'fs', enabled: true,
 *   //      config: { serverName: 'fs', command: 'npx', args: ['-y', 'server-fs'] } }], warnings: [] }
 */
export function importText(text: string, file: string, options: ImportOptions = {}): ImportResult {
  const { format, entries, leftOut = [] } = detect(text, file)
  const warnings: string[] = [...leftOut]
  const converted: Array<Converted & { name: string }> = []
  for (const [name, entry] of entries) {
    try {
      if (!isObject(entry)) throw new SkipEntry('the entry is not an object')
      const result = format === 'codex-toml' ? fromCodex(entry) : fromMcpJson(entry)
      if (!options.trustUrls && typeof result.config.url === 'string') guardUrl(result)
      converted.push({ name, ...result })
      warnings.push(...result.notes.map((note) => `server "${name}": ${note}`))
    } catch (err) {
      if (!(err instanceof SkipEntry)) throw err
      warnings.push(`server "${name}" skipped: ${err.message}`)
    }
  }
  const written = converted.map((c) => c.name)
  const names = options.asWritten ? written : assignNames(written, warnings)
  const servers = converted.map(({ enabled, config }, i) => ({
    key: `mcp-${names[i]}`,
    serverName: names[i],
    enabled,
    config: { serverName: names[i], ...config },
  }))
  return { format, servers, warnings }
}

/**
 * An HTTP entry from a file that is not known to be the user's own: the SSRF rules of untrusted
 * sources (no private, loopback, link-local or metadata address, no redirect). A URL that is such
 * an address on its face gets a note, since it will be refused.
 */
function guardUrl(result: Converted) {
  result.config.ssrfGuard = true
  let host: string | undefined
  try {
    host = new URL(result.config.url as string).hostname.replace(/^\[|\]$/g, '')
  } catch {
    return // ${VAR} in the URL: the guard decides once it is expanded
  }
  if (/^localhost\.?$|\.localhost\.?$/i.test(host) || (isIP(host) && isPrivateAddress(host)))
    result.notes.push(
      `its url reaches ${host}, a loopback or private address, which the SSRF guard refuses; if the file is yours, import it with --trust-urls (or set ssrfGuard: false)`,
    )
}

/** Reads and converts one file: a regular file of at most 1 MiB of UTF-8 (the config reader's rules and errors). */
export function importFile(path: string, options: ImportOptions = {}): ImportResult {
  return importText(readConfigText(path), path, options)
}

/**
 * A `plugins:` block for a yoke config, one mcp-client instance per server; the format and the
 * warnings come first as comments, so whoever pastes it sees what needs a hand.
 */
export function toYaml(result: ImportResult): string {
  const instance = (s: ImportedServer) => ({
    use: 'mcp-client',
    ...(s.enabled ? {} : { enabled: false }),
    config: s.config,
  })
  const doc = new Document({
    plugins: Object.fromEntries(result.servers.map((s) => [s.key, instance(s)])),
  })
  const comments = [
    `imported from ${result.format}`,
    ...result.warnings.map((w) => `warning: ${w}`),
  ]
  doc.commentBefore = comments.map((line) => ` ${line.replace(/\n/g, ' ')}`).join('\n')
  return doc.toString({ lineWidth: 0 })
}
