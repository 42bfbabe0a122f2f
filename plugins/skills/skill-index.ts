/**
 * The skill index: every skills directory scanned (highest priority first), one Skill per name
 * (the highest-priority directory wins, each shadowing reported), availability checked, and the
 * filter applied. Re-indexing after an edit re-reads only the skill directories that changed.
 */
import {
  accessSync,
  constants,
  existsSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
} from 'node:fs'
import { delimiter, join, relative, sep } from 'node:path'
import { isProblem, parseSkill, type Skill, type SkillProblem } from './parse.ts'

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

type Parsed = Skill | SkillProblem

export class SkillIndex {
  /** root → skill directory name → what reading it gave */
  #read = new Map<string, Map<string, Parsed>>()
  skills: Skill[] = []
  shadowed: Shadowing[] = []
  problems: SkillProblem[] = []

  constructor(
    readonly roots: string[],
    readonly filter: SkillFilter,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** Reads every root from scratch. */
  scan(): this {
    for (const root of this.roots) {
      const entries = new Map<string, Parsed>()
      for (const dirName of subdirectories(root)) {
        const parsed = readSkill(root, dirName)
        if (parsed) entries.set(dirName, parsed)
      }
      this.#read.set(root, entries)
    }
    return this.#merge()
  }

  /**
   * Re-reads the skills that `paths` touch: a skill directory appearing or going, or its SKILL.md
   * or manifest.json changing (other files inside a skill are read on demand, not indexed). Each
   * skill is read once however many paths touch it; an unchanged skill keeps its object.
   */
  update(paths: string[]): this {
    const touched = new Map<string, Set<string>>() // root → skill directory names
    for (const path of paths) {
      for (const root of this.roots) {
        if (path !== root && !path.startsWith(root + sep)) continue
        const [dirName = '', file, ...deeper] = relative(root, path).split(sep)
        if (deeper.length || (file && file !== 'SKILL.md' && file !== 'manifest.json')) continue
        touched.set(root, (touched.get(root) ?? new Set()).add(dirName))
      }
    }
    for (const [root, dirNames] of touched) {
      const entries = this.#read.get(root) ?? new Map<string, Parsed>()
      this.#read.set(root, entries)
      // the root itself appeared or went: every skill in it is read again
      const names = dirNames.has('')
        ? new Set([...entries.keys(), ...subdirectories(root)])
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
    for (const root of this.roots) {
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
    return this
  }
}

function subdirectories(root: string): string[] {
  try {
    return readdirSync(root, { withFileTypes: true })
      .filter((d) => d.isDirectory() || d.isSymbolicLink())
      .map((d) => d.name)
      .sort()
  } catch {
    return [] // a missing directory holds no skills
  }
}

const MAX_SKILL_BYTES = 1024 * 1024

export function readSkill(root: string, dirName: string): Parsed | undefined {
  const dir = join(root, dirName)
  const file = join(dir, 'SKILL.md')
  let content: string
  let realDir: string
  try {
    const stat = statSync(file)
    if (!stat.isFile()) return undefined
    if (stat.size > MAX_SKILL_BYTES)
      return {
        file,
        line: 1,
        message: `SKILL.md is ${stat.size} bytes; a skill's instructions may be at most ${MAX_SKILL_BYTES} (put the rest in files it points to)`,
      }
    content = readFileSync(file, 'utf8')
    realDir = realpathSync(dir)
  } catch {
    return undefined // not a skill (no SKILL.md), or it went away
  }
  try {
    const parsed = parseSkill(content, {
      file,
      dir,
      dirName,
      root,
      hasTools: existsSync(join(dir, 'manifest.json')),
    })
    return isProblem(parsed) ? parsed : { ...parsed, realDir }
  } catch (err) {
    return { file, line: 1, message: `unreadable: ${(err as Error).message}` }
  }
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
