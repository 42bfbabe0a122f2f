/**
 * policy: permission rules for every tool call, in the manner of Claude Code's permission rules.
 * `deny`, `ask` and `allow` hold rules; a rule is a tool-name glob (`mcp__github__*`) or an object
 * with a `tool` glob and conditions on `source` (glob) and `risk`. Rules are evaluated deny → ask
 * → allow, the first match wins; a tool no rule matches asks when its risk is in `askRisks`
 * (high and critical by default) and is allowed otherwise. A bare deny (a plain glob) also hides
 * the tool from listings, so a model never sees it.
 */
import { z } from 'zod'
import { definePlugin, globToRegExp, type PreDecision, type RegisteredTool } from 'yoke'

const risk = z.enum(['low', 'medium', 'high', 'critical'])
const rule = z.union([
  z.string().min(1),
  z
    .object({
      tool: z.string().min(1).default('*'),
      source: z.string().min(1).optional(),
      risk: z.union([risk, z.array(risk)]).optional(),
    })
    .strict(),
])
type Rule = z.output<typeof rule>

const matches = (r: Rule, tool: RegisteredTool) => {
  if (typeof r === 'string') return globToRegExp(r).test(tool.name)
  if (!globToRegExp(r.tool).test(tool.name)) return false
  if (r.source && !globToRegExp(r.source).test(tool.source)) return false
  return !r.risk || [r.risk].flat().includes(tool.risk)
}

const describe = (list: string, r: Rule) =>
  `the policy rule ${list}: ${typeof r === 'string' ? r : JSON.stringify(r)}`

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
    })
    .strict(),
  apply(ctx, config) {
    const decide = (tool: RegisteredTool): PreDecision => {
      const denied = config.deny.find((r) => matches(r, tool))
      if (denied) return { kind: 'deny', reason: `denied by ${describe('deny', denied)}` }
      const asked = config.ask.find((r) => matches(r, tool))
      if (asked) return { kind: 'ask', reason: `${describe('ask', asked)} asks first` }
      if (config.allow.some((r) => matches(r, tool))) return { kind: 'allow' }
      if (config.askRisks.includes(tool.risk))
        return { kind: 'ask', reason: `${tool.name} is ${tool.risk} risk` }
      return { kind: 'allow' }
    }
    // first of the pre-execute taps, so other plugins see (and may tighten) the policy's decision
    ctx.tap(
      ctx.runtime.hooks.preExecute,
      'policy',
      (decision, call) => (call.tool ? decide(call.tool) : decision),
      { stage: -100 },
    )
    const hidden = config.deny.filter((r): r is string => typeof r === 'string')
    if (hidden.length)
      ctx.tap(ctx.runtime.hooks.visible, 'policy', (tools) =>
        tools.filter((t) => !hidden.some((g) => globToRegExp(g).test(t.name))),
      )
  },
})
