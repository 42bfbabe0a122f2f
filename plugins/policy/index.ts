/**
 * policy: permission rules for every tool call, in the manner of Claude Code's permission rules.
 * `deny`, `ask` and `allow` hold rules; a rule is a tool-name glob (`mcp__github__*`) or an object
 * with a `tool` glob and conditions on `source` (glob) and `risk`. Rules are evaluated deny → ask
 * → allow, the first match wins; a tool no rule matches asks when its risk is in `askRisks`
 * (high and critical by default) and is allowed otherwise. A bare deny (a plain glob) also hides
 * the tool from listings, so a model never sees it. `claudeSettings` adds the permission rules of Claude
 * Code settings files, read live (see claude.ts for what carries over).
 */
import { isAbsolute, join, relative, resolve } from 'node:path'
import { z } from 'zod'
import { definePlugin, YokeError, type PreDecision, type RegisteredTool } from 'yoke'
import { located, readClaudeSettings, type SettingsRead } from './claude.ts'
import { describeRule, matches, risk, rule, type Rule, type RuleList } from './rules.ts'
import './errors.ts'

type Rules = Record<RuleList, Rule[]>

export default definePlugin({
  name: 'policy',
  inject: ['runtime'],
  config: z
    .object({
      allow: z.array(rule).default([]),
      ask: z.array(rule).default([]),
      deny: z.array(rule).default([]),
      /** risks that ask unless an allow rule matches */
      askRisks: z.array(risk).default(['high', 'critical']),
      /** Claude Code settings files whose permission rules apply too (relative: to the project), watched */
      claudeSettings: z.array(z.string().min(1)).default([]),
    })
    .strict(),
  // a cloned project may tighten the policy (ask, deny) but not loosen it before `yoke trust`
  ignoredUntilTrusted: () => ['allow', 'askRisks', 'claudeSettings'],
  apply(ctx, config) {
    const project = ctx.get('project')
    const projectDir = project?.dir ?? process.cwd()
    const files = config.claudeSettings.map((f) => (isAbsolute(f) ? f : resolve(projectDir, f)))
    /** file → the rules last read from it (a broken edit keeps them) */
    const fromFiles = new Map<string, Rules>()
    let rules: Rules = { allow: config.allow, ask: config.ask, deny: config.deny }
    // a settings file inside a project not trusted yet is the project's: its allow rules wait
    const untrusted = (file: string) => {
      const verdict = project?.trusted?.() ?? true
      return verdict !== true && isInside(projectDir, file) ? verdict : undefined
    }
    const ignored = new Set<string>()

    const readAll = () => {
      for (const file of files) {
        const read = readClaudeSettings(file)
        report(read)
        if (read.error) continue
        const found = collect(read)
        const why = found.allow.length ? untrusted(file) : undefined
        if (why && !ignored.has(file))
          ctx.logger.warn(
            `${file}: its ${found.allow.length} allow rule(s) are not applied: ${why} (\`yoke trust\` applies them)`,
          )
        if (why) ignored.add(file)
        else ignored.delete(file)
        fromFiles.set(file, why ? { ...found, allow: [] } : found)
      }
      const lists = [...fromFiles.values()]
      rules = {
        allow: [...config.allow, ...lists.flatMap((l) => l.allow)],
        ask: [...config.ask, ...lists.flatMap((l) => l.ask)],
        deny: [...config.deny, ...lists.flatMap((l) => l.deny)],
      }
    }
    const report = (read: SettingsRead) => {
      if (read.error)
        ctx.logger.error(
          `the permission rules of ${read.file} are not read again`,
          new YokeError(
            'CLAUDE_SETTINGS_INVALID',
            { file: read.file, reason: read.error.message },
            { file: read.file, line: read.error.line, col: read.error.col },
          ),
        )
      for (const w of read.warnings) ctx.logger.warn(`${located(w)}: ${w.message}`)
      for (const r of read.rules.filter((r) => r.reason))
        ctx.logger.warn(
          `${located(r.at)}: ${r.list} rule ${r.claude} has no yoke equivalent and is not applied: ${r.reason}`,
        )
    }

    const decide = (tool: RegisteredTool): PreDecision => {
      const denied = rules.deny.find((r) => matches(r, tool))
      if (denied) return { kind: 'deny', reason: `denied by ${describeRule('deny', denied)}` }
      const asked = rules.ask.find((r) => matches(r, tool))
      if (asked) return { kind: 'ask', reason: `${describeRule('ask', asked)} asks first` }
      if (rules.allow.some((r) => matches(r, tool))) return { kind: 'allow' }
      if (config.askRisks.includes(tool.risk))
        return { kind: 'ask', reason: `${tool.name} is ${tool.risk} risk` }
      return { kind: 'allow' }
    }
    if (files.length) {
      readAll()
      // and the trust store: `yoke trust` applies the project's allow rules, --revoke drops them
      const store = project && files.some((f) => isInside(projectDir, f))
      ctx.watch(store ? [...files, join(project.home, 'trust.json')] : files, () => readAll())
    }
    // first of the pre-execute taps, so other plugins see (and may tighten) the policy's decision
    ctx.tap(
      ctx.runtime.hooks.preExecute,
      'policy',
      (decision, call) => (call.tool ? decide(call.tool) : decision),
      { stage: -100 },
    )
    // a bare deny (a plain glob) also hides the tools it names, as Claude Code's bare deny does
    ctx.tap(ctx.runtime.hooks.visible, 'policy', (tools) => {
      const hidden = rules.deny.filter((r): r is string => typeof r === 'string')
      return hidden.length ? tools.filter((t) => !hidden.some((g) => matches(g, t))) : tools
    })
  },
})

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
