/**
 * Skills as MCP prompts (one per skill: its instructions, and the request if one is given) and
 * their files as resources (`skill://<name>/<path>`), all through the `skills` service when one
 * runs. The service reads a file only from inside the skill's directory as it was indexed: `..`,
 * absolute paths and symlinks that lead out are refused, as skill_read refuses them.
 */
import { extname, sep } from 'node:path'
import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  type GetPromptResult,
  type Prompt,
  type ReadResourceResult,
  type Resource,
} from '@modelcontextprotocol/server'
import type { SkillsApi } from '../skills/api.ts'
import { skillAt } from './skills-ext.ts'

const FILES_PER_SKILL = 200
const MAX_RESOURCES = 2000

const MIME: Record<string, string> = {
  '.md': 'text/markdown',
  '.txt': 'text/plain',
  '.json': 'application/json',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.py': 'text/x-python',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.ts': 'text/x-typescript',
  '.sh': 'text/x-shellscript',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.xml': 'application/xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.svg': 'image/svg+xml',
  '.pdf': 'application/pdf',
}

export const skillUri = (skill: string, file: string) =>
  `skill://${encodeURIComponent(skill)}/${file.split(sep).map(encodeURIComponent).join('/')}`

export function listPrompts(skills: SkillsApi | undefined): Prompt[] {
  return (skills?.list() ?? []).map((s) => ({
    name: s.name,
    description: s.available ? s.description : `${s.description} [unavailable here: ${s.why}]`,
    arguments: [
      {
        name: 'request',
        description: 'what to do with the skill (added after its instructions)',
        required: false,
      },
    ],
  }))
}

export function getPrompt(
  skills: SkillsApi | undefined,
  name: string,
  args: Record<string, string> = {},
): GetPromptResult {
  const skill = skills?.get(name)
  const body = skill && skills?.body(skill.name)
  if (!skill || body === undefined)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `no skill named "${name}"; prompts/list shows the names`,
    )
  const files = skills!.files(skill.name, FILES_PER_SKILL)
  const list = files.length
    ? `\n<skill_resources>\n${files.map((f) => `  ${skillUri(skill.name, f)}`).join('\n')}\n</skill_resources>`
    : ''
  const request = args.request?.trim() ? `\n\n${args.request.trim()}` : ''
  return {
    description: skill.description,
    messages: [{ role: 'user', content: { type: 'text', text: `${body}${list}${request}` } }],
  }
}

export function listResources(skills: SkillsApi | undefined): Resource[] {
  const out: Resource[] = []
  for (const skill of skills?.list() ?? []) {
    for (const file of ['SKILL.md', ...skills!.files(skill.name, FILES_PER_SKILL)]) {
      if (out.length >= MAX_RESOURCES) return out
      out.push({
        uri: skillUri(skill.name, file),
        name: `${skill.name}/${file.split(sep).join('/')}`,
        ...(file === 'SKILL.md' && { description: skill.description }),
        mimeType: mimeOf(file),
      })
    }
  }
  return out
}

/**
 * A skill file as a resource: `skill://<name>/<path>`, or (the skills extension's spelling of a
 * namespaced skill) `skill://<namespace>/<name>/<path>`. Text when the bytes are UTF-8 (a
 * byte-order mark kept, so the bytes are exactly those an entry's digest covers), else a blob.
 */
export function readResource(
  skills: SkillsApi | undefined,
  uri: string,
): ReadResourceResult | Promise<ReadResourceResult> {
  const missing = (why: string) => new ResourceNotFoundError(uri, `resource ${uri}: ${why}`)
  if (!/^skill:\/\/([^/]+)\/(.+)$/.test(uri))
    throw missing('not a skill:// resource of this server')
  if (!isEncoded(uri)) throw missing('the URI is not well encoded')
  const at = skills && skillAt(skills, uri)
  if (!at) throw missing(`no skill named "${nameIn(uri)}"`)
  const answer = (read: { bytes: Uint8Array } | { refused: string }) => {
    if ('refused' in read) throw missing(read.refused)
    return contentsOf(uri, at.file, Buffer.from(read.bytes))
  }
  // a file on disk is read at once (as before); a contributed skill's through its source
  const local = skills!.readFile(at.skill.name, at.file)
  return 'refused' in local && skills!.files(at.skill.name).includes(at.file)
    ? skills!.read(at.skill.name, at.file).then(answer)
    : answer(local)
}

function contentsOf(uri: string, file: string, bytes: Buffer): ReadResourceResult {
  const mimeType = mimeOf(file)
  const text = bytes.includes(0)
    ? undefined
    : new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(bytes)
  const binary = text === undefined || text.includes('\uFFFD')
  return {
    contents: [
      binary ? { uri, mimeType, blob: bytes.toString('base64') } : { uri, mimeType, text: text! },
    ],
  }
}

const isEncoded = (uri: string) => {
  try {
    decodeURIComponent(uri)
    return true
  } catch {
    return false
  }
}

/** the first segment, decoded: the skill name a URI names when none matches */
const nameIn = (uri: string) => decodeURIComponent(/^skill:\/\/([^/]+)/.exec(uri)![1]!)

function mimeOf(file: string): string {
  return MIME[extname(file).toLowerCase()] ?? 'application/octet-stream'
}
