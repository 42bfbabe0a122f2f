/**
 * Reading a plugin folder's manifest: `.claude-plugin/plugin.json` (Claude Code), then
 * `.codex-plugin/plugin.json` (Codex), then a root `plugin.json` (Agent Plugins 1.0); none is
 * fine (Claude Code names the plugin after its folder). Component paths given in the manifest add
 * to the default folders, as Claude Code does; a path that leads out of the plugin is refused.
 */
import { existsSync } from 'node:fs'
import { basename, join, relative, resolve, sep } from 'node:path'
import { messageOf, readConfigText } from 'yoke'
import type { ManifestKind } from './api.ts'

const MANIFESTS: Array<[ManifestKind, string]> = [
  ['claude', join('.claude-plugin', 'plugin.json')],
  ['codex', join('.codex-plugin', 'plugin.json')],
  ['agent-plugins', 'plugin.json'],
]

const KNOWN = new Set([
  ...['$schema', 'name', 'displayName', 'version', 'description', 'author', 'homepage'],
  ...['repository', 'license', 'keywords', 'metadata', 'category', 'tags', 'interface'],
  ...['skills', 'commands', 'agents', 'hooks', 'mcpServers', 'defaultEnabled', 'extensions'],
  'mcp', // Codex: servers in its config.toml `mcp_servers` shape
])
/** fields Claude Code or Codex read that yoke does not use (yet): said once per plugin */
const UNUSED = new Set([
  ...['outputStyles', 'lspServers', 'workflows', 'userConfig', 'channels', 'dependencies'],
  ...['apps', 'experimental'],
])

export interface PluginManifest {
  name: string
  kind: ManifestKind
  file?: string
  version?: string
  description?: string
  /** folders of skill folders */
  skills: string[]
  /** command files' folders (or single files) */
  commands: string[]
  agents: string[]
  /** hooks.json files, and hooks given inline in the manifest */
  hookFiles: string[]
  inlineHooks?: Record<string, unknown>
  /** .mcp.json files, and servers given inline */
  mcpFiles: string[]
  inlineMcp?: Record<string, unknown>
  /** Codex: servers under `mcp` (`{ NAME: { command | url, … } }`, or under `mcp_servers`) */
  codexMcp?: Record<string, unknown>
  notes: string[]
  problems: string[]
}

/** A plugin name as Claude Code wants it: kebab-case, the namespace of everything in it. */
const NAME = /^[a-z0-9][a-z0-9._-]*$/

export function readManifest(dir: string): PluginManifest {
  const notes: string[] = []
  const problems: string[] = []
  const found = MANIFESTS.find(([, rel]) => existsSync(join(dir, rel)))
  let raw: Record<string, unknown> = {}
  let file: string | undefined
  if (found) {
    file = join(dir, found[1])
    const parsed = readJson(file)
    if ('problem' in parsed) problems.push(parsed.problem)
    else if (!isObject(parsed.value)) problems.push(`${file}: the manifest is not a JSON object`)
    else raw = parsed.value
  }
  const kind: ManifestKind = found && file ? found[0] : 'none'
  let name = typeof raw.name === 'string' ? raw.name : basename(dir)
  if (found && typeof raw.name !== 'string')
    problems.push(`${file}: "name" is missing; the folder's name ${JSON.stringify(name)} is used`)
  if (!NAME.test(name)) {
    const fixed = name.toLowerCase().replace(/[^a-z0-9._-]+/g, '-')
    problems.push(
      `${file ?? dir}: the plugin name ${JSON.stringify(name)} is not kebab-case; it is used as ${JSON.stringify(fixed)}`,
    )
    name = fixed
  }
  for (const key of Object.keys(raw)) {
    if (UNUSED.has(key))
      notes.push(`"${key}" is read by Claude Code or Codex; yoke does not use it`)
    else if (!KNOWN.has(key)) notes.push(`unknown manifest field "${key}" (ignored)`)
  }

  const paths = (key: string, defaults: string[]) => {
    const given = raw[key]
    const list = typeof given === 'string' ? [given] : Array.isArray(given) ? given : []
    const out = defaults.map((d) => join(dir, d)).filter((p) => existsSync(p))
    for (const p of list) {
      if (typeof p !== 'string') continue
      const inside = insidePath(dir, p)
      if (!inside)
        problems.push(`${file}: "${key}" path ${JSON.stringify(p)} leads out of the plugin`)
      else if (!existsSync(inside))
        problems.push(`${file}: "${key}" path ${JSON.stringify(p)} does not exist`)
      else if (!out.includes(inside)) out.push(inside)
    }
    return out
  }
  const inline = (key: string) =>
    isObject(raw[key]) ? (raw[key] as Record<string, unknown>) : undefined
  // Codex's plugin manifest gives its servers as config.toml's [mcp_servers.NAME] tables do
  const mcp = inline('mcp')
  const codexMcp = mcp && (isObject(mcp.mcp_servers) ? mcp.mcp_servers : mcp)
  if (raw.mcp !== undefined && !mcp)
    problems.push(
      `${file}: "mcp" is not an object of servers ({ "NAME": { "command" | "url": … } })`,
    )
  return {
    name,
    kind,
    ...(file && { file }),
    ...(typeof raw.version === 'string' && { version: raw.version }),
    ...(typeof raw.description === 'string' && { description: raw.description }),
    skills: paths('skills', ['skills']),
    commands: paths('commands', ['commands']),
    agents: paths('agents', ['agents']),
    hookFiles: isObject(raw.hooks) ? [] : paths('hooks', [join('hooks', 'hooks.json')]),
    ...(inline('hooks') && { inlineHooks: inline('hooks') }),
    mcpFiles: isObject(raw.mcpServers) ? [] : paths('mcpServers', ['.mcp.json', 'mcp.json']),
    ...(inline('mcpServers') && { inlineMcp: inline('mcpServers') }),
    ...(codexMcp && { codexMcp }),
    notes,
    problems,
  }
}

/** Is `dir` a plugin folder? A manifest, or the parts one has. */
export function isPluginFolder(dir: string): boolean {
  return (
    MANIFESTS.some(([, rel]) => existsSync(join(dir, rel))) ||
    ['commands', 'agents', join('hooks', 'hooks.json')].some((p) => existsSync(join(dir, p))) ||
    (existsSync(join(dir, 'skills')) && existsSync(join(dir, '.mcp.json')))
  )
}

/** A JSON file's value, or a problem naming file:line:column. */
export function readJson(file: string): { value: unknown } | { problem: string } {
  let text: string
  try {
    text = readConfigText(file) // a regular file under 1 MiB: a FIFO is refused, not read
  } catch (err) {
    return { problem: `${file}: ${messageOf(err)}` }
  }
  try {
    return { value: JSON.parse(text) }
  } catch (err) {
    const message = messageOf(err)
    const at = /position (\d+)/.exec(message)
    if (!at) return { problem: `${file}: ${message}` }
    const before = text.slice(0, Number(at[1]))
    const line = before.split('\n').length
    const column = before.length - before.lastIndexOf('\n')
    return {
      problem: `${file}:${line}:${column}: ${message.replace(/ in JSON at position \d+.*$/, '')}`,
    }
  }
}

function insidePath(dir: string, p: string): string | undefined {
  const full = resolve(dir, p)
  const rel = relative(dir, full)
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep) && !rel.includes(`..${sep}`))
    ? full
    : undefined
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === 'object' && !Array.isArray(v)
