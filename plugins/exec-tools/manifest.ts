/**
 * Reading a package's manifest.json (octos's format, reference/octos.md §2) into a `Manifest`, with
 * every problem at file:line:col. JSON.parse decides whether the text is JSON and gives the values;
 * the same text parsed as YAML (JSON is YAML) gives each value's position. Unknown fields are
 * ignored, like octos. A bad tool or extras entry is skipped with a warning and the rest loads; a
 * bad top-level field makes the whole manifest unusable.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs'
import { messageOf } from 'yoke'
import { LineCounter, parseDocument, type Document } from 'yaml'
import { z } from 'zod'
import { envNameProblem } from '../process/api.ts'
import { HOOK_EVENT_NAMES, type HookEvent } from '../shell-hooks/api.ts'

const RISKS = ['low', 'medium', 'high', 'critical'] as const
export type Risk = (typeof RISKS)[number]

export interface ManifestTool {
  name: string
  description: string
  /** `input_schema`, default `{"type":"object"}` */
  inputSchema: Record<string, unknown>
  /** `env` and its alias `env_allowlist`, merged: the names passed on beyond the essentials */
  env: string[]
  /** undefined for an absent or unknown literal: only high and critical ask for approval */
  risk?: Risk
  /** an unknown `concurrency_class` runs exclusive (fail-closed, octos #718) */
  concurrency: 'safe' | 'exclusive'
  spawnOnly: boolean
  spawnOnlyMessage?: string
}

export interface ManifestHook {
  event: HookEvent
  /** argv, run without a shell */
  command: string[]
  timeoutMs: number
  toolFilter: string[]
  /** names passed on from our environment, beyond the essentials (as a tool's `env`) */
  env: string[]
}

/** Exactly one of `command` (stdio) and `url` (HTTP). `env` lists names whose values come from our environment. */
export interface ManifestMcpServer {
  command?: string
  args: string[]
  env: string[]
  url?: string
  headers: Record<string, string>
}

export interface Manifest {
  /** `id` if non-blank, else `name` */
  id: string
  name: string
  version: string
  tools: ManifestTool[]
  /** lowercase hex of the executable; absent for unsigned packages */
  sha256?: string
  timeoutSecs?: number
  requiresNetwork: boolean
  /** `{os}-{arch}` (`linux-x86_64`, `darwin-aarch64`) → where `yoke add` downloads the executable */
  binaries: Record<string, { url: string; sha256?: string }>
  /** octos-plugin's gating (`requires`, alias `requirements`): absent when the manifest has none */
  requires?: ManifestRequirements
  mcpServers: ManifestMcpServer[]
  hooks: ManifestHook[]
  promptsInclude: string[]
}

/** What must hold on this machine for the package to load (octos-plugin `check_requirements`). */
export interface ManifestRequirements {
  /** programs that must be on PATH */
  bins: string[]
  /** variables that must be set (an empty value counts) */
  env: string[]
  /** the systems it runs on (`linux`, `macos` or `darwin`, `windows`); empty: any */
  os: string[]
}

export interface ManifestProblem {
  file: string
  line: number
  col: number
  message: string
  /** the tool a warning is about */
  tool?: string
  /** the catalogue code when it is not MANIFEST_INVALID (an executable this machine cannot run, a requirement it does not meet) */
  code?: 'EXECUTABLE_INVALID' | 'PACKAGE_UNSUPPORTED'
}

/** The events a manifest's hook may name: shell-hooks' (a package's hooks run in a shell-hooks child). */
export const HOOK_EVENTS: ReadonlySet<string> = new Set(HOOK_EVENT_NAMES)

// Custom messages are predicates ("must …", "is …"): they read after the field's name.
const HEX64 = /^[0-9a-fA-F]{64}$/
const sha256 = z
  .string()
  .refine((s) => s.trim() !== '', {
    message: 'must be a non-empty hex digest (omit the field for unsigned plugins)',
    abort: true,
  })
  .refine((s) => HEX64.test(s), 'must be 64 hex digits (the sha256 of the file)')
  .transform((s) => s.toLowerCase())
