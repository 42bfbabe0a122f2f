/**
 * @module policy/claude
 * Claude Code's permission rules (`permissions.allow`, `ask`, `deny` in `.claude/settings.json`
 * and `.claude/settings.local.json`) as policy rules. A rule is `Tool` or `Tool(specifier)`;
 * `Tool(*)` and `Tool()` are the bare tool. MCP rules carry over as name globs, since yoke names MCP
 * tools `mcp__<server>__<tool>` too (a long name is cut, but its `mcp__<server>__` prefix stays):
 * `mcp__server` and `mcp__server__*` are `mcp__server__*`, `mcp__server__tool` is itself. Any other specifier (`Bash(git commit:*)`,
 * `Read(./secrets/**)`, `WebFetch(domain:example.com)`, `mcp__s__t(param:value)`) looks at a
 * call's arguments, which yoke's rules cannot: such a rule is reported with why, never widened to
 * the whole tool or dropped quietly.
 */
import { LineCounter, parseDocument, type Document } from 'yaml'
import { messageOf, readConfigText, YokeError } from 'yoke'
import type { Rule, RuleList } from './rules.ts'

export const RULE_LISTS: readonly RuleList[] = ['deny', 'ask', 'allow']

/** Claude Code's own tools: yoke has none of them, so a rule on one matches a yoke tool of that exact name only. */
const CLAUDE_BUILTINS = new Set([
  'Agent',
  'Bash',
  'BashOutput',
  'Edit',
  'ExitPlanMode',
  'Glob',
  'Grep',
  'KillShell',
  'LS',
  'MultiEdit',
  'NotebookEdit',
  'NotebookRead',
  'Read',
  'SlashCommand',
  'Skill',
  'Task',
  'TodoWrite',
  'WebFetch',
  'WebSearch',
  'Write',
])

export type Translation = { rule: Rule; note?: string } | { reason: string }

/**
 * One Claude Code permission rule as a policy rule, or why it has none.
 * @example fromClaudeRule('mcp__github') // { rule: 'mcp__github__*' }
 */
export function fromClaudeRule(text: string): Translation {
  const written = text.trim()
  const open = written.indexOf('(')
  const tool = open < 0 ? written : written.slice(0, open).trim()
  if (open >= 0 && !written.endsWith(')'))
    return { reason: 'it is not a permission rule: an opening "(" without the closing ")"' }
  const specifier = open < 0 ? undefined : written.slice(open + 1, -1).trim()
  if (!/^[A-Za-z0-9_*-]+$/.test(tool))
    return {
      reason: `it is not a permission rule: "${tool}" is not a tool name (letters, digits, _ and -)`,
    }
  if (specifier !== undefined && specifier !== '' && specifier !== '*')
    return { reason: specifierReason(tool, specifier) }
  const mcp = /^mcp__(.+?)(?:__(.+))?$/.exec(tool)
  if (mcp) {
    const [, server, name] = mcp
    if (server!.includes('*'))
      return {
        reason: `a wildcard in the server name (${server}) has no Claude Code meaning; name the server`,
      }
    // a plain glob on the name, as yoke names MCP tools: a deny of it hides the tools too
    return { rule: !name ? `${tool}__*` : tool }
  }
  if (tool.includes('*'))
    return {
      reason: `Claude Code takes no wildcard in a tool name (only in mcp__server__*); write the tools out`,
    }
  return CLAUDE_BUILTINS.has(tool)
    ? {
        rule: tool,
        note: `${tool} is a Claude Code tool: it matches only a yoke tool named exactly ${tool}`,
      }
    : { rule: tool }
}

/** Why a rule with an argument specifier cannot be a yoke rule, in the words of its tool. */
function specifierReason(tool: string, specifier: string): string {
  const what =
    tool === 'Bash'
      ? `the command line (${specifier})`
      : /^(Read|Edit|Write|MultiEdit|NotebookEdit|Glob|Grep|LS)$/.test(tool)
        ? `the file path (${specifier})`
        : tool === 'WebFetch'
          ? `the URL's ${specifier.startsWith('domain:') ? 'domain' : 'address'} (${specifier})`
          : `the call's arguments (${specifier})`
  return `it looks at ${what}, and yoke's policy rules match tools, not their arguments: as a yoke rule it would cover every ${tool} call (wider) or none (narrower), so it is left out; write it as a hook (shell-hooks before_tool_call) or as a rule on the whole tool`
}

export interface Position {
  file: string
  line: number
  col: number
}

