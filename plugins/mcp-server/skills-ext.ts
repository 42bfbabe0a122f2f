/**
 * @module mcp-server/skills-ext
 * The MCP Skills extension (SEP-2640) on the gateway, per view that serves skills (beside their
 * prompts and resources): `skills/list` and `skills/get` answer the `skills` service's skills (on
 * disk or contributed) as entries the SDK builds (`skillEntry`: each file's size and digest, the
 * frontmatter as the SDK's own parser reads it, its rule checks), and the files are the
 * `skill://` resources skills.ts serves. A skill is at `skill://<name>/SKILL.md`, one with a
 * namespace at `skill://<namespace>/<name>/SKILL.md` (the SEP wants the last segment to be the
 * frontmatter name). A skill the SDK refuses (a name outside its rules, no name of its own, past
 * SKILL_LIMITS) is left out of the list, said once. Entries are kept per skill object while its
 * files' sizes and times stay the same.
 */
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { ProtocolError, ProtocolErrorCode, type Server } from '@modelcontextprotocol/server'
import {
  SKILL_LIMITS,
  SKILLS_EXTENSION_ID,
  SKILLS_GET_METHOD,
  SKILLS_LIST_METHOD,
  skillEntry,
  type Skill as SkillEntry,
} from '@modelcontextprotocol/server/ext/skills'
import { z } from 'zod'
import { messageOf } from 'yoke'
import type { Skill, SkillsApi } from '../skills/api.ts'

/** entries per skills/list page */
const PAGE = 100
const BUILDS_AT_ONCE = 8

const ListParams = z.looseObject({ cursor: z.string().optional() })
const GetParams = z.looseObject({ uri: z.string() })

/** The capability a view that serves skills declares. */
export const skillsExtension = (serves: boolean) =>
  serves ? { [SKILLS_EXTENSION_ID]: {} } : ({} as Record<string, never>)

/** Where a skill's files are: `<name>` or `<namespace>/<name>` under `skill://`. */
export function skillPath(skill: Pick<Skill, 'name' | 'namespace'>): string[] {
  const { name, namespace } = skill
  return namespace ? [namespace, name.slice(namespace.length + 1)] : [name]
}

type Built = { entry: SkillEntry } | { why: string }

const perHost = new WeakMap<object, SkillEntries>()

/** The entries one gateway serves (its servers, one per connection or request, share them). */
export function entriesOf(host: { report(where: string, err: Error): void }): SkillEntries {
  let entries = perHost.get(host)
  if (!entries) {
    entries = new SkillEntries((m) => host.report('MCP skills extension', new Error(m)))
    perHost.set(host, entries)
  }
  return entries
}

/** The entries of the skills, kept per skill object while its files look the same. */
export class SkillEntries {
  readonly #built = new WeakMap<Skill, { signature: string; built: Promise<Built> }>()
  readonly #said = new Set<string>()

  constructor(private readonly warn: (message: string) => void) {}

  /** The served entries of `skills` (a refused one is said once and left out), in order. */
  async entries(skills: SkillsApi, list: readonly Skill[]): Promise<SkillEntry[]> {
    const out: Array<SkillEntry | undefined> = []
    for (let i = 0; i < list.length; i += BUILDS_AT_ONCE)
      out.push(
        ...(await Promise.all(list.slice(i, i + BUILDS_AT_ONCE).map((s) => this.entry(skills, s)))),
      )
    return out.filter((e): e is SkillEntry => e !== undefined)
  }

  /** One skill's entry, or undefined when the SDK refuses it (said once). */
  async entry(skills: SkillsApi, skill: Skill): Promise<SkillEntry | undefined> {
    const files = skills.files(skill.name, SKILL_LIMITS.files)
    const signature = signatureOf(skill, files)
    let kept = this.#built.get(skill)
    if (kept?.signature !== signature) {
      kept = { signature, built: build(skills, skill, files) }
      this.#built.set(skill, kept)
    }
    const built = await kept.built
    if ('entry' in built) return built.entry
    const note = `skill "${skill.name}" is not offered through the skills extension: ${built.why}`
    if (!this.#said.has(note)) {
      this.#said.add(note)
      this.warn(note)
    }
    return undefined
  }
}

