/**
 * What a fetched tree is, read from its layout, in this order:
 * 1. a Claude Code plugin: `.claude-plugin/plugin.json` (or Codex's `.codex-plugin/plugin.json`), or the folders a plugin without one has
 *    (`commands/`, `agents/`, `hooks/hooks.json`, `.mcp.json`);
 * 2. a plugin executable package: `manifest.json` (octos's format);
 * 3. one skill: `SKILL.md`;
 * 4. a folder of skills: `.agents/skills/<name>/SKILL.md` (what `npx skills` lays out), else
 *    `<name>/SKILL.md` at the top, else `skills/<name>/SKILL.md`.
 * With it come the name and version the tree declares (plugin.json, manifest.json, or SKILL.md's
 * `version` / `metadata.version`).
 */
import { readdirSync, statSync, type Stats } from 'node:fs'
import { join, relative } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { readConfigText, YokeError } from 'yoke'
import type { InstallKind } from './api.ts'

export interface Detected {
  kind: InstallKind
  /** the folder whose content is installed (the tree, or `.agents/skills` / `skills` in it) */
  content: string
  name?: string
  version?: string
  /** skills: the skill folders found */
  skills?: string[]
}

/**
 * What a path under an untrusted tree is, or undefined when it is not there in a usable way: a
 * probe never throws. `throwIfNoEntry: false` covers only ENOENT; a plain file where a folder is
 * expected (`LICENSE/SKILL.md`: ENOTDIR), links in a loop (ELOOP), an unreadable folder (EACCES)
 * or a name too long are all "not there" too.
 */
export function probe(p: string): Stats | undefined {
  try {
    return statSync(p, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}
const isDir = (p: string) => probe(p)?.isDirectory() === true
const isFile = (p: string) => probe(p)?.isFile() === true

/** A folder's names, or none when it cannot be read. */
export function namesIn(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

function skillFolders(dir: string): string[] {
  if (!isDir(dir)) return []
  return namesIn(dir)
    .filter((n) => !n.startsWith('.') && isFile(join(dir, n, 'SKILL.md')))
    .sort()
}

/**
 * A file of the tree read through the config reader (a regular file, at most 1 MiB, UTF-8: a FIFO
 * or a link to /dev/zero is refused, not read), or INSTALL_FAILED naming it.
 */
function readText(file: string): string {
  try {
    return readConfigText(file)
  } catch (err) {
    throw new YokeError(
      'INSTALL_FAILED',
      { reason: `${file} cannot be read: ${(err as Error).message}` },
      { file, cause: err },
    )
  }
}

function readJson(file: string): Record<string, unknown> {
  const text = readText(file)
  try {
    const value = JSON.parse(text)
    return value && typeof value === 'object' && !Array.isArray(value) ? value : {}
  } catch (err) {
    throw new YokeError(
      'INSTALL_FAILED',
      { reason: `${file} is not valid JSON: ${(err as Error).message}` },
      { file },
    )
  }
}

const text = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined)

/** SKILL.md's frontmatter (YAML between the first two `---` lines), or {} when it has none. */
export function frontmatter(file: string): Record<string, unknown> {
  const match = /^\s*---\r?\n([\s\S]*?)\r?\n---/.exec(readText(file))
  if (!match) return {}
  try {
    const value = parseYaml(match[1]!)
    return value && typeof value === 'object' ? value : {}
  } catch {
    return {} // the skills plugin reports a broken SKILL.md when it loads it
  }
}

export function skillMeta(dir: string): { name?: string; version?: string } {
  const fm = frontmatter(join(dir, 'SKILL.md'))
  const metadata = (fm.metadata ?? {}) as Record<string, unknown>
  const name = text(fm.name)
  const version =
    text(fm.version) ??
    text(metadata.version) ??
    (typeof fm.version === 'number' ? String(fm.version) : undefined)
  return { ...(name && { name }), ...(version && { version }) }
}

export function detect(root: string, label: string, hint?: { kind?: InstallKind }): Detected {
  // Claude Code's manifest, else Codex's: the plugin is named after it, not after its folder
  const pluginJson = [
    join(root, '.claude-plugin', 'plugin.json'),
    join(root, '.codex-plugin', 'plugin.json'),
  ].find(isFile)
  const pluginLike =
    ['commands', 'agents'].some((d) => isDir(join(root, d))) ||
    isFile(join(root, 'hooks', 'hooks.json')) ||
    isFile(join(root, '.mcp.json'))
  if (hint?.kind === 'claude-plugin' || pluginJson || pluginLike) {
    const manifest = pluginJson ? readJson(pluginJson) : {}
    const name = text(manifest.name)
    const version = text(manifest.version)
    return {
      kind: 'claude-plugin',
      content: root,
      ...(name && { name }),
      ...(version && { version }),
    }
  }
  if (isFile(join(root, 'manifest.json'))) {
    const manifest = readJson(join(root, 'manifest.json'))
    const name = text(manifest.id) ?? text(manifest.name)
    const version = text(manifest.version)
    return {
      kind: 'exec-package',
      content: root,
      ...(name && { name }),
      ...(version && { version }),
    }
  }
  if (isFile(join(root, 'SKILL.md'))) return { kind: 'skill', content: root, ...skillMeta(root) }
  for (const dir of [join(root, '.agents', 'skills'), root, join(root, 'skills')]) {
    const skills = skillFolders(dir)
    if (skills.length) return { kind: 'skills', content: dir, skills }
  }
  throw new YokeError('INSTALL_FAILED', {
    reason: `${label} holds nothing yoke installs: expected SKILL.md, manifest.json, .claude-plugin/plugin.json, or skill folders (<name>/SKILL.md, as in .agents/skills)${isDir(root) ? ` (it has: ${namesIn(root).slice(0, 8).join(', ') || 'nothing'})` : ''}`,
  })
}

/** Where the content sits inside the source, for the lock (`.agents/skills`), if not at its top. */
export function subdirOf(root: string, content: string): string | undefined {
  const rel = relative(root, content).replace(/\\/g, '/')
  return rel || undefined
}
