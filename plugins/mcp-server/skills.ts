/**
 * Skills as MCP prompts (one per skill: its instructions, and the request if one is given) and
 * their files as resources (`skill://<name>/<path>`), read from the `skills` service when one
 * runs. A file is read only from inside the skill's directory as it was indexed: `..`, absolute
 * paths and symlinks that lead out are refused, as skill_read refuses them.
 */
import { closeSync, constants, fstatSync, openSync, readdirSync, readFileSync, realpathSync } from 'node:fs'
import { extname, join, relative, resolve, sep } from 'node:path'
import { ErrorCode, McpError, type GetPromptResult, type Prompt, type ReadResourceResult, type Resource } from '@modelcontextprotocol/sdk/types.js'
import { wrapBody } from '../skills/catalog.ts'
import type { Skill, SkillsApi } from '../skills/index.ts'

const MAX_FILE_BYTES = 4 * 1024 * 1024
const FILES_PER_SKILL = 200
const MAX_RESOURCES = 2000
/** MCP's "resource not found" */
const NOT_FOUND = -32002

const MIME: Record<string, string> = {
  '.md': 'text/markdown', '.txt': 'text/plain', '.json': 'application/json', '.yaml': 'application/yaml', '.yml': 'application/yaml',
  '.py': 'text/x-python', '.js': 'text/javascript', '.mjs': 'text/javascript', '.ts': 'text/x-typescript', '.sh': 'text/x-shellscript',
  '.csv': 'text/csv', '.html': 'text/html', '.xml': 'application/xml', '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg',
  '.gif': 'image/gif', '.svg': 'image/svg+xml', '.pdf': 'application/pdf',
} // prettier-ignore

export const skillUri = (skill: string, file: string) => `skill://${encodeURIComponent(skill)}/${file.split(sep).map(encodeURIComponent).join('/')}`

export function listPrompts(skills: SkillsApi | undefined): Prompt[] {
  return (skills?.list() ?? []).map((s) => ({
    name: s.name,
    description: s.available ? s.description : `${s.description} [unavailable here: ${s.why}]`,
    arguments: [{ name: 'request', description: 'what to do with the skill (added after its instructions)', required: false }],
  }))
}

export function getPrompt(skills: SkillsApi | undefined, name: string, args: Record<string, string> = {}): GetPromptResult {
  const skill = skills?.get(name)
  if (!skill) throw new McpError(ErrorCode.InvalidParams, `no skill named "${name}"; prompts/list shows the names`)
  const files = skillFiles(skill)
  const list = files.length ? `\n<skill_resources>\n${files.map((f) => `  ${skillUri(skill.name, f)}`).join('\n')}\n</skill_resources>` : ''
  const request = args.request?.trim() ? `\n\n${args.request.trim()}` : ''
  return {
    description: skill.description,
    messages: [{ role: 'user', content: { type: 'text', text: `${wrapBody(skill)}${list}${request}` } }],
  }
}

export function listResources(skills: SkillsApi | undefined): Resource[] {
  const out: Resource[] = []
  for (const skill of skills?.list() ?? []) {
    for (const file of ['SKILL.md', ...skillFiles(skill)]) {
      if (out.length >= MAX_RESOURCES) return out
      out.push({ uri: skillUri(skill.name, file), name: `${skill.name}/${file.split(sep).join('/')}`, ...(file === 'SKILL.md' && { description: skill.description }), mimeType: mimeOf(file) })
    }
  }
  return out
}

export function readResource(skills: SkillsApi | undefined, uri: string): ReadResourceResult {
  const match = /^skill:\/\/([^/]+)\/(.+)$/.exec(uri)
  const missing = (why: string) => new McpError(NOT_FOUND, `resource ${uri}: ${why}`)
  if (!match) throw missing('not a skill:// resource of this server')
  let name: string
  let file: string
  try {
    name = decodeURIComponent(match[1]!)
    file = match[2]!.split('/').map(decodeURIComponent).join(sep)
  } catch {
    throw missing('the URI is not well encoded')
  }
  const skill = skills?.get(name)
  if (!skill) throw missing(`no skill named "${name}"`)
  if (file.includes('\0') || file.split(sep).includes('..')) throw missing('only files inside the skill can be read')
  let real: string
  try {
    // the directory must still be the one indexed: a skill swapped for a symlink reads nothing
    if (realpathSync(skill.dir) !== skill.realDir) throw missing('the skill changed on disk; read it again once it is re-indexed')
    real = realpathSync(resolve(skill.dir, file))
  } catch (err) {
    throw err instanceof McpError ? err : missing(`the skill "${name}" has no file "${file}"`)
  }
  const root = skill.realDir!
  if (!real.startsWith(root + sep)) throw missing(`"${file}" is outside the skill "${name}"`)
  let fd: number | undefined
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK) // a FIFO must not block the process
    const stat = fstatSync(fd)
    if (!stat.isFile()) throw missing(`"${file}" is not a regular file`)
    if (stat.size > MAX_FILE_BYTES) throw missing(`"${file}" is ${stat.size} bytes; files of at most ${MAX_FILE_BYTES} bytes are served`)
    const bytes = readFileSync(fd)
    const mimeType = mimeOf(file)
    const text = bytes.includes(0) ? undefined : new TextDecoder('utf-8', { fatal: false }).decode(bytes)
    const binary = text === undefined || text.includes('\uFFFD')
    return { contents: [binary ? { uri, mimeType, blob: bytes.toString('base64') } : { uri, mimeType, text: text! }] }
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** A skill's files other than SKILL.md, relative, breadth-first, hidden files and node_modules skipped. */
function skillFiles(skill: Skill): string[] {
  const out: string[] = []
  const queue = [skill.dir]
  while (queue.length && out.length < FILES_PER_SKILL) {
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
      else if (e.isFile() && path !== skill.file && out.length < FILES_PER_SKILL) out.push(relative(skill.dir, path))
    }
  }
  return out
}

function mimeOf(file: string): string {
  return MIME[extname(file).toLowerCase()] ?? 'application/octet-stream'
}
