/**
 * Progressive disclosure: `skills_list` (optionally filtered by a query) and `skill_read(name,
 * file?)`. A file is read only from inside the skill's directory: `..`, absolute paths and
 * symlinks that lead out are refused. A held skill is in neither; `skill_read` says it is withheld,
 * and why.
 */
import type { ToolDefinition } from 'yoke'
import type { ContributedSkill } from './api.ts'
import { wrapBody } from './catalog.ts'
import { readSkillFile, SkillFileRefused, skillFiles } from './files.ts'
import type { Skill } from './parse.ts'
import type { SkillRanker } from './ranking.ts'

const MAX_RESOURCES = 200

const refuse = (text: string) => ({ content: [{ type: 'text' as const, text }], isError: true })

/** What the tools see of the skills: those in use, and why a held one is withheld. */
export interface SkillsInUse {
  list(): Skill[]
  get(name: string): Skill | undefined
  /** what to answer about `name` while a hold keeps it out of use (undefined: none does) */
  withheld(name: string): string | undefined
  /** a contributed skill's files, read through its source (undefined: a folder on disk) */
  origin(skill: Skill): ContributedSkill | undefined
  /** one file of a skill in use, wherever it is */
  read(
    name: string,
    file: string,
    signal?: AbortSignal,
  ): Promise<{ bytes: Uint8Array } | { refused: string }>
}

export function skillTools(skills: SkillsInUse, ranker: SkillRanker): ToolDefinition[] {
  return [
    {
      name: 'skills_list',
      description:
        'List the skills (name, description, whether available). With a query (what the task is about, or a skill name), the best matches first; "no skill matches" when none does.',
      inputSchema: {
        type: 'object',
        properties: { query: { type: 'string', maxLength: 200 } },
        additionalProperties: false,
      },
      source: 'skills',
      concurrency: 'safe',
      execute: ({ query }) => {
        const all = skills.list()
        const asked = String(query ?? '').trim()
        const found = asked ? ranker.search(all, asked, 20) : undefined
        const listed = !found
          ? ranker.findable(all)
          : found.noMatch
            ? []
            : found.candidates.map((c) => c.item)
        const lines = listed.map(
          (s) =>
            `${s.name}: ${s.description.replace(/\s+/g, ' ')}${s.available ? '' : ` [unavailable: ${s.why}]`}`,
        )
        return {
          content: [
            {
              type: 'text',
              text: lines.join('\n') || (asked ? `no skill matches "${asked}"` : 'no skills'),
            },
          ],
          structured: {
            skills: listed.map((s) => ({
              name: s.name,
              description: s.description,
              available: s.available,
              why: s.why,
              tools: s.hasTools,
              location: s.file,
            })),
          },
        }
      },
    },
    {
      name: 'skill_read',
      description:
        "Read a skill: without `file`, its instructions and the list of its resource files; with `file`, one file inside the skill's directory.",
      inputSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 200 },
          file: { type: 'string', minLength: 1, maxLength: 1000 },
        },
        required: ['name'],
        additionalProperties: false,
      },
      source: 'skills',
      concurrency: 'safe',
      execute: ({ name, file }, call) => {
        const withheld = skills.withheld(String(name))
        if (withheld) return refuse(withheld)
        const skill = skills.get(String(name))
        if (!skill) return refuse(`no skill named "${name}"; skills_list shows the names`)
        const from = skills.origin(skill)
        if (file === undefined) return instructions(skill, from)
        if (from) return readContributed(skills, skill, String(file), call.signal)
        return readResource(skill, String(file))
      },
    },
  ]
}

/** The body as `<skill_content>`, and the list of the skill's files (a contributed one's as its source lists them). */
function instructions(skill: Skill, from: ContributedSkill | undefined): string {
  const resources = from ? from.files.slice(0, MAX_RESOURCES) : skillFiles(skill, MAX_RESOURCES)
  const note = skill.available ? '' : `\n(this skill is unavailable here: ${skill.why})`
  const list = resources.length
    ? `\n<skill_resources>\n${resources.map((r) => `  ${r}`).join('\n')}\n</skill_resources>`
    : ''
  return `${wrapBody(skill)}${list}${note}`
}

/** A contributed skill's file, read through its source; binary files are refused as on disk. */
async function readContributed(
  skills: SkillsInUse,
  skill: Skill,
  file: string,
  signal?: AbortSignal,
) {
  const read = await skills.read(skill.name, file.split('\\').join('/'), signal)
  if ('refused' in read) return refuse(read.refused)
  if (read.bytes.includes(0))
    return refuse(
      `"${file}" is a binary file (${read.bytes.length} bytes); use it from a script instead of reading it`,
    )
  return Buffer.from(read.bytes).toString('utf8')
}

function readResource(skill: Skill, file: string) {
  try {
    const bytes = readSkillFile(skill, file)
    if (bytes.includes(0))
      return refuse(
        `"${file}" is a binary file (${bytes.length} bytes); use it from a script instead of reading it`,
      )
    return bytes.toString('utf8')
  } catch (err) {
    if (!(err instanceof SkillFileRefused)) throw err
    return refuse(
      /is a directory$/.test(err.message)
        ? `${err.message}; skill_read without file lists the skill's files`
        : err.message,
    )
  }
}
