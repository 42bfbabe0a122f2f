/**
 * @module policy/policy
 * One running policy instance: the rules in effect (the config's, then those read from Claude Code
 * settings files) and the decision they make for a tool. A settings file inside a project not
 * trusted yet is the project's: its allow rules wait for `yoke trust`. A file that breaks keeps
 * the rules last read from it. Nothing here needs a composition: the rules are read when told.
 */
import { isAbsolute, relative, resolve } from 'node:path'
import { YokeError, type Logger, type PreDecision, type RegisteredTool } from 'yoke'
import { located, readClaudeSettings, type SettingsRead } from './claude.ts'
import { describeRule, matches, type Rule, type RuleList } from './rules.ts'
import './errors.ts'

export type Rules = Record<RuleList, Rule[]>

export interface PolicyConfig extends Rules {
  /** risks that ask unless an allow rule matches */
  askRisks: readonly RegisteredTool['risk'][]
  /** Claude Code settings files whose permission rules apply too (relative: to the project) */
  claudeSettings: readonly string[]
}

export interface PolicyHost {
  /** the project's directory: where relative settings files are, and which files are the project's */
  projectDir: string
  /** whether the project is trusted now: true, or why not */
  trusted(): true | string
  logger: Pick<Logger, 'warn' | 'error'>
}

export class Policy {
  /** the settings files read, absolute */
  readonly files: readonly string[]
  /** file → the rules last read from it (a broken edit keeps them) */
  readonly #fromFiles = new Map<string, Rules>()
  /** the files whose allow rules wait for trust (each said once, until it changes) */
  readonly #ignored = new Set<string>()
  /** the rules in effect */
  #rules: Rules

  constructor(
    readonly config: PolicyConfig,
    readonly host: PolicyHost,
  ) {
    this.files = config.claudeSettings.map((f) => (isAbsolute(f) ? f : resolve(host.projectDir, f)))
    this.#rules = { allow: config.allow, ask: config.ask, deny: config.deny }
  }

  get rules(): Readonly<Rules> {
    return this.#rules
  }

  /** Whether a settings file belongs to the project (its allow rules then wait for trust). */
  inProject(file: string): boolean {
    return isInside(this.host.projectDir, file)
  }

  /** (Re)reads the settings files and recomputes the rules; what is wrong is logged, never thrown. */
  read(): void {
    for (const file of this.files) {
      const read = readClaudeSettings(file)
      this.#report(read)
      if (read.error) continue
      const found = collect(read)
      const why = found.allow.length ? this.#untrusted(file) : undefined
      if (why && !this.#ignored.has(file))
        this.host.logger.warn(
          `${file}: its ${found.allow.length} allow rule(s) are not applied: ${why} (\`yoke trust\` applies them)`,
        )
      if (why) this.#ignored.add(file)
      else this.#ignored.delete(file)
      this.#fromFiles.set(file, why ? { ...found, allow: [] } : found)
    }
    const lists = [...this.#fromFiles.values()]
    const { config } = this
    this.#rules = {
      allow: [...config.allow, ...lists.flatMap((l) => l.allow)],
      ask: [...config.ask, ...lists.flatMap((l) => l.ask)],
      deny: [...config.deny, ...lists.flatMap((l) => l.deny)],
    }
  }

  /** deny → ask → allow, the first match wins; no match: ask for a risk in askRisks, else allow. */
  decide(tool: RegisteredTool): PreDecision {
    const rules = this.#rules
    const denied = rules.deny.find((r) => matches(r, tool))
    if (denied) return { kind: 'deny', reason: `denied by ${describeRule('deny', denied)}` }
    const asked = rules.ask.find((r) => matches(r, tool))
    if (asked) return { kind: 'ask', reason: `${describeRule('ask', asked)} asks first` }
    if (rules.allow.some((r) => matches(r, tool))) return { kind: 'allow' }
    if (this.config.askRisks.includes(tool.risk))
      return { kind: 'ask', reason: `${tool.name} is ${tool.risk} risk` }
    return { kind: 'allow' }
  }

  /** A bare deny (a plain glob) also hides the tools it names, as Claude Code's bare deny does. */
  visible<T extends Pick<RegisteredTool, 'name' | 'source' | 'risk'>>(tools: T[]): T[] {
    const hidden = this.#rules.deny.filter((r): r is string => typeof r === 'string')
    return hidden.length ? tools.filter((t) => !hidden.some((g) => matches(g, t))) : tools
  }

  /** why a file's allow rules wait: it is the project's, and the project is not trusted */
  #untrusted(file: string): string | undefined {
    const verdict = this.host.trusted()
    return verdict !== true && this.inProject(file) ? verdict : undefined
  }

  #report(read: SettingsRead) {
    const { logger } = this.host
    if (read.error)
      logger.error(
        `the permission rules of ${read.file} are not read again`,
        new YokeError(
          'CLAUDE_SETTINGS_INVALID',
          { file: read.file, reason: read.error.message },
          { file: read.file, line: read.error.line, col: read.error.col },
        ),
      )
    for (const w of read.warnings) logger.warn(`${located(w)}: ${w.message}`)
    for (const r of read.rules.filter((r) => r.reason))
      logger.warn(
        `${located(r.at)}: ${r.list} rule ${r.claude} has no yoke equivalent and is not applied: ${r.reason}`,
      )
  }
}

/** The rules that carried over, by list. */
function collect(read: SettingsRead): Rules {
  const out: Rules = { allow: [], ask: [], deny: [] }
  for (const r of read.rules) if (r.rule !== undefined) out[r.list].push(r.rule)
  return out
}

const isInside = (dir: string, file: string) => {
  const rel = relative(dir, file)
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)
}
