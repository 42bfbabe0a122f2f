/**
 * @module claude-hooks/rules
 * A handler's `if`: one permission rule, as Claude Code writes them (`Bash(git *)`, `Edit(*.ts)`,
 * `WebFetch(domain:example.com)`, `mcp__github__create_issue`), tested against a tool call. As in
 * Claude Code it is a filter, not a gate: where the call cannot be read (a shell command that does
 * not parse), it fails open and the handler runs.
 */
import { isAbsolute, relative, resolve } from 'node:path'
import { homedir } from 'node:os'
import { RE2JS } from 're2js'

/** What a rule is tested against: the call's yoke name, the Claude Code names mapped to it, its arguments. */
export interface RuleSubject {
  names: readonly string[]
  args: Readonly<Record<string, unknown>>
  /** the project directory: relative path patterns are read from it */
  cwd: string
}

export type Rule = (subject: RuleSubject) => boolean

const SHELL_TOOLS = new Set(['Bash', 'PowerShell'])
const PATH_TOOLS = new Set(['Edit', 'Write', 'Read', 'MultiEdit', 'NotebookEdit', 'Glob', 'Grep'])

/**
 * Compiles one rule; a string is what is wrong with it. `Tool` alone takes every call of that tool;
 * `mcp__server` every tool of that server.
 */
export function compileRule(text: string): Rule | string {
  const m = /^([A-Za-z0-9_.*-]+)(?:\((.*)\))?$/s.exec(text.trim())
  if (!m) return `"if" is one permission rule, Tool or Tool(pattern) (${JSON.stringify(text)})`
  const [, tool, spec] = m as unknown as [string, string, string | undefined]
  const named = toolMatcher(tool)
  if (spec === undefined || spec === '' || spec === '*') return (s) => s.names.some(named)
  const test = SHELL_TOOLS.has(tool)
    ? shellRule(spec)
    : PATH_TOOLS.has(tool)
      ? pathRule(spec)
      : tool === 'WebFetch' && spec.startsWith('domain:')
        ? domainRule(spec.slice(7))
        : anyStringRule(spec)
  return (s) => s.names.some(named) && test(s)
}

/** `mcp__server` (no tool part) and `mcp__server__*` take every tool of the server. */
function toolMatcher(tool: string): (name: string) => boolean {
  if (/^mcp__[^_]+(?:_[^_]+)*$/.test(tool) && !tool.slice(5).includes('__'))
    return (name) => name.startsWith(`${tool}__`)
  if (tool.includes('*')) {
    const re = RE2JS.compile(`^${globBody(tool, '.*')}$`)
    return (name) => re.matches(name)
  }
  return (name) => name === tool
}

/** A glob as a regex body: `*` is `star` (any text, or any text but `/`), `**` any text. */
function globBody(glob: string, star: string): string {
  let out = ''
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!
    if (c === '*' && glob[i + 1] === '*') {
      i++
      // `**/` is any number of directories, none included
      if (glob[i + 1] === '/') {
        i++
        out += '(?:.*/)?'
      } else out += '.*'
    } else if (c === '*') out += star
    else if (c === '?') out += '[^/]'
    else out += RE2JS.quote(c)
  }
  return out
}

/**
 * Bash rules: each subcommand (split on `&&`, `||`, `;`, `|`, newlines; `$(…)` and backticks
 * read too), its leading `VAR=value` assignments stripped, is matched against the pattern, where
 * `*` is any text and a trailing ` *` (or the older `:*`) also takes the bare command. A pattern
 * naming more than the command runs anyway on `$(…)`, backticks or `$VAR` (Claude Code's rule);
 * a command that does not parse runs the handler (fails open).
 */
