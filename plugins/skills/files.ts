/**
 * A skill's own files, read safely: only from inside the skill's real directory (`..`, absolute
 * paths and symlinks that lead out are refused), only what the listing shows (no hidden file or
 * directory, nothing in node_modules, also not through a symlink), only regular files (a FIFO
 * must not block the process), at most a size. Used by `skill_read` and by the MCP server's skill
 * resources.
 */
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
} from 'node:fs'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import type { Skill } from './parse.ts'

export const MAX_SKILL_FILE_BYTES = 4 * 1024 * 1024

/** Why a skill file was not read; the message is written for the one who asked. */
export class SkillFileRefused extends Error {}

/** A name the listing skips: hidden (`.env`, `.git`) or node_modules. */
const unlisted = (name: string) => name.startsWith('.') || name.toLowerCase() === 'node_modules'

/** The bytes of `file` (relative to the skill); SkillFileRefused says why not. */
export function readSkillFile(skill: Skill, file: string, maxBytes = MAX_SKILL_FILE_BYTES): Buffer {
  const refuse = (why: string) => new SkillFileRefused(why)
  const parts = file.split(/[\\/]/)
  if (isAbsolute(file) || file.includes('\0') || parts.includes('..'))
    throw refuse(`"${file}" is not a path inside the skill; give one like references/guide.md`)
  const hidden = `"${file}" is not one of the skill's files (hidden files and node_modules are not read)`
  if (parts.some(unlisted)) throw refuse(hidden)
  let real: string
  try {
    // the directory must still be the one indexed: a skill swapped for a symlink reads nothing
    if (realpathSync(skill.dir) !== skill.realDir)
      throw refuse(`the skill "${skill.name}" changed on disk; read it again once it is re-indexed`)
    real = realpathSync(resolve(skill.dir, file))
  } catch (err) {
    throw err instanceof SkillFileRefused
      ? err
      : refuse(`the skill "${skill.name}" has no file "${file}"`)
  }
  const root = skill.realDir!
  if (!real.startsWith(root + sep))
    throw refuse(`"${file}" is outside the skill "${skill.name}"; only its own files can be read`)
  // a symlink inside the skill may lead to a hidden file of it: what it names counts too
  if (relative(root, real).split(sep).some(unlisted)) throw refuse(hidden)
  let fd: number | undefined
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK)
    const stat = fstatSync(fd)
    if (stat.isDirectory()) throw refuse(`"${file}" is a directory`)
    if (!stat.isFile()) throw refuse(`"${file}" is not a regular file`)
    if (stat.size > maxBytes)
      throw refuse(`"${file}" is ${stat.size} bytes; files of at most ${maxBytes} bytes are read`)
    return readFileSync(fd)
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** The skill's files other than SKILL.md, relative, breadth-first, at most `max`; hidden files and node_modules skipped. */
export function skillFiles(skill: Skill, max: number): string[] {
  const out: string[] = []
  const queue = [skill.dir]
  while (queue.length && out.length < max) {
    const dir = queue.shift()!
    let entries
    try {
      entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
        a.name.localeCompare(b.name),
      )
    } catch {
      continue
    }
    for (const e of entries) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue
      const path = join(dir, e.name)
      if (e.isDirectory()) queue.push(path)
      else if (e.isFile() && path !== skill.file && out.length < max)
        out.push(relative(skill.dir, path))
    }
  }
  return out
}
