/**
 * What the console shows, read from the running composition through the plugin's context and the
 * services of the plugins that are there (runtime, capabilities, tool search, MCP hub, skills,
 * telemetry): each section is filled from what is present, and one whose source is absent says so
 * (`unavailable`) instead of being empty.
 */
import type { Context, EffectNode, FiberInfo, RegisteredTool } from 'yoke'
import type { CapabilitiesApi } from '../capabilities/api.ts'
import type { McpHub, McpServerStatus } from '../mcp/api.ts'
import type { PromptApi } from '../prompt/api.ts'
import type { SkillsApi } from '../skills/api.ts'
import type { SpanRecord, TelemetryApi } from '../telemetry/api.ts'
import type { ToolSearchApi } from '../tool-search/api.ts'
import { contributedChecks } from './host.ts'
import type {
  CallsSection,
  DoctorCheck,
  DoctorSection,
  EffectRow,
  ErrorJson,
  InstanceRow,
  ServerRow,
  ServersSection,
  SkillsSection,
  SpanRow,
  TranscriptEntry,
  ToolRow,
  ToolsSection,
} from './protocol.ts'

/** The most spans a snapshot carries. */
const SPANS = 500

export function errorJson(err: unknown): ErrorJson | undefined {
  if (err === undefined || err === null) return undefined
  const e = err as { code?: unknown; message?: unknown; hint?: unknown; location?: unknown }
  return {
    code: typeof e.code === 'string' ? e.code : 'INTERNAL',
    message: typeof e.message === 'string' ? e.message : String(err),
    ...(typeof e.hint === 'string' && e.hint && { hint: e.hint }),
    ...(typeof e.location === 'string' && { location: e.location }),
  }
}

const effectRows = (nodes: EffectNode[]): EffectRow[] =>
  nodes.map((n) => ({
    label: n.label,
    ...(n.children?.length && { children: effectRows(n.children) }),
  }))

/** A wait whose fix is `yoke trust` (src/config/trust.ts words its hint so). */
const namesTrust = (f: FiberInfo) => f.error?.hint.includes('`yoke trust`') === true

export function instanceRow(ctx: Context, f: FiberInfo): InstanceRow {
  const waitsFor =
    f.state === 'pending' && f.error?.code !== 'PLUGIN_WAITING'
      ? f.plugin.inject.filter((s) => ctx.get(s as never) === undefined)
      : []
  return {
    key: f.key,
    plugin: f.plugin.name,
    state: f.state,
    ...(f.parent && { parent: f.parent.key }),
    ...(f.error && { error: errorJson(f.error) }),
    ...(namesTrust(f) && { trust: true }),
    ...(waitsFor.length && { waitsFor }),
    effects: f.state === 'active' ? effectRows(f.effects()) : [],
  }
}

export const instances = (ctx: Context): InstanceRow[] =>
  ctx.instances().map((f) => instanceRow(ctx, f))

/**
 * The doctor's checks that the console can make from the composition it runs in: every instance
 * that failed or waits (with its fix), the tools by source, MCP servers that are not connected,
 * skills that could not be read. The checks of `yoke doctor` that need the CLI (Node, the
 * layers, $YOKE_HOME, plugins' `doctor` controls) are named in `unavailable`.
 */
