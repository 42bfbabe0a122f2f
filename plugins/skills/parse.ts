/**
 * Reading one SKILL.md: the frontmatter (a real YAML parser first; on failure, octos-style
 * `key: value` lines), the body, and the spec checks. octos's bugs are not copied: a `----` line
 * does not close the frontmatter, `#` starts a comment only after whitespace (`C# dev` survives),
 * quotes are removed, and `[a, b]` is a list. A key written twice keeps its first value, as
 * octos reads it.
 */
import { FLOW_DEPTH, readFrontmatter, splitFrontmatter } from './frontmatter.ts'
import {
  charCount,
  isUnknownKey,
  MAX_COMPATIBILITY_CHARS,
  MAX_DESCRIPTION_CHARS,
  nameViolations,
  unknownKeyMessage,
} from './spec.ts'

export { readLines, splitFrontmatter } from './frontmatter.ts'

export interface Skill {
  /**
   * what the catalog lists and skill_read takes: the frontmatter name, `<namespace>:<name>` when
   * its root has a namespace
   */
  name: string
  /** the namespace of the root it was found in (a Claude Code plugin's name), if any */
  namespace?: string
  /** the label of the root it was found in (who added it), if any */
  source?: string
  dirName: string
  /** the skill's directory and its SKILL.md, absolute */
  dir: string
  file: string
  /** the skills directory it was found in */
  root: string
  /** the skill directory's real path when it was indexed: skill_read reads only inside it */
  realDir?: string
  description: string
  /** Claude Code's `when_to_use`: when the model should reach for it (searched with the description) */
  whenToUse?: string
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
  /** everything the loader warns about: the violations, and notes the spec does not forbid */
  warnings: string[]
  /**
   * what the spec (and its validator skills-ref) rejects but yoke loads anyway, as the spec's
   * client guide asks; `yoke skills check` counts each as an error
   */
  violations: SkillViolation[]
  /** set by the index: whether requires_bins / requires_env are met, and if not, why */
  available: boolean
  why?: string
}

/** A SKILL.md that could not be loaded, and where (line 0: no line applies). */
export interface SkillProblem {
  file: string
  line: number
  message: string
  /** the label of the root it was found in, if any */
  source?: string
}

/** One rule of the spec that a loaded skill breaks, at a line of its SKILL.md. */
export interface SkillViolation {
  line: number
  message: string
}

/** Where a SKILL.md is, and how its root reads it. */
export interface SkillLocation {
  file: string
  dir: string
  dirName: string
  root: string
  hasTools: boolean
  /** a missing name is the directory's name, with a warning (Claude Code's rule for plugin skills) */
  nameFromDirectory?: boolean
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
  return typeof value === 'string' ? toolEntries(value) : undefined
}

/**
 * `Bash(git add:*) Read, Edit` → its entries: a run of characters other than space, comma and `(`,
 * with the parenthesised part that follows it up to the next `)`. Read in one pass: the regex
 * `[^\s,(]+(\([^)]*\))?` scanned to the end for every `(` left open (`a(a(a(…`: quadratic).
 */
function toolEntries(value: string): string[] {
  const out: string[] = []
  const lastClose = value.lastIndexOf(')')
  const stop = (c: string) => c === ',' || c === '(' || /\s/.test(c)
  let i = 0
  while (i < value.length) {
    if (stop(value[i]!)) {
      i++
      continue
    }
    const start = i
    while (i < value.length && !stop(value[i]!)) i++
    if (value[i] === '(' && i < lastClose) i = value.indexOf(')', i) + 1
    out.push(value.slice(start, i))
  }
  return out
}

