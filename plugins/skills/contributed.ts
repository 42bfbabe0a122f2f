/**
 * @module skills/contributed
 * Skills other plugins bring that are no folder on disk (an MCP server's, SEP-2640). Each source's
 * set is read by the same parser as a SKILL.md on disk (the same problems, warnings and
 * violations, the same 1 MiB bound), named in the source's namespace, and its files are read
 * through the source. A source contributes again to replace its set (an unchanged skill keeps its
 * object, so a change compares by identity); removing it takes its set out.
 */
import { accessSync, constants, statSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import type { ContributedSkill, SkillContribution } from './api.ts'
import { isProblem, parseSkill, type Skill, type SkillProblem } from './parse.ts'
import { MAX_SKILL_BYTES } from './read-skill.ts'
import type { SkillClash } from './skill-index.ts'

interface SourceSet {
  entries: Map<string, { key: string; skill: Skill }>
  problems: SkillProblem[]
}

export class Contributions {
  readonly #bySource = new Map<string, SourceSet>()
  /** where each contributed skill's files are read (by its Skill object) */
  readonly #from = new WeakMap<Skill, ContributedSkill>()
  /** moves on every change: what is merged from it is built again */
  version = 0

  constructor(private readonly env: NodeJS.ProcessEnv = process.env) {}

  /** Replaces what `source` contributed with `contribution`. */
  set(source: string, contribution: SkillContribution): void {
    const { namespace } = contribution
    const before = this.#bySource.get(source)?.entries
    const entries = new Map<string, { key: string; skill: Skill }>()
    const problems: SkillProblem[] = (contribution.problems ?? []).map((p) => ({
      file: p.location,
      line: 0,
      message: p.message,
      source,
    }))
    for (const from of contribution.skills) {
      const key = JSON.stringify([from.content, from.location, from.dirName, from.files])
      const parsed = parseContributed(from, source, namespace, this.env)
      if (isProblem(parsed)) {
        problems.push(parsed)
        continue
      }
      if (entries.has(parsed.name)) {
        problems.push({
          file: from.location,
          line: 0,
          message: `a second skill named "${parsed.name}" from the same source (the first is ${entries.get(parsed.name)!.skill.file}); it is left out`,
          source,
        })
        continue
      }
      const old = before?.get(parsed.name)
      const skill = old?.key === key ? old.skill : parsed
      this.#from.set(skill, from)
      entries.set(skill.name, { key, skill })
    }
    this.#bySource.set(source, { entries, problems })
    this.version++
  }

  delete(source: string): boolean {
    const had = this.#bySource.delete(source)
    if (had) this.version++
    return had
  }

  /** every contributed skill, by source in the order they came, then by name */
  skills(): Skill[] {
    return [...this.#bySource.values()].flatMap((s) =>
      [...s.entries.values()].map((e) => e.skill).sort(byName),
    )
  }

  problems(): SkillProblem[] {
    return [...this.#bySource.values()].flatMap((s) => s.problems)
  }

  /** where `skill`'s files are read, when it is a contributed one */
  origin(skill: Skill): ContributedSkill | undefined {
    return this.#from.get(skill)
  }
}

export const byName = (a: Skill, b: Skill) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** One contributed SKILL.md, parsed as one on disk would be, or the problem that keeps it out. */
function parseContributed(
  from: ContributedSkill,
  source: string,
  namespace: string | undefined,
  env: NodeJS.ProcessEnv,
): Skill | SkillProblem {
  const file = from.location
  const size = Buffer.byteLength(from.content)
  if (size > MAX_SKILL_BYTES)
    return {
      file,
      line: 1,
      source,
      message: `SKILL.md is ${size} bytes; a skill's instructions may be at most ${MAX_SKILL_BYTES}`,
    }
  const parsed = parseSkill(from.content, {
    file,
    dir: file.replace(/\/SKILL\.md$/, ''),
    dirName: from.dirName,
    root: source,
    hasTools: false,
  })
  if (isProblem(parsed)) return { ...parsed, source }
  const named =
    namespace === undefined ? parsed : { ...parsed, name: `${namespace}:${parsed.name}` }
  return {
    ...named,
    ...(namespace !== undefined && { namespace }),
    source,
    ...availability(parsed, env),
  }
}

/** requires_bins and requires_env, checked here as for a skill on disk. */
function availability(skill: Skill, env: NodeJS.ProcessEnv): { available: boolean; why?: string } {
  const bins = skill.requiresBins.filter((b) => !onPath(b, env))
  const vars = skill.requiresEnv.filter((v) => env[v] === undefined)
  const why = [
    bins.length && `missing on PATH: ${bins.join(', ')}`,
    vars.length && `environment variables not set: ${vars.join(', ')}`,
  ]
    .filter(Boolean)
    .join('; ')
  return why ? { available: false, why } : { available: true }
}

function onPath(bin: string, env: NodeJS.ProcessEnv): boolean {
  const executable = (file: string) => {
    try {
      accessSync(file, constants.X_OK)
      return statSync(file).isFile()
    } catch {
      return false
    }
  }
  if (bin.includes('/')) return executable(bin)
  return (env.PATH ?? '').split(delimiter).some((dir) => dir && executable(join(dir, bin)))
}

/** Bare names in use under more than one namespace (no namespace counts as one), over `skills`. */
export function clashesAmong(skills: readonly Skill[]): SkillClash[] {
  const byBare = new Map<string, Skill[]>()
  for (const s of skills) {
    const bare = s.namespace ? s.name.slice(s.namespace.length + 1) : s.name
    byBare.set(bare, [...(byBare.get(bare) ?? []), s])
  }
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