const positiveInt = z
  .number()
  .int('must be a positive integer')
  .positive('must be a positive integer')
// the package name becomes a path (`<dir>/<name>`, the hash ledger): it must stay one path segment
const PLAIN = "must be a plain name (not blank, '.' or '..'; no '/', '\\' or control characters)"
const isPlain = (s: string) => s !== '.' && s !== '..' && !/[/\\\p{Cc}]/u.test(s)
const envNames = z.array(z.string()).superRefine((names, ctx) =>
  names.forEach((name, i) => {
    const problem = envNameProblem(name)
    if (problem)
      ctx.addIssue({ code: 'custom', message: `is ${JSON.stringify(name)}: ${problem}`, path: [i] })
  }),
)

const names = z.array(z.string().min(1, 'must not be empty')).default([])
const requirements = z.object({ bins: names, env: names, os: names })

const topLevel = z.object({
  id: z.string().refine(isPlain, PLAIN).nullish(), // blank: use the name
  name: z
    .string()
    .refine((s) => s.trim() !== '' && isPlain(s), PLAIN)
    .nullish(),
  version: z.string(),
  tools: z.array(z.unknown()).default([]),
  sha256: sha256.nullish(),
  timeout_secs: positiveInt.nullish(),
  requires_network: z.boolean().default(false),
  binaries: z
    .record(
      z.string(),
      z.object({ url: z.string().min(1, 'must not be empty'), sha256: sha256.nullish() }),
    )
    .default({}),
  mcp_servers: z.array(z.unknown()).default([]),
  hooks: z.array(z.unknown()).default([]),
  prompts: z.object({ include: z.array(z.unknown()).default([]) }).nullish(),
  requires: requirements.nullish(),
  requirements: requirements.nullish(),
})

const toolEntry = z.object({
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 characters of A-Z a-z 0-9 _ -'),
  description: z.string(),
  input_schema: z.record(z.string(), z.unknown()).nullish(),
  env: envNames.nullish(),
  env_allowlist: envNames.nullish(),
  risk: z.string().nullish(),
  concurrency_class: z.string().nullish(),
  spawn_only: z.boolean().default(false),
  spawn_only_message: z.string().nullish(),
})

const hookEntry = z.object({
  event: z.string().refine((event) => HOOK_EVENTS.has(event), {
    error: (iss) => `is not a known hook event: ${JSON.stringify(iss.input)}`,
  }),
  command: z
    .array(z.string())
    .min(1, 'must not be empty')
    .refine((argv) => argv[0]?.trim() !== '', 'must start with a program'),
  timeout_ms: positiveInt.default(5000),
  tool_filter: z.array(z.string()).default([]),
  env: envNames.default([]),
})

const mcpEntry = z
  .object({
    command: z.string().min(1, 'must not be empty').nullish(),
    args: z.array(z.string()).default([]),
    env: envNames.default([]),
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).nullish(),
    headers: z.record(z.string(), z.string()).default({}),
  })
  .refine(
    (s) => (s.command == null) !== (s.url == null),
    'must have exactly one of command and url',
  )

type Path = (string | number)[]
const ARTICLE: Record<string, string> = {
  object: 'an object',
  record: 'an object',
  array: 'an array',
  int: 'an integer',
  boolean: 'true or false',
}

/** Text, file and positions of one manifest: turns paths into problems. */
class Located {
  constructor(
    readonly file: string,
    private readonly doc: Document | undefined,
    private readonly lines: LineCounter,
  ) {}