/** Parses a SKILL.md; returns the skill, or the problem that keeps it out. */
export function parseSkill(content: string, location: SkillLocation): Skill | SkillProblem {
  const { nameFromDirectory, ...where } = location
  const problem = (line: number, message: string): SkillProblem => ({
    file: location.file,
    line,
    message,
  })
  const split = splitFrontmatter(content)
  if (split && split.frontmatter.length > 64 * 1024)
    return problem(
      split.line,
      `the frontmatter is ${split.frontmatter.length} characters; at most 65,536 are read`,
    )
  if (!split)
    return problem(
      1,
      content.split(/\r?\n/).filter((l) => l.trimEnd() === '---').length === 1 &&
        /^\uFEFF?\s*---[ \t]*\r?\n/.test(content)
        ? 'the frontmatter is not closed: end it with a "---" line before the instructions'
        : 'no frontmatter: a SKILL.md starts with a --- block holding name and description',
    )
  const read = readFrontmatter(split.frontmatter)
  const { values } = read
  const lineOf = (key: string) => split.line + (read.keyLines.get(key) ?? 1) - 1

  const always = values.always === true || text(values.always) === 'true'
  const description = text(values.description)
  if (!description && !always)
    return problem(
      lineOf('description'),
      'no description: the catalog needs one to tell when to use the skill',
    )
  const declared = text(values.name)
  if (declared === undefined && !nameFromDirectory)
    return problem(
      lineOf('name'),
      present(values.name) === undefined
        ? `no name: add "name: ${location.dirName}" (the spec requires it, equal to the directory's name)`
        : `the name is not text: write it as "name: ${location.dirName}"`,
    )
  const name = declared ?? location.dirName

  const violations = specViolations(content, split, read, {
    declared,
    name,
    dirName: location.dirName,
    description,
  })
  const compatibility = present(values.compatibility)
  const notes: string[] = []
  const metadata = textMap(values.metadata, notes)

  return {
    ...where,
    name,
    description: description ?? '',
    ...(text(values.when_to_use) ? { whenToUse: text(values.when_to_use) } : {}),
    body: split.body,
    license: text(values.license),
    compatibility: typeof compatibility === 'string' ? compatibility : undefined,
    metadata,
    allowedTools: toolList(values['allowed-tools']),
    version: text(values.version),
    author: text(values.author),
    always,
    requiresBins: list(values.requires_bins),
    requiresEnv: list(values.requires_env),
    warnings: [...violations.map((v) => v.message), ...notes],
    violations,
    available: true,
  }
}

/** What the Agent Skills spec rejects in a SKILL.md that yoke still loads (each at its line). */
function specViolations(
  content: string,
  split: { line: number },
  read: ReturnType<typeof readFrontmatter>,
  skill: { declared: string | undefined; name: string; dirName: string; description?: string },
): SkillViolation[] {
  const { values, lenient, tooDeep, keyLines, duplicates } = read
  const { declared, name, description } = skill
  const lineOf = (key: string) => split.line + (keyLines.get(key) ?? 1) - 1
  const violations: SkillViolation[] = []
  const violate = (line: number, message: string) => violations.push({ line, message })
  if (content.startsWith('\uFEFF') || split.line > 2)
    violate(
      1,
      'the file does not start with "---" (a byte-order mark or blank lines come first); skills-ref and other strict readers find no frontmatter',
    )
  if (tooDeep)
    violate(
      split.line,
      `the frontmatter nests "[" and "{" deeper than ${FLOW_DEPTH} levels; yoke read it line by line, not as YAML`,
    )
  else if (lenient)
    violate(
      split.line,
      'the frontmatter is not valid YAML; yoke read it leniently (quote values that contain ": ")',
    )
  for (const d of duplicates)
    violate(
      split.line + d.line - 1,
      `"${d.key}" is written twice (first on line ${split.line + d.first - 1}): the first value is used, as octos does, but YAML forbids duplicate keys`,
    )
  for (const key of keyLines.keys())
    if (isUnknownKey(key)) violate(lineOf(key), unknownKeyMessage(key))
  if (declared === undefined)
    violate(
      lineOf('name'),
      `no name: the directory's name "${name}" stands in, as Claude Code reads a plugin's skills; the spec requires one`,
    )
  else for (const m of nameViolations(name, skill.dirName)) violate(lineOf('name'), m)
  if (!description)
    violate(
      lineOf('description'),
      'no description: an always-on skill loads without one (its body is in every prompt, as octos does), but the spec requires one',
    )
  else if (charCount(String(values.description)) > MAX_DESCRIPTION_CHARS)
    violate(
      lineOf('description'),
      `the description is ${charCount(String(values.description))} characters; the spec allows 1,024`,
    )
  const compatibility = present(values.compatibility)
  if (compatibility !== undefined && typeof compatibility !== 'string')
    violate(lineOf('compatibility'), 'compatibility is not text: the spec wants a string')
  else if (compatibility && charCount(compatibility) > MAX_COMPATIBILITY_CHARS)
    violate(
      lineOf('compatibility'),
      `compatibility is ${charCount(compatibility)} characters; the spec allows 500`,
    )
  return violations
}

/** metadata: a map of text to text (the spec); anything else in it is left out, with a note. */
function textMap(value: unknown, notes: string[]): Record<string, string> | undefined {
  const map = present(value)
  if (map === undefined) return undefined
  if (typeof map !== 'object' || Array.isArray(map)) {
    notes.push('metadata is not a map of keys to text; it is ignored')
    return undefined
  }
  const out: Record<string, string> = {}
  for (const [key, v] of Object.entries(map as Record<string, unknown>)) {
    if (typeof v === 'string' || v === null) out[key] = v ?? ''
    else
      notes.push(
        `metadata "${key}" is a ${Array.isArray(v) ? 'list' : 'map'}, not text; it is left out (the spec maps keys to strings: quote it)`,
      )
  }
  return out
}

export const isProblem = (x: Skill | SkillProblem): x is SkillProblem =>
  'message' in x && !('name' in x)
