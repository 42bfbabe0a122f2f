/**
 * What the model sees of the skills in its system prompt: the octos `<skills>` catalog, escaped,
 * within a character budget (descriptions capped, the omitted count stated), and the bodies of the
 * always-on skills.
 */
import type { Skill } from './parse.ts'

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
}
export const escapeXml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c])

const cut = (s: string, max: number) => (s.length > max ? s.slice(0, max - 1) + '…' : s)

function entry(skill: Skill, descriptionChars: number): string {
  return [
    `  <skill available="${skill.available}"${skill.hasTools ? ' tools="true"' : ''}>`,
    `    <name>${escapeXml(cut(skill.name, 100))}</name>`,
    `    <description>${escapeXml(cut(skill.description.replace(/\s+/g, ' ').trim(), descriptionChars))}</description>`,
    `    <location>${escapeXml(cut(skill.file, 300))}</location>`,
    '  </skill>',
  ].join('\n')
}

/** The catalog, or '' without skills. Entries past `budget` characters are counted, not shown. */
export function renderCatalog(skills: Skill[], budget: number, descriptionChars: number): string {
  if (!skills.length) return ''
  const head =
    'Skills you can use: read one with skill_read(name) when its description fits the task.\n<skills>'
  const parts: string[] = []
  let size = head.length + 10
  for (const skill of skills) {
    const e = entry(skill, descriptionChars)
    if (size + e.length + 100 > budget) continue // a smaller entry further on may still fit
    parts.push(e)
    size += e.length + 1
  }
  const omitted = skills.length - parts.length
  if (omitted)
    parts.push(
      `  <omitted count="${omitted}">${omitted} more skills are not listed here; skills_list(query) finds them by what they do</omitted>`,
    )
  return [head, ...parts, '</skills>'].join('\n')
}

/** The bodies of available `always: true` skills, each wrapped as skill_read would, within `budget` characters. */
export function renderAlways(skills: Skill[], budget: number): string {
  let left = budget
  const parts: string[] = []
  for (const s of skills.filter((s) => s.always && s.available)) {
    const body = wrapBody(s)
    if (body.length <= left) parts.push(body)
    else
      parts.push(
        `<skill_content name="${escapeXml(s.name)}" truncated="true">\n${s.body.trim().slice(0, Math.max(0, left - 200))}\n… (the rest: skill_read("${escapeXml(s.name)}"))\n</skill_content>`,
      )
    left -= body.length
    if (left <= 200) break
  }
  return parts.join('\n\n')
}

export function wrapBody(skill: Skill): string {
  return `<skill_content name="${escapeXml(skill.name)}">\n${skill.body.trim()}\n</skill_content>`
}