function shellRule(spec: string): (s: RuleSubject) => boolean {
  const pattern = spec.endsWith(':*') ? `${spec.slice(0, -2)} *` : spec
  const bare = pattern.endsWith(' *') ? pattern.slice(0, -2) : undefined
  const re = RE2JS.compile(`^${globBody(pattern, '.*')}$`, RE2JS.DOTALL)
  const bareRe = bare === undefined ? undefined : RE2JS.compile(`^${globBody(bare, '.*')}$`)
  const moreThanName = /\s/.test(pattern.replace(/\s\*$/, '').trim())
  return ({ args }) => {
    const command = args.command
    if (typeof command !== 'string') return true // no command to read: fail open
    const parts = subcommands(command)
    if (!parts) return true
    if (moreThanName && /\$\(|`|\$[A-Za-z_{]/.test(command)) return true
    return parts.some((p) => re.matches(p) || !!bareRe?.matches(p))
  }
}

/**
 * A shell command's simple commands, or undefined when it does not parse (an open quote or
 * substitution). Quotes are kept in the text; operators inside quotes do not split.
 */
export function subcommands(command: string): string[] | undefined {
  const out: string[] = []
  const nested: string[] = []
  let cur = ''
  let quote: string | undefined
  const flush = () => {
    const stripped = cur
      .trim()
      .replace(/^(?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|"[^"]*"|\S*)\s+)+/, '')
    if (stripped) out.push(stripped)
    cur = ''
  }
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!
    if (quote) {
      if (c === '\\' && quote === '"') {
        cur += c + (command[i + 1] ?? '')
        i++
      } else {
        if (c === quote) quote = undefined
        cur += c
      }
      continue
    }
    if (c === '\\') {
      cur += c + (command[i + 1] ?? '')
      i++
    } else if (c === "'" || c === '"') {
      quote = c
      cur += c
    } else if (c === '`') {
      const end = command.indexOf('`', i + 1)
      if (end < 0) return undefined
      nested.push(command.slice(i + 1, end))
      cur += command.slice(i, end + 1)
      i = end
    } else if (c === '$' && command[i + 1] === '(') {
      const end = closing(command, i + 1)
      if (end < 0) return undefined
      nested.push(command.slice(i + 2, end))
      cur += command.slice(i, end + 1)
      i = end
    } else if (c === ';' || c === '\n' || c === '|' || c === '&') {
      flush()
      if ((c === '|' || c === '&') && command[i + 1] === c) i++
    } else cur += c
  }
  if (quote) return undefined
  flush()
  for (const inner of nested) {
    const more = subcommands(inner)
    if (!more) return undefined
    out.push(...more)
  }
  return out
}

/** The index of the `)` that closes the `(` at `open`, quotes heeded; -1 when none does. */
function closing(text: string, open: number): number {
  let depth = 0
  let quote: string | undefined
  for (let i = open; i < text.length; i++) {
    const c = text[i]!
    if (quote) {
      if (c === quote) quote = undefined
      else if (c === '\\') i++
    } else if (c === "'" || c === '"') quote = c
    else if (c === '(') depth++
    else if (c === ')' && --depth === 0) return i
  }
  return -1
}

/**
 * File rules, gitignore-style: `//abs` is absolute, `~/` the home directory, `/x` and `x/y` are
 * from the project directory, a pattern without `/` matches a file name at any depth.
 */
function pathRule(spec: string): (s: RuleSubject) => boolean {
  return ({ args, cwd }) => {
    const path = [args.file_path, args.path, args.notebook_path].find((p) => typeof p === 'string')
    if (typeof path !== 'string') return true // nothing to read: fail open
    const full = resolve(cwd, path)
    const [base, glob] = spec.startsWith('//')
      ? ['/', spec.slice(2)]
      : spec.startsWith('~/')
        ? [homedir(), spec.slice(2)]
        : [
            cwd,
            spec.startsWith('/')
              ? spec.slice(1)
              : spec.startsWith('./')
                ? spec.slice(2)
                : spec.includes('/')
                  ? spec
                  : `**/${spec}`,
          ]
    const rel = relative(base, full)
    if (rel.startsWith('..') || isAbsolute(rel)) return false
    return RE2JS.compile(`^${globBody(glob, '[^/]*')}$`).matches(rel)
  }
}

function domainRule(domain: string): (s: RuleSubject) => boolean {
  return ({ args }) => {
    if (typeof args.url !== 'string') return true
    let host: string
    try {
      host = new URL(args.url).hostname
    } catch {
      return true
    }
    return domain.startsWith('*.') ? host.endsWith(domain.slice(1)) : host === domain
  }
}

/** Any other tool: the pattern (`*` any text) matched against each of its string arguments. */
function anyStringRule(spec: string): (s: RuleSubject) => boolean {
  const re = RE2JS.compile(`^${globBody(spec, '.*')}$`, RE2JS.DOTALL)
  return ({ args }) => {
    const strings = Object.values(args).filter((v): v is string => typeof v === 'string')
    return !strings.length || strings.some((v) => re.matches(v))
  }
}
