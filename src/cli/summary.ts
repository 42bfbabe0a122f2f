/**
 * @module cli/summary
 * What `yoke dev` prints once the runtime is ready: the instances and their states (why pending,
 * why failed) and the tools by source, built from the same snapshot `yoke inspect` prints, shorter
 * (no effects, services or hooks); then the sections plugins contribute: each `<plugin>/summary`
 * control answers a SummarySection (the skills, the MCP servers, the MCP endpoint, …).
 */
import type { Composition } from '../config/composer.ts'
import type { SummarySection } from '../kernel/types.ts'
import { contributions } from './contributions.ts'
import { color, displayPath } from './output.ts'
import type { InstanceInfo, Snapshot } from './snapshot.ts'

const STATE: Record<string, (t: string) => string> = {
  active: (t) => color.green(t),
  pending: (t) => color.yellow(t),
  loading: (t) => color.cyan(t),
  failed: (t) => color.red(t),
}

/** The summary as text (coloured for stdout when it is a terminal). */
export async function summary(
  composition: Composition,
  snap: Snapshot,
  cwd: string,
): Promise<string> {
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
      // a namespace every name of the source shares (`mcp__<server>__`) once in front, not on each
      const prefix = sharedNamespace(tools.filter((t) => t.source === source).map((t) => t.name))
      const shared = prefix !== ''
      return [
        source,
        shared
          ? `${color.dim(prefix)}{${names.map((n) => n.slice(prefix.length)).join(', ')}}`
          : names.join(', '),
      ]
    }),
  )

  for (const { plugin, answer, error } of await contributions(
    composition.kernel,
    'summary',
    summarySection,
  )) {
    const section = error
      ? { title: plugin, lines: [color.red(`could not be read: ${error}`)] }
      : answer
    if (!section) continue
    head(section.title, section.note)
    if (section.rows) rows(section.rows)
    out.push(...(section.lines ?? []).map((line) => `  ${line}`))
  }
  return out.join('\n') + '\n'
}

/** The longest prefix ending in `__` that every name has ('' when none). */
function sharedNamespace(names: string[]): string {
  let common = names[0] ?? ''
  for (const name of names) while (!name.startsWith(common)) common = common.slice(0, -1)
  const end = common.lastIndexOf('__')
  return end > 0 ? common.slice(0, end + 2) : ''
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
    if (i.error.frame) lines.push(`      ${color.dim('from')} ${displayPath(i.error.frame, cwd)}`)
  }
  return lines
}

/** A section as its plugin answered it, or the reason it is not one (it never breaks the summary). */
export function summarySection(value: unknown): SummarySection | undefined {
  if (value === undefined || value === null) return undefined
  const v = value as SummarySection
  const strings = (a: unknown) => Array.isArray(a) && a.every((x) => typeof x === 'string')
  const ok =
    typeof value === 'object' &&
    typeof v.title === 'string' &&
    (v.note === undefined || typeof v.note === 'string') &&
    (v.lines === undefined || strings(v.lines)) &&
    (v.rows === undefined ||
      (Array.isArray(v.rows) && v.rows.every((r) => strings(r) && r.length === 2)))
  if (!ok)
    throw new Error(
      'the answer is not a summary section ({ title, note?, rows?, lines? } of strings)',
    )
  return v
}
