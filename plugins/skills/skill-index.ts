/**
 * The skill index: every skills directory scanned (highest priority first), one Skill per name
 * (the highest-priority directory wins, each shadowing reported), availability checked, and the
 * filter applied. A root with a namespace names its skills `<namespace>:<name>`, so they never
 * shadow another namespace's; a bare name found in several namespaces is a clash, reported.
 * Re-indexing after an edit re-reads only the skill directories that changed.
 */
import { accessSync, constants, statSync } from 'node:fs'
import { delimiter, join, relative, sep } from 'node:path'
import { isProblem, type Skill, type SkillProblem } from './parse.ts'
import { readSkill, subdirectories, type Parsed, type SkillRoot } from './read-skill.ts'

export { readSkill, type SkillRoot } from './read-skill.ts'

/** One bare skill name that several namespaces use: each is kept, under its own full name. */
export interface SkillClash {
  name: string
  skills: Array<{ name: string; file: string; source?: string }>
}

export interface Shadowing {
  name: string
  /** the SKILL.md that is used */
  winner: string
  /** the one it hides */
  shadowed: string
}

export interface SkillFilter {
  /** whether the skill (or plugin package) `id` is in use */
  allows(id: string): boolean
}

export function makeFilter(only: string[] | undefined, except: string[]): SkillFilter {
  return { allows: (id) => (!only || only.includes(id)) && !except.includes(id) }
}

export class SkillIndex {
  /** the roots, highest priority first */
  readonly #roots: SkillRoot[]
  /** root → skill directory name → what reading it gave */
  #read = new Map<SkillRoot, Map<string, Parsed>>()
  skills: Skill[] = []
  shadowed: Shadowing[] = []
  clashes: SkillClash[] = []
  problems: SkillProblem[] = []

  constructor(
    roots: Array<string | SkillRoot>,
    readonly filter: SkillFilter,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.#roots = roots.map((r) => (typeof r === 'string' ? { dir: r } : r))
  }

  /** the directories searched, highest priority first */
  get roots(): string[] {
    return this.#roots.map((r) => r.dir)
  }

  /** Reads every root from scratch. */
  scan(): this {
    for (const root of this.#roots) this.#read.set(root, readRoot(root))
    return this.#merge()
  }

  /** One more root, below all the others, read now. */
  addRoot(root: SkillRoot): this {
    this.#roots.push(root)
    this.#read.set(root, readRoot(root))
    return this.#merge()
  }

  /** Forgets a root added before (the same object); another root is left as it is. */
  removeRoot(root: SkillRoot): this {
    const at = this.#roots.indexOf(root)
    if (at < 0) return this
    this.#roots.splice(at, 1)
    this.#read.delete(root)
    return this.#merge()
  }

  /**
   * Re-reads the skills that `paths` touch: a skill directory appearing or going, or its SKILL.md
   * or manifest.json changing (other files inside a skill are read on demand, not indexed). Each
   * skill is read once however many paths touch it; an unchanged skill keeps its object.
   */
  update(paths: string[]): this {
    const touched = new Map<SkillRoot, Set<string>>() // root → skill directory names
    for (const path of paths) {
      for (const root of this.#roots) {
        if (path !== root.dir && !path.startsWith(root.dir + sep)) continue
        const [dirName = '', file, ...deeper] = relative(root.dir, path).split(sep)
        if (deeper.length || (file && file !== 'SKILL.md' && file !== 'manifest.json')) continue
        touched.set(root, (touched.get(root) ?? new Set()).add(dirName))
      }
    }
    for (const [root, dirNames] of touched) {
      const entries = this.#read.get(root) ?? new Map<string, Parsed>()
      this.#read.set(root, entries)
      // the root itself appeared or went: every skill in it is read again
      const names = dirNames.has('')
        ? new Set([...entries.keys(), ...subdirectories(root.dir)])
        : dirNames
      for (const dirName of names) {
        const parsed = readSkill(root, dirName)
        const old = entries.get(dirName)
        if (!parsed) entries.delete(dirName)
        else if (!old || JSON.stringify(old) !== JSON.stringify(parsed))
          entries.set(dirName, parsed)
      }
    }
    return this.#merge()
  }

  get(name: string): Skill | undefined {
    return this.skills.find((s) => s.name === name)
  }

  #merge(): this {
    const byName = new Map<string, Skill>()
    const found = new Map<string, boolean>() // bin → on PATH, for this pass
    this.shadowed = []
    this.problems = []
    for (const root of this.#roots) {
      for (const parsed of this.#read.get(root)?.values() ?? []) {
        if (isProblem(parsed)) {
          this.problems.push(parsed)
          continue
        }
        if (!this.filter.allows(parsed.name)) continue
        const winner = byName.get(parsed.name)
        if (winner)
          this.shadowed.push({ name: parsed.name, winner: winner.file, shadowed: parsed.file })
        else byName.set(parsed.name, withAvailability(parsed, this.env, found))
      }
    }
    this.skills = [...byName.values()].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    )
    this.clashes = clashesOf(this.skills)
    return this
  }
}

/** The bare name of a namespaced skill (`plugin:skill` → `skill`). */
export const bareName = (skill: Skill) =>
  skill.namespace ? skill.name.slice(skill.namespace.length + 1) : skill.name

/** Bare names in use under more than one namespace (no namespace counts as one). */
function clashesOf(skills: Skill[]): SkillClash[] {
  const byBare = new Map<string, Skill[]>()
  for (const s of skills) byBare.set(bareName(s), [...(byBare.get(bareName(s)) ?? []), s])
  return [...byBare]
    .filter(([, same]) => new Set(same.map((s) => s.namespace ?? '')).size > 1)
    .map(([name, same]) => ({
      name,
      skills: same.map((s) => ({
        name: s.name,
        file: s.file,
        ...(s.source !== undefined && { source: s.source }),
      })),
    }))
}

function readRoot(root: SkillRoot): Map<string, Parsed> {
  const entries = new Map<string, Parsed>()
  for (const dirName of subdirectories(root.dir)) {
    const parsed = readSkill(root, dirName)
    if (parsed) entries.set(dirName, parsed)
  }
  return entries
}

/** The same object for an unchanged skill whose availability did not change, so changes compare by identity. */
const checked = new WeakMap<Skill, Skill>()
function withAvailability(
  skill: Skill,
  env: NodeJS.ProcessEnv,
  found: Map<string, boolean>,
): Skill {
  const bins = skill.requiresBins.filter(
    (b) => !(found.get(b) ?? found.set(b, onPath(b, env)).get(b)),
  )
  const vars = skill.requiresEnv.filter((v) => env[v] === undefined)
  const why =
    [
      bins.length && `missing on PATH: ${bins.join(', ')}`,
      vars.length && `environment variables not set: ${vars.join(', ')}`,
    ]
      .filter(Boolean)
      .join('; ') || undefined
  const previous = checked.get(skill)
  if (previous && previous.why === why) return previous
  const result = { ...skill, available: !why, why }
  checked.set(skill, result)
  return result
}

function onPath(bin: string, env: NodeJS.ProcessEnv): boolean {
  if (bin.includes('/')) return executable(bin)
  return (env.PATH ?? '').split(delimiter).some((dir) => dir && executable(join(dir, bin)))
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK)
    return statSync(file).isFile()
  } catch {
    return false
  }
}