  /** The value at `path`, else its nearest written ancestor (a missing field points at its object). */
  at(path: Path, message: string, tool?: string): ManifestProblem {
    let node: unknown
    for (let p = path; !node && p.length > 0; p = p.slice(0, -1)) node = this.doc?.getIn(p, true)
    const range =
      (node as { range?: [number, number, number] } | undefined)?.range ??
      (this.doc?.contents?.range as [number, number, number] | undefined)
    const { line, col } = this.lines.linePos(range?.[0] ?? 0)
    return present({ file: this.file, line, col, message, tool })
  }

  /** One problem per zod issue. With `skipped` (the entry's name), paths are told relative to `base`. */
  issues(error: z.ZodError, base: Path, skipped?: string, tool?: string): ManifestProblem[] {
    return error.issues.map((issue) => {
      const rel = issue.path as Path
      const path = [...base, ...rel]
      const where = skipped === undefined ? label(path) : label(rel, '')
      const what =
        issue.code !== 'invalid_type'
          ? issue.message
          : this.doc?.hasIn(path) || rel.length === 0
            ? `must be ${ARTICLE[issue.expected] ?? `a ${issue.expected}`}`
            : 'is required'
      // custom messages are predicates ("must …", "is …"): they read after the field's name
      const message =
        where === '' ? what : /^(must|is) /.test(what) ? `${where} ${what}` : `${where}: ${what}`
      return this.at(path, skipped === undefined ? message : `${skipped} skipped: ${message}`, tool)
    })
  }
}

/** `manifest.tools[2].env[0]`; with root '', `env[0]` */
const label = (path: Path, root = 'manifest') =>
  path.reduce<string>(
    (s, p) => (typeof p === 'number' ? `${s}[${p}]` : s === '' ? p : `${s}.${p}`),
    root,
  )

/** Where JSON.parse stopped. Node 20 gives no position for an unexpected token, but quotes up to 10 characters either side of it. */
function jsonErrorOffset(message: string, text: string): number | undefined {
  const position = /position (\d+)/.exec(message)
  if (position) return Number(position[1])
  if (/end of JSON input/.test(message)) return text.length
  const quoted =
    /^Unexpected token '[\s\S]{1,2}', (\.\.\.)?"([\s\S]*)"(\.\.\.)? is not valid JSON$/.exec(
      message,
    )
  const start = quoted ? text.indexOf(quoted[2]) : -1
  if (!quoted || start < 0) return undefined
  // when the whole (short) text is quoted, the token could be anywhere
  return quoted[1] ? start + 10 : quoted[3] ? start + quoted[2].length - 10 : undefined
}

const MAX_DEPTH = 64

/** The offset where brackets (outside strings) first open past `max` levels, or undefined. */
function nestingPast(text: string, max: number): number | undefined {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92)
        i++ // a backslash escapes the next character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 || c === 91) {
      if (++depth > max) return i
    } else if (c === 125 || c === 93) depth--
  }
  return undefined
}

/**
 * Parses one manifest.json. `manifest` is undefined when the manifest as a whole is unusable; a bad
 * tool, hook, MCP server or prompt entry is only skipped, with a warning.
 *
 * @example
 * const { manifest, errors, warnings } = parseManifest(readFileSync(file, 'utf8'), file)
 */
export function parseManifest(
  text: string,
  file: string,
): { manifest?: Manifest; errors: ManifestProblem[]; warnings: ManifestProblem[] } {
  text = text.replace(/^\uFEFF/, '') // a byte-order mark (Notepad) is not content
  const fail = (problem: ManifestProblem) => ({ errors: [problem], warnings: [] })
  const tooDeep = depthProblem(text, file)
  if (tooDeep) return fail(tooDeep)
  const lines = new LineCounter()
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false })
  const loc = new Located(file, doc.errors.length ? undefined : doc, lines)
  const value = jsonValue(text, doc, loc, lines)
  if ('problem' in value) return fail(value.problem)
  const top = topLevel.safeParse(value.value)
  if (!top.success) return { errors: loc.issues(top.error, []).sort(byPosition), warnings: [] }
  const id = top.data.id?.trim() ? top.data.id : top.data.name
  if (!id) return fail(loc.at(['name'], 'manifest.name is required (or a non-blank id)'))
  const warnings: ManifestProblem[] = []
  const manifest = toManifest(top.data, id, loc, warnings)
  return { manifest, errors: [], warnings: warnings.sort(byPosition) }
}

