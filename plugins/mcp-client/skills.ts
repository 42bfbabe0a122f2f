/**
 * @module mcp-client/skills
 * A server's skills (the MCP Skills extension, SEP-2640) in the skills service: listed page by
 * page (at most MAX_SERVER_SKILLS), each SKILL.md read and verified against its entry by the SDK's
 * SkillsClient (size, digest, frontmatter), then contributed as `<server>:<skill>` (as its tools
 * are `mcp__<server>__<tool>`), where the skills plugin parses it as one on disk. A bad entry or
 * SKILL.md is a problem naming the server and the skill; the rest load. Read again on
 * resources/list_changed and on every connection; withdrawn when the server is held, gives up or
 * goes. The other files are read through the server when asked for, verified the same way.
 */
import type { Client } from '@modelcontextprotocol/client'
import { SkillsClient, type Skill as SkillEntry } from '@modelcontextprotocol/client/ext/skills'
import {
  SKILLS_EXTENSION_ID,
  SKILLS_LIST_METHOD,
  SkillSchema,
} from '@modelcontextprotocol/core/ext/skills'
import { z } from 'zod'
import { messageOf, type Disposer } from 'yoke'
import type { ContributedSkill, SkillContribution, SkillsApi } from '../skills/api.ts'

/** the most skills one server contributes (the rest are named in one problem) */
export const MAX_SERVER_SKILLS = 500
/** the most skills/list pages walked */
const MAX_PAGES = 100
/** a SKILL.md larger is not read (the skills plugin's bound for one on disk) */
const MAX_SKILL_MD_BYTES = 1024 * 1024
/** all of a server's SKILL.md files together */
const MAX_TOTAL_BYTES = 32 * 1024 * 1024
/** a skill's other files: the skills plugin's bound for a file on disk */
const MAX_FILE_BYTES = 4 * 1024 * 1024
const READS_AT_ONCE = 8

/** a skills/list page, its entries unchecked: each is checked on its own (a bad one does not spoil the rest) */
const Page = z.looseObject({ skills: z.array(z.unknown()), nextCursor: z.string().optional() })

/** What the server's skills need of their mcp-client instance. */
export interface ServerSkillsHost {
  server: string
  /** false: the server's skills are left out (its config's `skills: false`), said once */
  enabled: boolean
  /** the skills service now (none: nothing is contributed) */
  skills(): SkillsApi | undefined
  /** the connected client now, for reads of a skill's files */
  client(): Client | undefined
  /** what the server is doing when it is not connected */
  describe(): string
  /** reads the skills again on the connection there is now, if any */
  resync(): void
  logger: { info(m: string): void; warn(m: string): void; debug(m: string): void }
}

export class ServerSkills {
  /** what was contributed last, and to which service (a replaced service is contributed to again) */
  #contributed?: { service: SkillsApi; withdraw: Disposer }
  #last?: SkillContribution
  /** each sync's number: an older one that ends late contributes nothing */
  #generation = 0
  /** a sync is under way (a service that comes meanwhile does not start another) */
  #reading = false
  /** the notes said already (each is said once, not on every reconnect) */
  readonly #said = new Set<string>()

  constructor(private readonly host: ServerSkillsHost) {}

  /** how many of the server's skills are in the skills service now */
  get count(): number {
    return this.#contributed ? (this.#last?.skills.length ?? 0) : 0
  }

  get source(): string {
    return `MCP server ${this.host.server}`
  }

