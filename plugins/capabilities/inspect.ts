/**
 * The capabilities section of `yoke inspect` (the control `capabilities/inspect`): each
 * capability's kind, id, version and hash, with its calls summed from its metrics row, one line
 * each, aligned. Plain text: the CLI that prints it may be another process than this one.
 */
import type { CapabilitiesInspect, CapabilitiesList, CapabilityLine } from './api.ts'

/** Each capability of `list` with its row's calls (0 when it has none). */
export function capabilityLines({ capabilities, rows }: CapabilitiesList): CapabilityLine[] {
  return capabilities.map(({ kind, id, version, hash, state, refused }) => {
    const row = rows.find((r) => r.id === id && r.hash === hash)
    return {
      kind,
      id,
      ...(version !== undefined && { version }),
      hash,
      ...(state && { state }),
      ...(refused && { refused }),
      called: row?.called ?? 0,
      ok: row?.ok ?? 0,
      ...(row?.p95 !== undefined && { p95: row.p95 }),
    }
  })
}

/** The section: a line per capability (`tool    alpha@1.0.0   sha256:…  called 2  ok 2`). */
export function inspectSection(list: CapabilitiesList): CapabilitiesInspect {
  const capabilities = capabilityLines(list)
  const width =
    Math.max(12, ...capabilities.map((c) => c.id.length + (c.version?.length ?? 0) + 1)) + 2
  const lines = capabilities.map((c) => {
    const calls = c.kind === 'tool' ? `called ${c.called}  ok ${c.ok}` : ''
    const p95 = c.p95 === undefined ? '' : `  p95 ${c.p95} ms`
    const name = c.version ? `${c.id}@${c.version}` : c.id
    return `${c.kind.padEnd(8)}${name.padEnd(width)}${c.hash}  ${calls}${p95}${c.state ? `  ${c.state}` : ''}${c.refused ? `  ${c.refused}` : ''}`
  })
  return { title: 'capabilities', note: '(yoke stats for every count)', lines, data: capabilities }
}
