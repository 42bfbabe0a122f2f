/**
 * @module skills/frontmatter
 * Finding and reading a SKILL.md's frontmatter: YAML first (its failsafe schema, so every scalar
 * stays the text written), then YAML again with `key: a: b` values quoted (the spec's client
 * guide), then octos-style `key: value` lines. A key written twice keeps its first value, as octos
 * reads it, and is reported with its line.
 */
import { isMap, isScalar, LineCounter, parseDocument } from 'yaml'

export function splitFrontmatter(
  text: string,
): { frontmatter: string; body: string; line: number } | undefined {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/) // a byte-order mark (Notepad) is not content
  let open = 0
  while (open < lines.length && lines[open].trim() === '') open++
  if (lines[open]?.trimEnd() !== '---') return undefined
  let close = open + 1
  while (close < lines.length && lines[close].trimEnd() !== '---') close++
  if (close >= lines.length) return undefined // never closed
  if (close === open + 1) return undefined // "---\n---": empty, not frontmatter
  const body = lines
    .slice(close + 1)
    .join('\n')
    .replace(/^(\r?\n)+/, '')
  return { frontmatter: lines.slice(open + 1, close).join('\n'), body, line: open + 2 }
}

/** octos-style reading, for frontmatter that YAML refuses: the first `key:` line wins. */
export function readLines(frontmatter: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const line of frontmatter.split('\n')) {
    const m = /^\s*([A-Za-z0-9_-]+)\s*:(.*)$/.exec(line)
    if (!m || m[1] in out) continue
    let value = m[2].replace(/\s#.*$/, '').trim()
    if (/^(["']).*\1$/.test(value) && value.length >= 2) value = value.slice(1, -1)
    out[m[1]] = value
  }
  return out
}

export interface Frontmatter {
  values: Record<string, unknown>
  /** YAML refused it: it was read with quoting added, or line by line */
  lenient: boolean
  /** it nests `[` and `{` deeper than FLOW_DEPTH: it was read line by line, never by YAML */
  tooDeep?: boolean
  /** each top-level key's first line, counted from the frontmatter's first line (1) */
  keyLines: Map<string, number>
  /** a top-level key written again, where, and where it was first */
  duplicates: Array<{ key: string; line: number; first: number }>
}

/**
 * The frontmatter's fields. YAML's failsafe schema keeps every scalar as the text written (1.10
 * stays 1.10); a key written twice keeps its first value.
 */
export function readFrontmatter(frontmatter: string): Frontmatter {
  // yaml's parser spends about a second on 60,000 open brackets (and more heap than it should):
  // past any real frontmatter's nesting it is not run at all
  if (flowDepth(frontmatter) > FLOW_DEPTH)
    return {
      values: readLines(frontmatter),
      lenient: true,
      tooDeep: true,
      ...topLevelLines(frontmatter),
    }
  const direct = readYaml(frontmatter)
  if (direct) return direct
  // the spec's client guide: quote the values of `key: a: b` lines and try YAML again
  const quoted = frontmatter.replace(
    /^([A-Za-z0-9_-]+):[ \t]+([^'"[{|>\s].*:\s.*)$/gm,
    (_, key: string, value: string) => `${key}: ${JSON.stringify(value.trim())}`,
  )
  const retried = readYaml(quoted)
  if (retried) return { ...retried, lenient: true }
  return { values: readLines(frontmatter), lenient: true, ...topLevelLines(frontmatter) }
}

/** Past this many `[` and `{` open at once, the frontmatter is read line by line. */
export const FLOW_DEPTH = 64

/** The deepest `[` / `{` nesting in the text, quotes not considered (an upper bound), in one pass. */
function flowDepth(text: string): number {
  let depth = 0
  let most = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x5b || c === 0x7b) most = Math.max(most, ++depth)
    else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--
  }
  return most
}

function readYaml(text: string): Frontmatter | undefined {
  const lines = new LineCounter()
  try {
    const doc = parseDocument(text, {
      schema: 'failsafe',
      uniqueKeys: false,
      lineCounter: lines,
    })
    if (doc.errors.length || !isMap(doc.contents)) return undefined
    const keyLines = new Map<string, number>()
    const duplicates: Frontmatter['duplicates'] = []
    doc.contents.items = doc.contents.items.filter((pair) => {
      const key = String(isScalar(pair.key) ? pair.key.value : pair.key)
      const line = lines.linePos(isScalar(pair.key) ? (pair.key.range?.[0] ?? 0) : 0).line
      const first = keyLines.get(key)
      if (first === undefined) keyLines.set(key, line)
      else duplicates.push({ key, line, first })
      return first === undefined
    })
    const values = doc.toJS({ maxAliasCount: 50 }) as Record<string, unknown>
    return { values, lenient: false, keyLines, duplicates }
  } catch {
    return undefined
  }
}

/** The keys at the start of a line, for frontmatter that YAML refuses. */
function topLevelLines(frontmatter: string): Pick<Frontmatter, 'keyLines' | 'duplicates'> {
  const keyLines = new Map<string, number>()
  const duplicates: Frontmatter['duplicates'] = []
  frontmatter.split('\n').forEach((text, i) => {
    const key = /^([A-Za-z0-9_-]+)\s*:/.exec(text)?.[1]
    if (!key) return
    const first = keyLines.get(key)
    if (first === undefined) keyLines.set(key, i + 1)
    else duplicates.push({ key, line: i + 1, first })
  })
  return { keyLines, duplicates }
}