/**
 * yaml's parser recurses per level, and a few thousand levels can abort the whole process: a
 * manifest is refused, by a linear scan, before any parser sees nesting that deep.
 */
function depthProblem(text: string, file: string): ManifestProblem | undefined {
  const tooDeep = nestingPast(text, MAX_DEPTH)
  if (tooDeep === undefined) return undefined
  const at = new LineCounter()
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) at.addNewLine(i + 1)
  return {
    file,
    ...at.linePos(tooDeep),
    message: `manifest.json nests deeper than ${MAX_DEPTH} levels`,
  }
}

/** The manifest's JSON object, or the problem (not JSON, a duplicate key, not an object) at its line. */
function jsonValue(
  text: string,
  doc: Document,
  loc: Located,
  lines: LineCounter,
): { value: object } | { problem: ManifestProblem } {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    const msg = messageOf(err)
    const offset = jsonErrorOffset(msg, text) ?? doc.errors[0]?.pos[0] ?? 0
    // V8 quotes the text around the error, newlines included: keep the report on one line
    const message = `not valid JSON: ${msg.replace(/\n/g, '\\n')}`
    return { problem: { ...loc.at([], ''), ...lines.linePos(offset), message } }
  }
  // JSON.parse lets a later duplicate win silently; octos (serde) refuses a duplicate field
  const duplicate = doc.errors.find((e) => e.code === 'DUPLICATE_KEY')
  if (duplicate) {
    const key = /^"(?:[^"\\]|\\.)*"/.exec(text.slice(duplicate.pos[0]))?.[0] ?? ''
    const message = `duplicate key ${key}`.trim()
    return { problem: { ...loc.at([], ''), ...lines.linePos(duplicate.pos[0]), message } }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { problem: loc.at([], 'manifest must be a JSON object') }
  return { value }
}

/** The checked top level as a Manifest; a bad tool, server, hook or prompt entry is a warning. */
function toManifest(
  m: z.output<typeof topLevel>,
  id: string,
  loc: Located,
  warnings: ManifestProblem[],
): Manifest {
  return {
    id,
    name: m.name ?? id,
    version: m.version,
    tools: readTools(m.tools, loc, warnings),
    ...present({ sha256: m.sha256, timeoutSecs: m.timeout_secs }),
    requiresNetwork: m.requires_network,
    ...present({ requires: m.requires ?? m.requirements }),
    binaries: Object.fromEntries(
      Object.entries(m.binaries).map(([platform, b]) => [platform, present(b)]),
    ),
    mcpServers: entries(m.mcp_servers, 'mcp_servers', mcpEntry, loc, warnings).map((e) =>
      present(e.value),
    ),
    hooks: entries(m.hooks, 'hooks', hookEntry, loc, warnings).map(({ value: h }) => ({
      event: h.event as HookEvent, // the schema refused any other
      command: h.command,
      timeoutMs: h.timeout_ms,
      toolFilter: h.tool_filter,
      env: h.env,
    })),
    promptsInclude: entries(
      m.prompts?.include ?? [],
      'prompts.include',
      z.string().min(1, 'must not be empty'),
      loc,
      warnings,
    ).map((e) => e.value),
  }
}

