/**
 * @module cli/summary
 * What `yoke dev` prints once the runtime is ready: the instances and their states (why pending,
 * why failed), the tools by source, the skills, the MCP servers and, when an `mcpServer` service
 * runs, its endpoint. Built from the same snapshot `yoke inspect` prints, shorter: no effects,
 * services or hooks (`yoke inspect` has those).
 */
import type { Composition } from '../config/composer.ts'
import type { McpServerStatus } from '../../plugins/mcp/index.ts'
import { mcpServers } from './mcp.ts'
import { color, displayPath } from './output.ts'
import type { InstanceInfo, Snapshot } from './snapshot.ts'

/** What the summary reads of the `skills` service (plugins/skills). */
interface SkillsView {
  list(): Array<{ name: string; available: boolean; why?: string }>
}

/** What the summary reads of the `mcpServer` service (plugins/mcp-server), when one runs. */
interface McpEndpoint {
  url?: string
  tokenHint?: string
}

const STATE: Record<string, (t: string) => string> = {
  active: (t) => color.green(t),
  pending: (t) => color.yellow(t),
  loading: (t) => color.cyan(t),
  failed: (t) => color.red(t),
}

/** The summary as text (coloured for stdout when it is a terminal). */
export function summary(composition: Composition, snap: Snapshot, cwd: string): string {
  const out: string[] = []
  const head = (title: string, note = '') =>
    out.push(`${color.bold(title)}${note ? ` ${color.dim(note)}` : ''}`)
  /** aligned `key  value` rows, each followed by its `more` lines */
  const rows = (pairs: Array<[string, string, string[]?]>) => {
    const width = Math.max(0, ...pairs.map(([k]) => k.length)) + 2
    for (const [k, v, more = []] of pairs) out.push(`  ${k.padEnd(width)}${v}`, ...more)
  }

  const rel = (file: string) => displayPath(file, cwd)
  head(
    'config',
    snap.layers.map((l) => (l.kind === 'set' ? l.file : `${l.kind} ${rel(l.file)}`)).join(' · '),
  )

  // instances: the ones the config lists and their children; the core ones (yoke:*) always run
  const instances = snap.instances.filter((i) => i.use !== 'core')
  const count = (state: string) => instances.filter((i) => i.state === state).length
  head(
    'instances',
    [
      `${count('active')} active`,
      ...['pending', 'failed', 'disabled'].map((s) => count(s) && `${count(s)} ${s}`),
    ]
      .filter(Boolean)
      .join(' · '),
  )
  rows(
    instances.map((i) => [
      i.key,
      `${(STATE[i.state] ?? color.dim)(i.state.padEnd(9))}${color.dim([i.plugin ?? '?', i.use !== i.plugin && !i.parent && i.use].filter(Boolean).join(' ← '))}`,
      why(i, cwd),
    ]),
  )

  const tools = snap.tools
  head('tools', `${tools.length}`)
  if (!tools.length) out.push(color.dim('  none'))
  rows(
    [...new Set(tools.map((t) => t.source))].map((source) => {
      const names = tools
        .filter((t) => t.source === source)
        .map((t) => t.name + (t.risk === 'low' ? '' : color.yellow(` (${t.risk})`)))
      // mcp__<server>__ once in front, not on every name
      const prefix = source.startsWith('mcp:') ? `mcp__${source.slice(4)}__` : ''
      const shared = prefix && names.every((n) => n.startsWith(prefix))
      return [
        source,
        shared
          ? `${color.dim(prefix)}{${names.map((n) => n.slice(prefix.length)).join(', ')}}`
          : names.join(', '),
      ]
    }),
  )

  const skills = (
    composition.kernel.services.get('skills')?.value as SkillsView | undefined
  )?.list()
  if (skills) {
    const available = skills.filter((s) => s.available)
    head(
      'skills',
      `${available.length} available${skills.length > available.length ? ` · ${skills.length - available.length} not` : ''}`,
    )
    if (available.length) out.push(`  ${available.map((s) => s.name).join(', ')}`)
    for (const s of skills.filter((s) => !s.available))
      out.push(`  ${s.name} ${color.yellow(`unavailable: ${s.why ?? '?'}`)}`)
    if (!skills.length) out.push(color.dim('  none'))
  }

  const servers = mcpList(composition)
  if (servers?.length) {
    head('mcp servers')
    rows(
      servers.map((s) => [
        s.name,
        `${serverState(s)} ${color.dim(`· ${[s.transport, s.server && `${s.server.name} ${s.server.version}`, `${s.tools} tools`].filter(Boolean).join(' · ')}`)}`,
      ]),
    )
  }

  const endpoint = composition.kernel.services.get('mcpServer')?.value as McpEndpoint | undefined
  if (endpoint?.url) {
    head('mcp endpoint')
    out.push(
      `  ${endpoint.url}${endpoint.tokenHint ? ` ${color.dim(`· token ${endpoint.tokenHint}`)}` : ''}`,
    )
  }
  return out.join('\n') + '\n'
}

/** Why an instance is not active: what it waits for, or its error (the hint was printed with it). */
function why(i: InstanceInfo, cwd: string): string[] {
  const lines: string[] = []
  for (const w of i.waitingFor ?? []) {
    const who = w.providers.length
      ? `provided by ${w.providers.map((p) => `instance "${p.instance}" (${p.state})`).join(', ')}`
      : w.hint
    lines.push(`      ${color.yellow('waits for')} service "${w.service}": ${who}`)
  }
  if (i.error) {
    lines.push(`      ${color.red(i.error.code)} ${i.error.message}`)
    if (i.error.location)
      lines.push(`      ${color.dim('at')} ${displayPath(i.error.location, cwd)}`)
  }
  return lines
}

function mcpList(composition: Composition): McpServerStatus[] | undefined {
  try {
    return mcpServers(composition)
  } catch {
    return undefined // no mcp registry in this preset
  }
}

function serverState(s: McpServerStatus): string {
  if (s.state === 'connected') return color.green('connected')
  if (s.state === 'connecting' || s.state === 'reconnecting') return color.yellow(s.detail)
  return color.red(s.detail)
}
