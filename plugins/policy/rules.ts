/**
 * @module policy/rules
 * A policy rule and what it matches: a tool-name glob, or `{ tool, source, risk }`. yoke's rules
 * look at the tool (its name, where it comes from, its risk), never at a call's arguments.
 */
import { z } from 'zod'
import { globToRegExp, type RegisteredTool } from 'yoke'

export const risk = z.enum(['low', 'medium', 'high', 'critical'])

export const rule = z.union([
  z.string().min(1),
  z
    .object({
      tool: z.string().min(1).default('*'),
      source: z.string().min(1).optional(),
      risk: z.union([risk, z.array(risk)]).optional(),
    })
    .strict(),
])
export type Rule = z.output<typeof rule>

export type RuleList = 'allow' | 'ask' | 'deny'

export const matches = (r: Rule, tool: Pick<RegisteredTool, 'name' | 'source' | 'risk'>) => {
  if (typeof r === 'string') return globToRegExp(r).test(tool.name)
  if (!globToRegExp(r.tool).test(tool.name)) return false
  if (r.source && !globToRegExp(r.source).test(tool.source)) return false
  return !r.risk || [r.risk].flat().includes(tool.risk)
}

export const describeRule = (list: string, r: Rule) =>
  `the policy rule ${list}: ${typeof r === 'string' ? r : JSON.stringify(r)}`
