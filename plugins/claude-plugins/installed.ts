/**
 * The plugins a Claude Code install has: `<claudeHome>/plugins/installed_plugins.json` (version 2:
 * each `plugin@marketplace` with its installs, user-wide or for one project; version 1: one
 * install each), less those `enabledPlugins` turns off in the user's, the project's and the local
 * settings (the later wins; a plugin they do not name stays on, as after an install).
 */
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { isObject, readJson } from './manifest.ts'

export interface ClaudeInstall {
  id: string
  dir: string
}

export function claudeCodeInstalls(
  claudeHome: string,
  projectDir: string,
  warn: (message: string) => void,
): ClaudeInstall[] {
  const file = join(claudeHome, 'plugins', 'installed_plugins.json')
  if (!existsSync(file)) return []
  const read = readJson(file)
  if ('problem' in read) {
    warn(read.problem)
    return []
  }
  const registry = isObject(read.value) && isObject(read.value.plugins) ? read.value.plugins : {}
  const enabled = enabledPlugins(claudeHome, projectDir, warn)
  const out: ClaudeInstall[] = []
  for (const [id, entry] of Object.entries(registry)) {
    if (enabled.get(id) === false) continue
    const installs = (Array.isArray(entry) ? entry : [entry]).filter(isObject)
    const install = installs.find(
      (i) =>
        i.scope === undefined ||
        i.scope === 'user' ||
        (typeof i.projectPath === 'string' && resolve(i.projectPath) === resolve(projectDir)),
    )
    const path = install?.installPath
    if (typeof path !== 'string') continue
    const dir = path.startsWith('~/') ? join(homedir(), path.slice(2)) : resolve(path)
    if (existsSync(dir)) out.push({ id, dir })
    else warn(`${file}: ${id} is installed at ${path}, which does not exist`)
  }
  return out
}

function enabledPlugins(claudeHome: string, projectDir: string, warn: (m: string) => void) {
  const enabled = new Map<string, boolean>()
  const files = [
    join(claudeHome, 'settings.json'),
    join(projectDir, '.claude', 'settings.json'),
    join(projectDir, '.claude', 'settings.local.json'),
  ]
  for (const file of files.filter((f) => existsSync(f))) {
    const read = readJson(file)
    if ('problem' in read) {
      warn(read.problem)
      continue
    }
    const map = isObject(read.value) ? read.value.enabledPlugins : undefined
    if (isObject(map))
      for (const [id, on] of Object.entries(map)) if (typeof on === 'boolean') enabled.set(id, on)
  }
  return enabled
}
