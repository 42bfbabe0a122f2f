/**
 * @module skills/read-skill
 * Reading one skill folder of a root: its SKILL.md parsed, named within the root's namespace, or
 * the problem that keeps it out. What would otherwise vanish without a word is a problem too: a
 * SKILL.md (or a skill folder) that is a symlink to nothing, and a lowercase skill.md.
 */
import {
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
} from 'node:fs'
import { join } from 'node:path'
import { messageOf } from 'yoke'
import { isProblem, parseSkill, type Skill, type SkillProblem } from './parse.ts'

export type Parsed = Skill | SkillProblem

/** A skills directory (a folder of skill folders), and how its skills are named. */
export interface SkillRoot {
  dir: string
  /** its skills are named `<namespace>:<name>` (a Claude Code plugin's skills) */
  namespace?: string
  /** who added it, shown with its skills and problems */
  source?: string
}

export function subdirectories(root: string): string[] {
  try {
    return readdirSync(root, { withFileTypes: true })
      .filter((d) => d.isDirectory() || d.isSymbolicLink())
      .map((d) => d.name)
      .sort()
  } catch {
    return [] // a missing directory holds no skills
  }
}

/** the largest SKILL.md read, on disk or contributed */
export const MAX_SKILL_BYTES = 1024 * 1024

/**
 * Reads `<root>/<dirName>/SKILL.md`: the skill, the problem that keeps it out, or nothing when the
 * folder is no skill. A SKILL.md (or skill folder) that is a symlink to nothing is a problem, and
 * so is a lowercase skill.md: both would otherwise vanish without a word.
 */
export function readSkill(root: SkillRoot | string, dirName: string): Parsed | undefined {
  const { dir: rootDir, namespace, source } = typeof root === 'string' ? { dir: root } : root
  const dir = join(rootDir, dirName)
  const file = join(dir, 'SKILL.md')
  const problem = (at: string, line: number, message: string): SkillProblem => ({
    file: at,
    line,
    message,
    ...(source !== undefined && { source }),
  })
  const missing = missingFile(dir, file)
  if (missing) return missing === true ? undefined : problem(missing.file, 0, missing.message)
  let content: string
  let realDir: string
  try {
    const stat = statSync(file)
    if (!stat.isFile()) return undefined
    if (stat.size > MAX_SKILL_BYTES)
      return problem(
        file,
        1,
        `SKILL.md is ${stat.size} bytes; a skill's instructions may be at most ${MAX_SKILL_BYTES} (put the rest in files it points to)`,
      )
    content = readFileSync(file, 'utf8')
    realDir = realpathSync(dir)
  } catch {
    return undefined // it went away
  }
  try {
    const parsed = parseSkill(content, {
      file,
      dir,
      dirName,
      root: rootDir,
      hasTools: existsSync(join(dir, 'manifest.json')),
      nameFromDirectory: namespace !== undefined,
    })
    if (isProblem(parsed)) return { ...parsed, ...(source !== undefined && { source }) }
    return {
      ...parsed,
      ...(namespace !== undefined && { name: `${namespace}:${parsed.name}`, namespace }),
      ...(source !== undefined && { source }),
      realDir,
    }
  } catch (err) {
    return problem(file, 1, `unreadable: ${messageOf(err)}`)
  }
}

/**
 * Why `dir` has no readable SKILL.md: `true` when it is simply no skill, or a problem to report
 * (a dangling symlink, a lowercase skill.md); undefined when SKILL.md is there.
 */
function missingFile(
  dir: string,
  file: string,
): true | { file: string; message: string } | undefined {
  const dangling = (path: string, what: string) => {
    const target = quietly(() => readlinkSync(path)) ?? '?'
    return {
      file: path,
      message: `${what} is a symlink to "${target}", which does not exist: restore it, or remove the link`,
    }
  }
  const link = quietly(() => lstatSync(dir))
  if (!link) return true
  const target = quietly(() => statSync(dir))
  if (link.isSymbolicLink() && !target) return dangling(dir, 'the skill folder')
  if (!target?.isDirectory()) return true
  const skillMd = quietly(() => lstatSync(file))
  if (skillMd?.isSymbolicLink() && !quietly(() => statSync(file))) return dangling(file, 'SKILL.md')
  if (skillMd) return undefined
  const lowercase = join(dir, 'skill.md')
  if (quietly(() => statSync(lowercase))?.isFile())
    return {
      file: lowercase,
      message:
        'the file is named skill.md: rename it SKILL.md (yoke, Claude Code and the spec read SKILL.md only)',
    }
  return true
}

/** What `read` gives, or undefined when the file system refuses (gone, not a directory, no access). */
function quietly<T>(read: () => T): T | undefined {
  try {
    return read()
  } catch {
    return undefined
  }
}
