/**
 * The public face of the skills plugin: the `skills` service (the skills in use, their problems,
 * shadowing and clashes, their files, read safely, and roots other plugins add), the shared
 * `skillFilter`, and the default skills directories (exec-tools looks for packages in the same
 * places).
 */
import { homedir } from 'node:os'
import { delimiter, join } from 'node:path'
import type { Disposer, SyncHook } from 'yoke'
import type { Skill, SkillProblem } from './parse.ts'
import type { Shadowing, SkillClash, SkillFilter } from './skill-index.ts'

export type { Skill, SkillProblem, SkillViolation } from './parse.ts'
export type { Shadowing, SkillClash, SkillFilter } from './skill-index.ts'

/** How the skills of an added root are named and labelled. */
export interface SkillRootOptions {
  /** each skill is named `<namespace>:<name>` (a Claude Code plugin's name); SKILL.md is unchanged */
  namespace?: string
  /** who added it (`plugin my-plugin`), shown by `yoke skills list` and in problems */
  source?: string
}

/** One skill another plugin brings that is no folder on disk (an MCP server's, SEP-2640). */
export interface ContributedSkill {
  /** the SKILL.md text, read by the same parser as a SKILL.md on disk */
  content: string
  /** where its SKILL.md is (`skill://pdf/SKILL.md`): the catalog's location, and where problems point */
  location: string
  /** the name of its folder (the segment before SKILL.md): the spec wants its name equal to it */
  dirName: string
  /** its other files, relative `/`-separated paths (`references/guide.md`) */
  files: readonly string[]
  /** the bytes of one of `files`; throws, with what the reader is to be told, when it cannot */
  read(file: string, signal?: AbortSignal): Promise<Uint8Array>
}

/** What a source contributes (`SkillsApi.contribute`). */
export interface SkillContribution {
  /** each skill is named `<namespace>:<name>` (an MCP server's name, as its tools are `mcp__<server>__…`) */
  namespace?: string
  skills: readonly ContributedSkill[]
  /** what the source refused before any SKILL.md was read: reported with the skills' problems */
  problems?: ReadonlyArray<{ location: string; message: string }>
}

/**
 * What changed. `added`, `changed` and `removed` are about SKILL.md files, held skills' too (an
 * edit of a held skill is `changed`, and it stays held); `held` went out of use by a first hold,
 * `released` came back in use when its last hold was released.
 */
export interface SkillChange {
  added: string[]
  changed: string[]
  removed: string[]
  held: string[]
  released: string[]
}

/**
 * A skill out of use by holds: the skill as it is now (its identity: name, version, description,
 * body), and `holds`, the reason of each hold that stands, oldest first.
 */
export type HeldSkill = Skill & { holds: string[] }