/** One rule of a settings file: where it is, and its yoke rule or why it has none. */
export interface ImportedRule {
  list: RuleList
  /** the rule as Claude Code reads it */
  claude: string
  at: Position
  /** the policy rule; absent when there is none (see reason) */
  rule?: Rule
  /** why it has no yoke equivalent */
  reason?: string
  /** a caveat on a rule that did carry over */
  note?: string
}

export interface SettingsRead {
  file: string
  rules: ImportedRule[]
  /** what makes the file unusable (then `rules` is empty): not JSON, not an object */
  error?: Position & { message: string }
  /** entries that are not strings, lists that are not lists: skipped */
  warnings: Array<Position & { message: string }>
}

/**
 * Reads one Claude Code settings file's permission rules; a missing file has none. It is read as
 * configs are (readConfigText): a regular file of at most 1 MiB, so a FIFO or a device in its
 * place is an error here, never a read that blocks.
 */
export function readClaudeSettings(file: string): SettingsRead {
  let text: string
  try {
    text = readConfigText(file)
  } catch (err) {
    if (err instanceof YokeError && err.code === 'CONFIG_NOT_FOUND')
      return { file, rules: [], warnings: [] }
    return {
      file,
      rules: [],
      warnings: [],
      error: { file, line: 1, col: 1, message: `cannot read it: ${messageOf(err)}` },
    }
  }
  return parseClaudeSettings(text, file)
}

/** The permission rules of a settings file's text (JSON; positions from the same text read as YAML). */
export function parseClaudeSettings(text: string, file: string): SettingsRead {
  text = text.replace(/^\uFEFF/, '')
  const lines = new LineCounter()
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false })
  const at = (offset: number): Position => ({ file, ...lines.linePos(offset) })
  const nodeAt = (path: (string | number)[]): Position => {
    const usable = doc.errors.length ? undefined : (doc as Document)
    for (let p = path; p.length; p = p.slice(0, -1)) {
      const range = (usable?.getIn(p, true) as { range?: [number, number, number] } | undefined)
        ?.range
      if (range) return at(range[0])
    }
    return at(0)
  }
  const result: SettingsRead = { file, rules: [], warnings: [] }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    const message = messageOf(err)
    const offset = jsonErrorOffset(message, text) ?? doc.errors[0]?.pos[0] ?? 0
    // V8 quotes the text around the error, newlines included: the report stays on one line
    return {
      ...result,
      error: { ...at(offset), message: `not valid JSON: ${message.replace(/\n/g, '\\n')}` },
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ...result, error: { ...at(0), message: 'a settings file is a JSON object' } }
  const permissions = (value as { permissions?: unknown }).permissions
  if (permissions === undefined) return result
  if (typeof permissions !== 'object' || permissions === null || Array.isArray(permissions))
    return {
      ...result,
      error: { ...nodeAt(['permissions']), message: '"permissions" must be an object' },
    }
  for (const list of RULE_LISTS) {
    const entries = (permissions as Record<string, unknown>)[list]
    if (entries === undefined) continue
    if (!Array.isArray(entries)) {
      result.warnings.push({
        ...nodeAt(['permissions', list]),
        message: `permissions.${list} is not a list; it is skipped`,
      })
      continue
    }
    entries.forEach((entry, i) => {
      const where = nodeAt(['permissions', list, i])
      if (typeof entry !== 'string' || !entry.trim()) {
        result.warnings.push({
          ...where,
          message: `permissions.${list}[${i}] is not a rule (a non-empty string); it is skipped`,
        })
        return
      }
      const translated = fromClaudeRule(entry)
      result.rules.push({ list, claude: entry.trim(), at: where, ...translated })
    })
  }
  result.warnings.sort((a, b) => a.line - b.line || a.col - b.col)
  return result
}

/**
 * Where JSON.parse stopped. Node 20 names a position for some errors; for an unexpected token it
 * quotes up to 10 characters either side instead (`..."` marks a cut), which finds it in the text.
 */
function jsonErrorOffset(message: string, text: string): number | undefined {
  const position = /position (\d+)/.exec(message)
  if (position) return Number(position[1])
  if (/end of JSON input/.test(message)) return text.length
  const quoted =
    /^Unexpected token '([\s\S]{1,2})', (\.\.\.)?"([\s\S]*)"(\.\.\.)? is not valid JSON$/.exec(
      message,
    )
  if (!quoted) return undefined
  const [, token, before, snippet, after] = quoted
  const start = text.indexOf(snippet!)
  if (start < 0) return undefined
  if (before) return start + 10
  if (after) return start + snippet!.length - 10
  const inside = snippet!.indexOf(token!)
  return inside < 0 ? undefined : start + inside
}

/** `file:line:col` */
export const located = (p: Position) => `${p.file}:${p.line}:${p.col}`