export async function doctor(ctx: Context): Promise<DoctorSection> {
  const checks: DoctorCheck[] = []
  const fibers = ctx.instances().filter((f) => !f.key.startsWith('yoke:'))
  for (const f of fibers) {
    const row = instanceRow(ctx, f)
    if (f.state === 'failed')
      checks.push({
        level: 'error',
        topic: 'instance',
        message: `${f.label} failed: ${f.error?.message ?? 'unknown error'}`,
        ...(f.error?.hint && { hint: f.error.hint }),
      })
    else if (f.state === 'pending' && f.error)
      checks.push({
        level: 'warn',
        topic: row.trust ? 'trust' : 'instance',
        message: `${f.label} waits: ${f.error.message}`,
        hint: f.error.hint,
      })
    else if (f.state === 'pending')
      checks.push({
        level: 'warn',
        topic: 'instance',
        message: `${f.label} waits for ${row.waitsFor?.length ? `the service${row.waitsFor.length > 1 ? 's' : ''} ${row.waitsFor.join(', ')}` : 'its services'}`,
        hint: 'add an instance that provides it to the config, or remove this one',
      })
  }
  const running = fibers.filter((f) => f.state === 'active').length
  checks.unshift({
    level: 'ok',
    topic: 'instance',
    message: `${running} of ${fibers.length} instances running`,
  })
  const rt = ctx.get('runtime')
  if (rt) {
    const bySource = new Map<string, number>()
    for (const t of rt.list()) bySource.set(t.source, (bySource.get(t.source) ?? 0) + 1)
    const parts = [...bySource].map(([s, n]) => `${n} ${s}`)
    checks.push({
      level: 'ok',
      topic: 'tools',
      message: `${rt.list().length} tools${parts.length ? ` (${parts.join(', ')})` : ''}`,
    })
  }
  for (const s of (ctx.get('mcp') as McpHub | undefined)?.list() ?? [])
    if (s.state !== 'connected')
      checks.push({
        level: s.state === 'gave-up' || s.state === 'failed' ? 'error' : 'warn',
        topic: 'mcp servers',
        message: `MCP server "${s.name}" is ${s.state}: ${s.detail}`,
      })
  for (const p of (ctx.get('skills') as SkillsApi | undefined)?.problems() ?? [])
    checks.push({ level: 'warn', topic: 'skills', message: `${p.file}:${p.line}: ${p.message}` })
  const contributed = await contributedChecks(ctx)
  checks.push(...(contributed ?? []))
  const level = checks.some((c) => c.level === 'error')
    ? 'error'
    : checks.some((c) => c.level === 'warn')
      ? 'warn'
      : 'ok'
  return {
    checks,
    level,
    unavailable: contributed
      ? "the checks only `yoke doctor` makes (Node, the config's layers, yoke's home) are not here: run `yoke doctor`"
      : "the checks only `yoke doctor` makes (Node, the config's layers, yoke's home, plugins' own doctor checks) are not here yet: run `yoke doctor`",
  }
}

export function tools(ctx: Context): ToolsSection {
  const rt = ctx.get('runtime')
  if (!rt) return { tools: [], unavailable: 'no runtime' }
  const caps = ctx.get('capabilities') as CapabilitiesApi | undefined
  const search = ctx.get('toolSearch') as ToolSearchApi | undefined
  const known = new Map(
    caps
      ?.list()
      .filter((c) => c.kind === 'tool')
      .map((c) => [c.id, c]),
  )
  const rows = new Map(caps?.stats().map((r) => [r.id, r]))
  const exposure = (t: RegisteredTool) => {
    try {
      return search?.exposure(t) ?? 'direct'
    } catch {
      return 'direct'
    }
  }
  return {
    tools: rt.list().map((t): ToolRow => {
      const cap = known.get(t.name)
      const row = rows.get(t.name)
      return {
        name: t.name,
        ...(t.description && { description: t.description }),
        source: t.source,
        owner: t.owner,
        scope: 'global',
        risk: t.risk,
        exposure: exposure(t),
        inputSchema: t.inputSchema,
        ...(cap?.version && { version: cap.version }),
        ...(cap?.hash && { hash: cap.hash }),
        ...(cap?.refused && { refused: cap.refused }),
        ...(row && {
          metrics: {
            called: row.called,
            ok: row.ok,
            errors: row.errors,
            ...(row.p50 !== undefined && { p50: row.p50 }),
            ...(row.p95 !== undefined && { p95: row.p95 }),
          },
        }),
      }
    }),
    ...(!caps && {
      unavailable:
        'versions, hashes and metrics come from the capabilities plugin, which is not in this composition',
    }),
  }
}