export interface SkillsApi {
  readonly hooks: { change: SyncHook<[SkillChange]> }
  /** the skills in use, by name (filtered, highest-priority directory first; none held) */
  list(): Skill[]
  /** a skill in use (undefined for a held one) */
  get(name: string): Skill | undefined
  /**
   * Takes `name` out of use while any hold on it stands: it leaves `list()`, `get()`, the system
   * prompt and `skills_list`, and `skill_read` answers that it is withheld, and `why`. Holds are
   * counted (take the new one before releasing the old); the disposer releases this one, once.
   * A hold is on the name in this skills instance: an edit of the SKILL.md keeps it held (the
   * change is announced), and it ends with the instance. `hooks.change` announces `held` and
   * `released`. Undefined when no skill of that name is in use (held ones count as in use). A
   * consuming instance's holds are its effects: they go when it goes.
   * @example const release = ctx.skills.hold('deploy', 'withdrawn: skill:deploy@1.2.0')
   */
  hold(name: string, why: string): Disposer | undefined
  /** the held skills, by name, with the reasons of their holds */
  held(): HeldSkill[]
  /** names hidden by a higher-priority directory (in the same namespace) */
  shadowed(): Shadowing[]
  /** bare names in use in several namespaces: all are kept, each under its `<namespace>:` name */
  clashes(): SkillClash[]
  /** SKILL.md files that could not be loaded */
  problems(): SkillProblem[]
  /** the directories searched, highest priority first (the added ones last) */
  readonly roots: string[]
  /**
   * Adds a skills directory (a folder of skill folders) below all the others, watched like them;
   * `hooks.change` announces its skills, and again when the returned disposer removes them. With
   * a `namespace`, its skills never shadow another namespace's, and one without a name is named
   * after its folder (Claude Code's rule). An instance's roots are its effects: they go with it.
   * @example ctx.effect('skills', ctx.skills.addRoot(join(dir, 'skills'), { namespace: 'my-plugin', source: 'plugin my-plugin' }))
   */
  addRoot(dir: string, options?: SkillRootOptions): () => void
  /** reads a skills directory (or one skill's directory) as `yoke skills check` does */
  check(dir: string): { skills: Skill[]; problems: SkillProblem[] }
  /**
   * A skill's files other than SKILL.md, relative to its directory, breadth-first (hidden files
   * and node_modules skipped), at most `max` (default 200); none for a skill not in use (or held).
   */
  files(name: string, max?: number): string[]
  /**
   * One file of a skill (`SKILL.md`, or a path from `files`), as `skill_read` reads it: only from
   * inside the skill's directory as indexed (`..`, absolute paths and symlinks that lead out are
   * refused, and so are hidden files, node_modules and links to them: what `files` would not
   * list), only a regular file, at most 4 MiB. `refused` says why not, for the one who asked (a
   * held skill's files are refused, with the reasons).
   */
  readFile(name: string, file: string): { bytes: Buffer } | { refused: string }
  /**
   * One file of any skill in use, on disk (as `readFile`) or contributed (read through its source,
   * which checks it: an MCP server's files are verified against its skill entry).
   * @example const got = await ctx.skills.read('github:triage', 'references/labels.md')
   */
  read(
    name: string,
    file: string,
    signal?: AbortSignal,
  ): Promise<{ bytes: Uint8Array } | { refused: string }>
  /**
   * Adds skills that are no folder on disk (an MCP server's), or replaces what `source` added
   * before: each SKILL.md is read by the same parser as one on disk (a bad one is a problem naming
   * `source` and its location; the rest load), named `<namespace>:<name>` with a namespace, below
   * every directory's skills (a name a directory has shadows it). The disposer removes them, once,
   * unless `source` contributed again since; `hooks.change` announces both. A consuming
   * instance's contributions are its effects: they go with it.
   * @example ctx.skills.contribute('MCP server github', { namespace: 'github', skills })
   */
  contribute(source: string, contribution: SkillContribution): Disposer
  /** the skill's instructions as the model reads them (`<skill_content name="…">…</skill_content>`; none while held) */
  body(name: string): string | undefined
}

/** What `skills/list` answers (`yoke skills list`): the skills without their bodies, and what was left out. */
export interface SkillsListing {
  roots: string[]
  skills: Array<Omit<Skill, 'body'>>
  /** out of use by holds, each with `holds` (the reasons); absent when a running dev is older */
  held?: Array<Omit<HeldSkill, 'body'>>
  shadowed: Shadowing[]
  /** absent when a running dev is older than the clashes */
  clashes?: SkillClash[]
  problems: SkillProblem[]
}

declare module 'yoke' {
  interface Services {
    skills: SkillsApi
    /** one decision, shared: which skills (and skill packages) are in use */
    skillFilter: SkillFilter
  }
  interface Controls {
    /** `yoke skills list`: the skills, held, shadowed, clashing and broken */
    'skills/list': { request: Record<string, never>; answer: SkillsListing }
  }
}

/** Default directories, highest priority first: the project's, the user's, then YOKE_SKILLS_PATH. */
export function defaultDirs(
  project: { dir: string; home: string },
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const path = (env.YOKE_SKILLS_PATH ?? '').split(delimiter).filter(Boolean)
  return [
    join(project.dir, '.agents', 'skills'),
    join(project.dir, 'skills'),
    join(project.home, 'skills'),
    join(homedir(), '.agents', 'skills'),
    ...path,
  ]
}
