/**
 * The project's rules over versions: pins (the version and hash a capability must have), a
 * withdrawn list (versions no scope may use) and rollouts (a version only some scopes may use, the
 * rest once the rule is widened or removed). A rule names a tool (its name, a glob) or a provider
 * (`exec:<package>`, `mcp:<server>`, `repo:<name>`): a provider's rule covers all its tools.
 */
import { z } from 'zod'
import { globToRegExp } from 'yoke'
import { versionOf, type Capability } from './api.ts'

const id = z.string().min(1)
export const rulesConfig = {
  /** versions no scope may use: their tools are hidden and refused everywhere */
  withdrawn: z
    .array(z.object({ id, version: z.string().min(1), why: z.string().default('') }).strict())
    .default([]),
  /** versions only these scopes (globs over scope keys) may use, until the rule is widened or removed */
  rollout: z
    .array(
      z
        .object({ id, version: z.string().min(1), scopes: z.array(z.string().min(1)).min(1) })
        .strict(),
    )
    .default([]),
  /** what a capability must be: its version, and its content hash at that version */
  pins: z
    .array(
      z
        .object({ id, version: z.string().min(1).optional(), hash: z.string().min(1).optional() })
        .strict()
        .refine((p) => p.version || p.hash, 'a pin needs a version or a hash'),
    )
    .default([]),
}

type Rules = { [K in keyof typeof rulesConfig]: z.output<(typeof rulesConfig)[K]> }

/** Why a capability is refused, as the catalogue's code and parameters. */
export interface Refusal {
  code: 'CAPABILITY_WITHDRAWN' | 'CAPABILITY_NOT_ROLLED_OUT' | 'CAPABILITY_PIN_MISMATCH'
  params: Record<string, string>
  /** the rule's id and version, for the audit log */
  rule: string
}

/** `1.2.0` names that version; a hash (`sha256:ab12…`, or its hex digits, 6 or more) names content; `*` any. */
export function versionMatches(wanted: string, cap: { version?: string; hash: string }): boolean {
  if (wanted === '*' || wanted === cap.version || wanted === cap.hash) return true
  const hex = wanted.replace(/^sha256:/, '')
  return /^[0-9a-f]{6,}$/i.test(hex) && cap.hash.slice(7).startsWith(hex.toLowerCase())
}

export class Governance {
  constructor(readonly rules: Rules) {}

  get empty(): boolean {
    return !this.rules.withdrawn.length && !this.rules.rollout.length && !this.rules.pins.length
  }

  /**
   * Why `tool` (with its providers: a package or server, the dynamic plugin version that
   * registered it) may not be used from `scope`, or undefined. Pins first (content that is not what
   * was pinned is refused everywhere), then withdrawal, then rollout.
   */
  refusal(tool: Capability, providers: Capability[], scope: string): Refusal | undefined {
    const subjects = [tool, ...providers]
    const hits = <R extends { id: string }>(list: R[]) =>
      list.flatMap((rule) =>
        subjects.filter((s) => globToRegExp(rule.id).test(s.id)).map((s) => ({ rule, subject: s })),
      )
    for (const { rule, subject } of hits(this.rules.pins)) {
      const why = pinMismatch(tool, rule, subject)
      if (why) return why
    }
    for (const { rule, subject } of hits(this.rules.withdrawn))
      if (versionMatches(rule.version, subject))
        return {
          code: 'CAPABILITY_WITHDRAWN',
          params: {
            name: tool.id,
            rule: `${subject.id}@${versionOf(subject)}`,
            why: rule.why || 'no reason given',
          },
          rule: `${rule.id}@${rule.version}`,
        }
    for (const { rule, subject } of hits(this.rules.rollout)) {
      if (!versionMatches(rule.version, subject)) continue
      if (rule.scopes.some((g) => globToRegExp(g).test(scope))) continue
      return {
        code: 'CAPABILITY_NOT_ROLLED_OUT',
        params: {
          name: tool.id,
          rule: `${subject.id}@${versionOf(subject)}`,
          scopes: rule.scopes.join(', '),
          scope,
        },
        rule: `${rule.id}@${rule.version}`,
      }
    }
    return undefined
  }
}

/** The pin `rule` refusing `tool` because `subject` (the tool or a provider) differs from it. */
function pinMismatch(
  tool: Capability,
  rule: Rules['pins'][number],
  subject: Capability,
): Refusal | undefined {
  const differs =
    (rule.version !== undefined && subject.version !== rule.version) ||
    (rule.hash !== undefined && !versionMatches(rule.hash, { hash: subject.hash }))
  if (!differs) return undefined
  return {
    code: 'CAPABILITY_PIN_MISMATCH',
    params: {
      name: tool.id,
      id: subject.id,
      pinned: [rule.version && `version ${rule.version}`, rule.hash].filter(Boolean).join(' '),
      found: `${subject.version ? `version ${subject.version}` : 'unversioned'} ${subject.hash}`,
    },
    rule: `${rule.id}@${rule.version ?? rule.hash}`,
  }
}