export function spanRow(s: SpanRecord): SpanRow {
  const code = s.attributes['error.type']
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parentSpanId && { parentSpanId: s.parentSpanId }),
    name: s.name,
    kind: s.kind,
    start: s.startMs,
    end: s.endMs,
    durationMs: s.endMs - s.startMs,
    status: s.status,
    ...(s.status === 'error' && {
      error: typeof code === 'string' ? code : (s.statusMessage ?? 'error'),
    }),
    attributes: s.attributes,
    events: s.events.map((e) => ({ name: e.name, at: e.timeMs, attributes: e.attributes })),
  }
}

export function calls(ctx: Context): CallsSection {
  const telemetry = ctx.get('telemetry') as TelemetryApi | undefined
  if (!telemetry)
    return {
      spans: [],
      unavailable:
        'the telemetry plugin is not in this composition: add `telemetry: { use: telemetry }` to see calls',
    }
  return { spans: telemetry.recent(SPANS).map(spanRow) }
}

/**
 * What a server handle may offer beyond its status (mcp-client offers both: its stdio transport's
 * last stderr lines, and the transcript of requests paired with answers); read when present.
 */
type Talking = { stderr?(): string[]; transcript?(): TranscriptEntry[] }

export function serverRow(s: McpServerStatus, hub?: McpHub): ServerRow {
  const handle = hub?.get(s.name) as Talking | undefined
  return {
    name: s.name,
    ...(s.protocol && { era: s.protocol.era }),
    state: s.state,
    ...(s.server && { serverInfo: s.server }),
    tools: s.tools,
    stderr: handle?.stderr?.() ?? [],
    transcript: handle?.transcript?.() ?? [],
    ...(s.lastError && { error: { code: 'MCP_SERVER', message: s.lastError } }),
  }
}

export function servers(ctx: Context): ServersSection {
  const hub = ctx.get('mcp') as McpHub | undefined
  if (!hub) return { servers: [], unavailable: 'no MCP hub in this composition' }
  const list = hub.list()
  const offers = (what: keyof Talking) =>
    list.some((s) => typeof (hub.get(s.name) as Talking | undefined)?.[what] === 'function')
  const missing = [!offers('stderr') && 'stderr', !offers('transcript') && 'protocol transcripts']
    .filter(Boolean)
    .join(' and ')
  return {
    servers: list.map((s) => serverRow(s, hub)),
    ...(list.length > 0 &&
      missing && { unavailable: `the servers' ${missing} are not offered by mcp-client yet` }),
  }
}

export function skills(ctx: Context): SkillsSection {
  const api = ctx.get('skills') as SkillsApi | undefined
  if (!api) return { skills: [], unavailable: 'the skills plugin is not in this composition' }
  // the system prompt as the model would see it now: the skills catalog is a section of it, cut
  // at its character budget (skills config catalogChars)
  const prompt = ctx.get('prompt') as PromptApi | undefined
  let catalog: string | undefined
  try {
    catalog = prompt?.render()
  } catch {
    catalog = undefined
  }
  const listed = api.list().map((s) => {
    const seen = catalog === undefined || catalog.includes(s.name)
    return {
      name: s.name,
      description: s.description,
      ...(s.source && { source: s.source }),
      listed: seen,
      ...(!seen && {
        why: "left out of the catalog: past its character budget (the skills plugin's catalogChars); skill_read still reads it",
      }),
    }
  })
  const held = api.held().map((s) => ({
    name: s.name,
    description: s.description,
    listed: false,
    why: `held: ${s.holds.join('; ')}`,
  }))
  const shadowed = api.shadowed().map((s) => ({
    name: s.name,
    listed: false,
    why: `shadowed: ${s.shadowed} is hidden by ${s.winner}`,
  }))
  const problems = api.problems().map((p) => ({
    name: p.file,
    listed: false,
    why: `${p.file}:${p.line}: ${p.message}`,
  }))
  return {
    ...(catalog !== undefined && { catalog }),
    skills: [...listed, ...held, ...shadowed, ...problems],
  }
}
