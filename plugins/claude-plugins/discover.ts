/**
 * Where plugin folders are found: a root is itself a plugin folder, a marketplace checkout
 * (`.claude-plugin/marketplace.json` with `./` sources), or a folder of plugin folders.
 */
import { existsSync, readdirSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, relative, resolve, sep } from 'node:path'
import { messageOf } from 'yoke'
import { isObject, isPluginFolder, readJson } from './manifest.ts'

/** One plugin folder found, and who brought it (`config`, a marketplace, an installer, Claude Code). */
export interface Found {
  dir: string
  source: string
}

/** A path of the config: `~/` is the home directory, a relative one starts at the project. */
export function expandDir(projectDir: string, dir: string): string {
  return resolve(projectDir, dir.startsWith('~/') ? join(homedir(), dir.slice(2)) : dir)
}

/**
 * The plugin folders under `root`: itself when it is one, the plugins a marketplace.json lists
 * with `./` sources, else its immediate subfolders that are plugins.
 */
export function discover(root: string, source: string, warn: (m: string) => void): Found[] {
  if (!existsSync(root)) return []
  if (isPluginFolder(root)) return [{ dir: root, source }]
  const market = join(root, '.claude-plugin', 'marketplace.json')
  if (existsSync(market)) return marketplacePlugins(root, market, source, warn)
  let names: string[]
  try {
    names = readdirSync(root).sort()
  } catch (err) {
    warn(`${root}: ${messageOf(err)}`)
    return []
  }
  return names
    .filter((n) => !n.startsWith('.'))
    .map((n) => join(root, n))
    .filter((dir) => isDir(dir) && isPluginFolder(dir))
    .map((dir) => ({ dir, source }))
}

function marketplacePlugins(root: string, file: string, source: string, warn: (m: string) => void) {
  const read = readJson(file)
  if ('problem' in read) {
    warn(read.problem)
    return []
  }
  const market = isObject(read.value) ? read.value : {}
  const base =
    isObject(market.metadata) && typeof market.metadata.pluginRoot === 'string'
      ? resolve(root, market.metadata.pluginRoot)
      : root
  const out: Found[] = []
  for (const entry of Array.isArray(market.plugins) ? market.plugins : []) {
    if (!isObject(entry)) continue
    const from = entry.source
    if (typeof from !== 'string' || !from.startsWith('./')) {
      warn(
        `${file}: plugin ${JSON.stringify(entry.name)} comes from outside this folder; \`yoke add ${String(entry.name)}@<marketplace>\` installs it`,
      )
      continue
    }
    const dir = resolve(base, from)
    const rel = relative(root, dir)
    if (rel.startsWith('..') || rel.startsWith(sep))
      warn(`${file}: plugin ${JSON.stringify(entry.name)}: ${from} leads out of the marketplace`)
    else if (isDir(dir))
      out.push({ dir, source: `${source} (marketplace ${String(market.name ?? root)})` })
    else warn(`${file}: plugin ${JSON.stringify(entry.name)}: ${from} does not exist`)
  }
  return out
}

function isDir(p: string) {
  try {
    return statSync(p).isDirectory()
  } catch {
    return false
  }
}
