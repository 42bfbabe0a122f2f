/**
 * @module skills/report
 * What the skills plugin tells people: problems, warnings, shadowing and clashes in the log, and
 * its section of `yoke dev`'s summary.
 */
import { color, type SummarySection } from 'yoke/cli'
import type { HeldSkill } from './api.ts'
import type { Skill } from './parse.ts'
import type { Shadowing, SkillClash } from './skill-index.ts'
import type { SkillProblem } from './parse.ts'

/** What is reported: the skills in use, and what was left out (the index's, and contributed ones). */
export interface Reported {
  problems: readonly SkillProblem[]
  /** the skills in use (SkillIndex's `skills`, or all merged) */
  all?: readonly Skill[]
  skills?: readonly Skill[]
  shadowed: readonly Shadowing[]
  clashes: readonly SkillClash[]
}

/** Problems, warnings, shadowing and clashes go to the log (after a change, only those it `concerns`). */
export function report(
  index: Reported,
  logger: { info(m: string): void; warn(m: string): void; error(m: string): void },
  concerns: (file: string) => boolean = () => true,
) {
  for (const p of index.problems)
    if (concerns(p.file))
      logger.error(
        `${p.file}${p.line ? `:${p.line}` : ''}: skipped${p.source ? ` (${p.source})` : ''}: ${p.message}`,
      )
  for (const s of index.all ?? index.skills ?? [])
    for (const w of s.warnings) if (concerns(s.file)) logger.warn(`${s.file}: ${w}`)
  for (const s of index.shadowed)
    if (concerns(s.shadowed))
      logger.warn(`skill "${s.name}" in ${s.shadowed} is shadowed by ${s.winner}`)
  for (const c of index.clashes)
    if (c.skills.some((s) => concerns(s.file)))
      logger.info(
        `skill name "${c.name}" is in several namespaces; each keeps its own: ${c.skills.map((s) => s.name).join(', ')}`,
      )
}

/** The skills section of `yoke dev`'s summary and `yoke doctor` (`skills/summary`): the available ones, why the others are not, the held. */
export function summarySection(skills: Skill[], held: HeldSkill[]): SummarySection {
  const available = skills.filter((s) => s.available)
  const missing = skills.length - available.length
  return {
    title: 'skills',
    note: `${available.length} available${missing ? ` · ${missing} not` : ''}${held.length ? ` · ${held.length} held` : ''}`,
    lines: [
      ...(available.length ? [available.map((s) => s.name).join(', ')] : []),
      ...skills
        .filter((s) => !s.available)
        .map((s) => `${s.name} ${color.yellow(`unavailable: ${s.why ?? '?'}`)}`),
      ...held.map((s) => `${s.name} ${color.red(`held: ${s.holds.join('; ')}`)}`),
      ...(skills.length || held.length ? [] : [color.dim('none')]),
    ],
  }
}