  /** Reads the server's skills on `client` and contributes them (a sync under way is superseded). */
  async sync(client: Client): Promise<void> {
    const generation = ++this.#generation
    const { host } = this
    if (!host.skills()) return
    const skills = new SkillsClient(client, { skipInvalid: true })
    if (!skills.supported) {
      this.#say(
        `MCP server "${host.server}" offers no skills: it does not declare the skills extension (${SKILLS_EXTENSION_ID})`,
      )
      return this.withdraw()
    }
    if (!host.enabled) {
      this.#say(
        `MCP server "${host.server}" offers skills (${SKILLS_EXTENSION_ID}); they are left out because its config says skills: false`,
      )
      return this.withdraw()
    }
    this.#reading = true
    let contribution: SkillContribution
    try {
      contribution = await this.#read(client, skills)
    } finally {
      if (generation === this.#generation) this.#reading = false
    }
    if (generation !== this.#generation) return
    if (!contribution.skills.length && !contribution.problems?.length)
      this.#say(`MCP server "${host.server}" declares the skills extension and offers no skills`)
    this.#last = contribution
    this.follow()
  }

  /** Contributes the last contribution to the skills service now (again, if it was replaced). */
  follow(): void {
    const service = this.host.skills()
    const last = this.#last
    if (!last) return
    const previous = this.#contributed
    if (!service) return void (this.#contributed = undefined)
    // the new set replaces the old in one change; the old disposer then only drops its effect
    const withdraw = service.contribute(this.source, last)
    this.#contributed = { service, withdraw }
    void previous?.withdraw()
  }

  /** A skills service that came, was replaced or went: the skills read follow it (or are read now). */
  serviceChanged(): void {
    const service = this.host.skills()
    if (service === this.#contributed?.service) return
    if (this.#last) this.follow()
    else if (service && !this.#reading) this.host.resync()
  }

  /** Takes the server's skills out of the skills service (held, given up, gone). */
  withdraw(): void {
    this.#generation++
    this.#reading = false
    this.#last = undefined
    const contributed = this.#contributed
    this.#contributed = undefined
    void contributed?.withdraw()
  }

  #say(note: string): void {
    if (this.#said.has(note)) return
    this.#said.add(note)
    this.host.logger.info(note)
  }

  /** The server's entries, their SKILL.md files read and verified, and what was refused. */
  async #read(client: Client, skills: SkillsClient): Promise<SkillContribution> {
    const { server } = this.host
    const problems: Array<{ location: string; message: string }> = []
    const entries = await this.#list(client, problems)
    const taken: ContributedSkill[] = []
    let total = 0
    const readOne = async (entry: SkillEntry) => {
      const listed = entry.resources === 'dynamic' ? undefined : entry.resources
      const size = listed?.find((r) => r.uri === entry.uri)?.size
      const refuse = (message: string) =>
        void problems.push({ location: entry.uri, message: `MCP server "${server}": ${message}` })
      if (size !== undefined && size > MAX_SKILL_MD_BYTES)
        return refuse(`SKILL.md is ${size} bytes; at most ${MAX_SKILL_MD_BYTES} are read`)
      if (size !== undefined && (total += size) > MAX_TOTAL_BYTES)
        return refuse(
          `its skills' SKILL.md files come to more than ${MAX_TOTAL_BYTES} bytes; this one is left out`,
        )
      try {
        const file = await skills.read(entry)
        if (file.text === undefined || Buffer.byteLength(file.text) > MAX_SKILL_MD_BYTES)
          return refuse(`SKILL.md is larger than ${MAX_SKILL_MD_BYTES} bytes, or not text`)
        taken.push(this.#toContributed(entry, file.text))
      } catch (err) {
        refuse(`the skill is left out: ${messageOf(err)}`)
      }
    }
    for (let i = 0; i < entries.length; i += READS_AT_ONCE)
      await Promise.all(entries.slice(i, i + READS_AT_ONCE).map(readOne))
    return { namespace: server, skills: taken, problems }
  }

  /** skills/list, page by page, up to MAX_SERVER_SKILLS entries (the rest are one problem). */
  async #list(client: Client, problems: Array<{ location: string; message: string }>) {
    const { server } = this.host
    const raw: unknown[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await client.request(
        { method: SKILLS_LIST_METHOD, params: cursor === undefined ? {} : { cursor } },
        Page,
      )
      raw.push(...page.skills)
      cursor = page.nextCursor
    } while (++pages < MAX_PAGES && raw.length <= MAX_SERVER_SKILLS && cursor !== undefined)
    if (cursor !== undefined || raw.length > MAX_SERVER_SKILLS)
      problems.push({
        location: `MCP server ${server}`,
        message: `MCP server "${server}" offers more than ${MAX_SERVER_SKILLS} skills${cursor !== undefined && pages >= MAX_PAGES ? ` (or more than ${MAX_PAGES} pages)` : ''}; the first ${Math.min(raw.length, MAX_SERVER_SKILLS)} listed are used`,
      })
    const seen = new Map<string, number>()
    for (const e of raw) {
      const uri = (e as { uri?: unknown })?.uri
      if (typeof uri === 'string') seen.set(uri, (seen.get(uri) ?? 0) + 1)
    }
    const entries: SkillEntry[] = []
    for (const [index, e] of raw.slice(0, MAX_SERVER_SKILLS).entries()) {
      const uri = (e as { uri?: unknown })?.uri
      const location = typeof uri === 'string' ? uri : `MCP server ${server} skills/list #${index}`
      const checked = SkillSchema.safeParse(e)
      const wrong = checked.success
        ? seen.get(checked.data.uri)! > 1
          ? 'it is listed more than once; every copy is left out'
          : outside(checked.data)
        : issuesOf(checked.error.issues)
      if (wrong) problems.push({ location, message: `MCP server "${server}": ${wrong}` })
      else entries.push(checked.data!) // SkillsClient.read checks the rest (name, URIs) before any request
    }
    return entries
  }

  /** One entry and its verified SKILL.md as the skills plugin takes it; files read through the server. */
  #toContributed(entry: SkillEntry, content: string): ContributedSkill {
    const root = entry.uri.slice(0, -'/SKILL.md'.length)
    const listed = entry.resources === 'dynamic' ? [] : entry.resources
    const byPath = new Map(
      listed
        .filter((r) => r.uri !== entry.uri && r.uri.startsWith(`${root}/`))
        .map((r) => [relativePath(root, r.uri), r] as const),
    )
    return {
      content,
      location: entry.uri,
      // `skill://acme/pdf` or `skill://pdf`: the last segment (the SDK checked it is the name)
      dirName: relativePath('', root.slice(root.lastIndexOf('/') + 1)),
      files: [...byPath.keys()],
      read: (file, signal) => this.#readFile(entry, byPath.get(file), file, signal),
    }
  }

  async #readFile(
    entry: SkillEntry,
    listed: { uri: string; size: number } | undefined,
    file: string,
    signal?: AbortSignal,
  ): Promise<Uint8Array> {
    const { server } = this.host
    const client = this.host.client()
    if (!client)
      throw new Error(`MCP server "${server}" is not connected (${this.host.describe()})`)
    if (!listed) throw new Error(`it is not one of the skill's files in the server's entry`)
    if (listed.size > MAX_FILE_BYTES)
      throw new Error(
        `it is ${listed.size} bytes; files of at most ${MAX_FILE_BYTES} bytes are read`,
      )
    return (await new SkillsClient(client).read(entry, listed.uri, { signal })).bytes
  }
}

/**
 * Why an entry is refused for a file that is not plainly inside its folder: a `.` or `..` segment
 * (URL parsing would fold `skill://a/../b/x` into `skill://b/x`, another skill's), an empty one,
 * or a URI below another root; false when every file is.
 */
function outside(entry: SkillEntry): string | false {
  if (entry.resources === 'dynamic') return false
  const root = entry.uri.slice(0, -'/SKILL.md'.length)
  const bad = entry.resources.find(
    (r) =>
      r.uri !== entry.uri &&
      (!r.uri.startsWith(`${root}/`) ||
        relativePath(root, r.uri)
          .split('/')
          .some((s) => s === '' || s === '.' || s === '..' || s.includes('\\'))),
  )
  return bad
    ? `it lists ${bad.uri}, which is not inside the skill's folder ${root}/; the skill is left out`
    : false
}

interface Issue {
  path: PropertyKey[]
  message: string
  code?: string
  errors?: Issue[][]
}

/**
 * What a schema refused, where: a union's issues are those of its first branch (`resources` is a
 * list or "dynamic": a list with a file that has no `size` says so, not "Invalid input"); at most 3.
 */
function issuesOf(issues: readonly Issue[], at: PropertyKey[] = []): string {
  const lines: string[] = []
  const visit = (list: readonly Issue[], prefix: PropertyKey[]) => {
    for (const i of list) {
      const path = [...prefix, ...i.path]
      if (i.code === 'invalid_union' && i.errors?.[0]?.length) visit(i.errors[0], path)
      else lines.push(`${path.map(String).join('.') || '(entry)'}: ${i.message}`)
    }
  }
  visit(issues, at)
  return lines.slice(0, 3).join('; ') + (lines.length > 3 ? `; and ${lines.length - 3} more` : '')
}

/** `a/b%20c.md` below `root/` → `a/b c.md` */
function relativePath(root: string, uri: string): string {
  const rest = root ? uri.slice(root.length + 1) : uri
  return rest
    .split('/')
    .map((s) => {
      try {
        return decodeURIComponent(s)
      } catch {
        return s
      }
    })
    .join('/')
}
