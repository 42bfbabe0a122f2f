/**
 * What the model sees of the skills in its system prompt: the octos `<skills>` catalog, escaped,
 * within a character budget (descriptions capped, the omitted count stated), and the bodies of the
 * always-on skills.
 */
import type { Skill } from './parse.ts'

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' }
export const escapeXml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c])

function entry(skill: Skill, descriptionChars: number): string {
  const description = skill.description.length > descriptionChars ? skill.description.slice(0, descriptionChars - 1) + '…' : skill.description
  return [
    `  <skill available="${skill.available}"${skill.hasTools ? ' tools="true"' : ''}>`,
    `    <name>${escapeXml(skill.name)}</name>`,
    `    <description>${escapeXml(description.replace(/\s+/g, ' ').trim())}</description>`,
    `    <location>${escapeXml(skill.file)}</location>`,
    '  </skill>',
  ].join('\n')
}

/** The catalog, or '' without skills. Entries past `budget` characters are counted, not shown. */
export function renderCatalog(skills: Skill[], budget: number, descriptionChars: number): string {
  if (!skills.length) return ''
  const head = 'Skills you can use: read one with skill_read(name) when its description fits the task.\n<skills>'
  const parts: string[] = []
  let size = head.length + 10
  for (const skill of skills) {
    const e = entry(skill, descriptionChars)
    if (size + e.length + 100 > budget) break
    parts.push(e)
    size += e.length + 1
  }
  const omitted = skills.length - parts.length
  if (omitted) parts.push(`  <omitted count="${omitted}">skills_list shows all ${skills.length}</omitted>`)
  return [head, ...parts, '</skills>'].join('\n')
}

/** The bodies of available `always: true` skills, each wrapped as skill_read would. */
export function renderAlways(skills: Skill[]): string {
  return skills
    .filter((s) => s.always && s.available)
    .map((s) => wrapBody(s))
    .join('\n\n')
}

export function wrapBody(skill: Skill): string {
  return `<skill_content name="${escapeXml(skill.name)}">\n${skill.body.trim()}\n</skill_content>`
}
