/**
 * Progressive disclosure: `skills_list` (optionally filtered by a query) and `skill_read(name,
 * file?)`. A file is read only from inside the skill's directory: `..`, absolute paths and
 * symlinks that lead out are refused.
 */
import { closeSync, constants, fstatSync, openSync, readdirSync, readFileSync, realpathSync } from 'node:fs'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import type { ToolDefinition } from 'yoke'
import { wrapBody } from './catalog.ts'
import type { Skill } from './parse.ts'
import type { SkillIndex } from './skill-index.ts'

const MAX_FILE_BYTES = 4 * 1024 * 1024
const MAX_RESOURCES = 200

const refuse = (text: string) => ({ content: [{ type: 'text' as const, text }], isError: true })

export function skillTools(index: () => SkillIndex): ToolDefinition[] {
  return [
    {
      name: 'skills_list',
      description: 'List the skills (name, description, whether available). Optional query: words to match in names and descriptions.',
      inputSchema: { type: 'object', properties: { query: { type: 'string', maxLength: 200 } }, additionalProperties: false },
      source: 'skills',
      concurrency: 'safe',
      execute: ({ query }) => {
        const words = String(query ?? '').toLowerCase().split(/\s+/).filter(Boolean)
        const skills = index().skills.filter((s) => words.every((w) => `${s.name} ${s.description}`.toLowerCase().includes(w)))
        const lines = skills.map((s) => `${s.name}: ${s.description.replace(/\s+/g, ' ')}${s.available ? '' : ` [unavailable: ${s.why}]`}`)
        return {
          content: [{ type: 'text', text: lines.join('\n') || (words.length ? `no skill matches "${query}"` : 'no skills') }],
          structured: { skills: skills.map((s) => ({ name: s.name, description: s.description, available: s.available, why: s.why, tools: s.hasTools, location: s.file })) },
        }
      },
    },
    {
      name: 'skill_read',
      description: "Read a skill: without `file`, its instructions and the list of its resource files; with `file`, one file inside the skill's directory.",
      inputSchema: {
        type: 'object',
        properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, file: { type: 'string', minLength: 1, maxLength: 1000 } },
        required: ['name'],
        additionalProperties: false,
      },
      source: 'skills',
      concurrency: 'safe',
      execute: ({ name, file }) => {
        const skill = index().get(String(name))
        if (!skill) return refuse(`no skill named "${name}"; skills_list shows the names`)
        if (file === undefined) {
          const resources = listResources(skill)
          const note = skill.available ? '' : `\n(this skill is unavailable here: ${skill.why})`
          const list = resources.length ? `\n<skill_resources>\n${resources.map((r) => `  ${r}`).join('\n')}\n</skill_resources>` : ''
          return `${wrapBody(skill)}${list}${note}`
        }
        return readResource(skill, String(file))
      },
    },
  ]
}

function readResource(skill: Skill, file: string) {
  if (isAbsolute(file) || file.includes('\0')) return refuse(`"${file}" is not a path inside the skill; give one like references/guide.md`)
  let real: string
  try {
    // the directory must still be the one indexed: a skill swapped for a symlink reads nothing
    if (realpathSync(skill.dir) !== skill.realDir) return refuse(`the skill "${skill.name}" changed on disk; read it again once it is re-indexed`)
    real = realpathSync(resolve(skill.dir, file))
  } catch {
    return refuse(`the skill "${skill.name}" has no file "${file}"`)
  }
  const root = skill.realDir!
  if (real !== root && !real.startsWith(root + sep)) return refuse(`"${file}" is outside the skill "${skill.name}"; only its own files can be read`)
  let fd: number | undefined
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK) // a FIFO must not block the process
    const stat = fstatSync(fd)
    if (stat.isDirectory()) return refuse(`"${file}" is a directory; skill_read without file lists the skill's files`)
    if (!stat.isFile()) return refuse(`"${file}" is not a regular file`)
    if (stat.size > MAX_FILE_BYTES) return refuse(`"${file}" is ${stat.size} bytes; skill_read reads files of at most ${MAX_FILE_BYTES} bytes`)
    const bytes = readFileSync(fd)
    if (bytes.includes(0)) return refuse(`"${file}" is a binary file (${stat.size} bytes); use it from a script instead of reading it`)
    return bytes.toString('utf8')
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** The skill's files other than SKILL.md, relative, breadth-first, at most MAX_RESOURCES. */
function listResources(skill: Skill): string[] {
  const out: string[] = []
  const queue = [skill.dir]
  while (queue.length && out.length < MAX_RESOURCES) {
    const dir = queue.shift()!
    let entries
    try {
      entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))
    } catch {
      continue
    }
    for (const e of entries) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue
      const path = join(dir, e.name)
      if (e.isDirectory()) queue.push(path)
      else if (e.isFile() && path !== skill.file && out.length < MAX_RESOURCES) out.push(relative(skill.dir, path))
    }
  }
  return out
}