/** Each entry of a list that parses, with its path; the others become warnings (a tool is named by its name if it has one). */
function entries<T>(
  list: unknown[],
  key: string,
  schema: z.ZodType<T>,
  loc: Located,
  warnings: ManifestProblem[],
) {
  return list.flatMap((raw, i) => {
    const parsed = schema.safeParse(raw)
    const path = [...key.split('.'), i]
    if (parsed.success) return [{ value: parsed.data, path }]
    const name =
      key === 'tools' && typeof (raw as { name?: unknown })?.name === 'string'
        ? (raw as { name: string }).name
        : undefined
    warnings.push(
      ...loc.issues(
        parsed.error,
        path,
        name === undefined ? label(path) : `tool ${JSON.stringify(name)}`,
        name,
      ),
    )
    return []
  })
}

function readTools(list: unknown[], loc: Located, warnings: ManifestProblem[]): ManifestTool[] {
  const seen = new Set<string>()
  return entries(list, 'tools', toolEntry, loc, warnings).flatMap(
    ({ value: t, path }): ManifestTool[] => {
      if (seen.has(t.name)) {
        warnings.push(
          loc.at(
            [...path, 'name'],
            `tool ${JSON.stringify(t.name)} skipped: a tool of that name comes earlier in this manifest`,
            t.name,
          ),
        )
        return []
      }
      seen.add(t.name)
      const risk = t.risk?.trim().toLowerCase()
      const concurrency = t.concurrency_class?.trim().toLowerCase() ?? ''
      if (!['', 'safe', 'exclusive'].includes(concurrency))
        warnings.push(
          loc.at(
            [...path, 'concurrency_class'],
            `tool ${JSON.stringify(t.name)}: unknown concurrency_class ${JSON.stringify(t.concurrency_class)}, runs exclusive`,
            t.name,
          ),
        )
      const tool = {
        name: t.name,
        description: t.description,
        inputSchema: t.input_schema ?? { type: 'object' },
        env: [...new Set([...(t.env ?? []), ...(t.env_allowlist ?? [])])],
        risk: RISKS.find((r) => r === risk), // an unknown literal is unspecified: it must not force approval
        concurrency:
          concurrency === '' || concurrency === 'safe' ? ('safe' as const) : ('exclusive' as const),
        spawnOnly: t.spawn_only,
        spawnOnlyMessage: t.spawn_only_message,
      }
      return [present(tool)]
    },
  )
}

/** The object without its absent (undefined or null) fields, so results hold no `key: undefined`. */
function present<T extends object>(o: T): { [K in keyof T]: Exclude<T[K], null> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v != null)) as {
    [K in keyof T]: Exclude<T[K], null>
  }
}

const byPosition = (a: ManifestProblem, b: ManifestProblem) => a.line - b.line || a.col - b.col

/** octos `has_extras`: the package brings more than tools (an extras-only package is valid). */
export function hasExtras(m: Manifest): boolean {
  return m.mcpServers.length > 0 || m.hooks.length > 0 || m.promptsInclude.length > 0
}

/** The largest manifest.json read (the loader's cap, plugins/exec-tools/load.ts). */
export const MANIFEST_MAX_BYTES = 1024 * 1024

/**
 * A manifest.json's text, read as the loader reads it: a regular file only (not a link to
 * /dev/zero, not a FIFO that never ends), through one descriptor, at most MANIFEST_MAX_BYTES.
 * Reading runs nothing: what lists packages without loading them (`yoke plugins list` while
 * exec-tools waits for trust) reads through this. Throws an Error that says why it cannot.
 *
 * @example
 * const { manifest, errors } = parseManifest(readManifestText(file), file)
 */
export function readManifestText(file: string): string {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    const st = fstatSync(fd)
    if (!st.isFile()) throw new Error('it is not a regular file')
    if (st.size > MANIFEST_MAX_BYTES)
      throw new Error(`it is ${st.size} bytes; the limit is ${MANIFEST_MAX_BYTES}`)
    const buffer = Buffer.alloc(st.size)
    const read = readSync(fd, buffer, 0, st.size, 0)
    return buffer
      .subarray(0, read)
      .toString('utf8')
      .replace(/^\uFEFF/, '')
  } finally {
    closeSync(fd)
  }
}