async function build(skills: SkillsApi, skill: Skill, files: string[]): Promise<Built> {
  if (files.length >= SKILL_LIMITS.files)
    return { why: `it has more than ${SKILL_LIMITS.files - 1} files besides SKILL.md` }
  const record: Record<string, Uint8Array> = {}
  let bytes = 0
  for (const file of ['SKILL.md', ...files]) {
    const read = await skills.read(skill.name, file)
    if ('refused' in read) {
      if (file === 'SKILL.md') return { why: read.refused }
      continue // not readable through resources/read either: not listed
    }
    if ((bytes += read.bytes.length) > SKILL_LIMITS.bytes)
      return { why: `its files come to more than ${SKILL_LIMITS.bytes} bytes` }
    record[file.split('\\').join('/')] = read.bytes
  }
  try {
    return { entry: await skillEntry(skillPath(skill).join('/'), record) }
  } catch (err) {
    const problems = (err as { problems?: Array<{ message: string }> }).problems
    return { why: problems?.map((p) => p.message).join('; ') ?? messageOf(err) }
  }
}

/** What must stay the same for a kept entry: the file list, and on disk each file's size and time. */
function signatureOf(skill: Skill, files: string[]): string {
  if (!skill.realDir) return files.join('\n') // contributed: its files are its source's, verified
  return ['SKILL.md', ...files]
    .map((f) => {
      const s = statSync(join(skill.dir, f), { throwIfNoEntry: false })
      return `${f}:${s?.size}:${s?.mtimeMs}`
    })
    .join('\n')
}

/**
 * Serves skills/list and skills/get on `server` for the skills `skills()` gives (none: an empty
 * list); the caching fields go to a 2026-07-28 client only.
 */
export function serveSkills(
  server: Server,
  skills: () => SkillsApi | undefined,
  entries: SkillEntries,
  modern: boolean,
): void {
  const cache = modern ? { ttlMs: 0, cacheScope: 'private' as const } : {}
  server.setRequestHandler(SKILLS_LIST_METHOD, { params: ListParams }, async (params) => {
    const service = skills()
    const at = params.cursor === undefined ? 0 : Number(params.cursor)
    if (!Number.isSafeInteger(at) || at < 0)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `skills/list: no such cursor`)
    const list = service?.list() ?? []
    const page = service ? await entries.entries(service, list.slice(at, at + PAGE)) : []
    const next = at + PAGE < list.length ? { nextCursor: String(at + PAGE) } : {}
    return { skills: page, ...next, ...cache }
  })
  server.setRequestHandler(SKILLS_GET_METHOD, { params: GetParams }, async (params) => {
    const service = skills()
    const skill = service && skillAt(service, params.uri)
    const entry = skill && (await entries.entry(service, skill.skill))
    if (!entry || skill.file !== 'SKILL.md' || new URL(entry.uri).href !== new URL(params.uri).href)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `No skill is served at ${params.uri}`,
      )
    return { skill: entry, ...cache }
  })
}

/**
 * The skill and file a `skill://` URI names: `skill://<ns>/<name>/<file>` when `<ns>:<name>` is a
 * skill in use, else `skill://<name>/<file>` (also the older `skill://<ns>%3A<name>/<file>`).
 */
export function skillAt(
  skills: SkillsApi,
  uri: string,
): { skill: Skill; file: string } | undefined {
  const match = /^skill:\/\/([^/?#]+)\/([^?#]+)$/.exec(uri)
  if (!match) return undefined
  let segments: string[]
  try {
    segments = [match[1]!, ...match[2]!.split('/')].map(decodeURIComponent)
  } catch {
    return undefined
  }
  const [first, second, ...rest] = segments as [string, string, ...string[]]
  const namespaced = rest.length ? skills.get(`${first}:${second}`) : undefined
  if (namespaced) return { skill: namespaced, file: rest.join('/') }
  const plain = skills.get(first)
  return plain && { skill: plain, file: [second, ...rest].join('/') }
}
