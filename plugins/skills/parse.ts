/**
 * Reading one SKILL.md: the frontmatter (a real YAML parser first; on failure, octos-style
 * `key: value` lines), the body, and the spec checks. octos's bugs are not copied: a `----` line
 * does not close the frontmatter, `#` starts a comment only after whitespace (`C# dev` survives),
 * quotes are removed, and `[a, b]` is a list.
 */
import { parse as parseYaml } from 'yaml'

export interface Skill {
  /** the frontmatter name, else the directory name: what the catalog lists and skill_read takes */
  name: string
  dirName: string
  /** the skill's directory and its SKILL.md, absolute */
  dir: string
  file: string
  /** the skills directory it was found in */
  root: string
  /** the skill directory's real path when it was indexed: skill_read reads only inside it */
  realDir?: string
  description: string
  body: string
  license?: string
  compatibility?: string
  metadata?: Record<string, string>
  allowedTools?: string[]
  version?: string
  author?: string
  always: boolean
  requiresBins: string[]
  requiresEnv: string[]
  /** a manifest.json beside SKILL.md: the package also brings tools */
  hasTools: boolean
  /** spec violations: the skill loads, with these warnings */
  warnings: string[]
  /** set by the index: whether requires_bins / requires_env are met, and if not, why */
  available: boolean
  why?: string
}

/** A SKILL.md that could not be loaded, and where. */
export interface SkillProblem {
  file: string
  line: number
  message: string
}

const NAME_RULE = /^[a-z0-9]+(-[a-z0-9]+)*$/

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

/** The frontmatter's fields. YAML's failsafe schema keeps every scalar as the text written (1.10 stays 1.10). */
function frontmatterValues(frontmatter: string): {
  values: Record<string, unknown>
  lenient: boolean
} {
  const asYaml = (text: string) => {
    try {
      const parsed = parseYaml(text, { schema: 'failsafe', maxAliasCount: 50, uniqueKeys: false })
      return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
        ? (parsed as Record<string, unknown>)
        : undefined
    } catch {
      return undefined
    }
  }
  const direct = asYaml(frontmatter)
  if (direct) return { values: direct, lenient: false }
  // the spec's client guide: quote the values of `key: a: b` lines and try YAML again
  const quoted = frontmatter.replace(
    /^([A-Za-z0-9_-]+):[ \t]+([^'"[{|>\s].*:\s.*)$/gm,
    (_, key: string, value: string) => `${key}: ${JSON.stringify(value.trim())}`,
  )
  const retried = asYaml(quoted)
  if (retried) return { values: retried, lenient: true }
  return { values: readLines(frontmatter), lenient: true }
}

/** `[]`, `""`, `~` and empty mean absent. */
function present(value: unknown): unknown {
  if (value === null || value === undefined) return undefined
  if (typeof value === 'string') {
    const v = value.trim()
    return v === '' || v === '[]' || v === '~' || v === 'null' || v === '""' || v === "''"
      ? undefined
      : v
  }
  if (Array.isArray(value) && value.length === 0) return undefined
  return value
}

/** Text fields take text only: a map or a list where text belongs counts as absent. */
const text = (v: unknown) => {
  const value = present(v)
  return typeof value === 'string' ? value : undefined
}

/** A comma-separated string, a YAML list or a flow list written as text: all become a list. */
function list(v: unknown): string[] {
  const value = present(v)
  if (value === undefined) return []
  const items = Array.isArray(value)
    ? value.filter((x) => typeof x === 'string')
    : typeof value === 'string'
      ? value.replace(/^\[(.*)\]$/, '$1').split(',')
      : []
  return items.map((s) => s.trim().replace(/^(["'])(.*)\1$/, '$2')).filter(Boolean)
}

/** allowed-tools: a list, or a string of space- or comma-separated entries like `Bash(git add:*) Read`. */
function toolList(v: unknown): string[] | undefined {
  const value = present(v)
  if (value === undefined) return undefined
  if (Array.isArray(value)) return value.filter((x): x is string => typeof x === 'string')
  return typeof value === 'string' ? (value.match(/[^\s,(]+(\([^)]*\))?/g) ?? []) : undefined
}

/** Parses a SKILL.md; returns the skill, or the problem that keeps it out. */
export function parseSkill(
  content: string,
  location: { file: string; dir: string; dirName: string; root: string; hasTools: boolean },
): Skill | SkillProblem {
  const split = splitFrontmatter(content)
  if (split && split.frontmatter.length > 64 * 1024)
    return {
      file: location.file,
      line: split.line,
      message: `the frontmatter is ${split.frontmatter.length} characters; at most 65,536 are read`,
    }
  if (!split)
    return {
      file: location.file,
      line: 1,
      message: 'no frontmatter: a SKILL.md starts with a --- block holding name and description',
    }
  const { values, lenient } = frontmatterValues(split.frontmatter)
  const description = text(values.description)
  if (!description) {
    const at = split.frontmatter.split('\n').findIndex((l) => /^\s*description\s*:/.test(l))
    return {
      file: location.file,
      line: split.line + Math.max(0, at),
      message: 'no description: the catalog needs one to tell when to use the skill',
    }
  }
  const name = text(values.name) ?? location.dirName
  const warnings: string[] = []
  if (lenient)
    warnings.push(
      'the frontmatter is not valid YAML; it was read line by line (quote values that contain ": ")',
    )
  if (!NAME_RULE.test(name) || name.length > 64)
    warnings.push(
      `name "${name}" breaks the spec: 1-64 of a-z, 0-9 and single hyphens, not at either end`,
    )
  if (name !== location.dirName)
    warnings.push(`name "${name}" differs from its directory "${location.dirName}"`)
  if (description.length > 1024)
    warnings.push(`the description is ${description.length} characters; the spec allows 1,024`)
  const compatibility = text(values.compatibility)
  if (compatibility && compatibility.length > 500)
    warnings.push(`compatibility is ${compatibility.length} characters; the spec allows 500`)
  const metadata = present(values.metadata)
  return {
    ...location,
    name,
    description,
    body: split.body,
    license: text(values.license),
    compatibility,
    metadata:
      metadata && typeof metadata === 'object' && !Array.isArray(metadata)
        ? Object.fromEntries(Object.entries(metadata).filter(([, v]) => typeof v === 'string'))
        : undefined,
    allowedTools: toolList(values['allowed-tools']),
    version: text(values.version),
    author: text(values.author),
    always: values.always === true || text(values.always) === 'true',
    requiresBins: list(values.requires_bins),
    requiresEnv: list(values.requires_env),
    warnings,
    available: true,
  }
}

export const isProblem = (x: Skill | SkillProblem): x is SkillProblem =>
  'message' in x && !('name' in x)
