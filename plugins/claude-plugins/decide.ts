/**
 * Which plugin folders claude-plugins runs, as pure functions over what was found: one folder per
 * plugin name (the first found wins; `except` leaves names out), and which running plugins
 * restart (their fingerprint changed), stop (gone) or start. The instance (instance.ts) reads the
 * folders and runs the children; these decide, so a test asks them without a kernel.
 */
import { readConfigText } from 'yoke'
import type { Found } from './discover.ts'
import type { PluginManifest } from './manifest.ts'

/** A plugin to run: its folder, who brought it, and what restarts it when it changes. */
export interface Chosen extends Found {
  spec: string
}

/**
 * One folder per plugin name, in the order found; a later folder with a name already chosen is
 * left out with a warning naming both; a name in `except` is left out silently.
 */
export function choose(
  found: Found[],
  manifestOf: (dir: string) => PluginManifest,
  specOf: (dir: string, manifest: PluginManifest) => string,
  except: ReadonlySet<string>,
): { next: Map<string, Chosen>; warnings: string[] } {
  const next = new Map<string, Chosen>()
  const warnings: string[] = []
  for (const { dir, source } of found) {
    const manifest = manifestOf(dir)
    const { name } = manifest
    if (except.has(name)) continue
    const taken = next.get(name)
    if (taken) {
      warnings.push(
        `plugin ${name} in ${dir} is not loaded: ${taken.dir} has the same name (the first is used)`,
      )
      continue
    }
    next.set(name, { spec: specOf(dir, manifest), dir, source })
  }
  return { next, warnings }
}

/** The running plugins that stop (gone or changed) and the chosen ones that start (new or changed). */
export function restarts(
  running: ReadonlyMap<string, { spec: string }>,
  next: ReadonlyMap<string, { spec: string }>,
): { stop: string[]; start: string[] } {
  const stop = [...running].filter(([name, r]) => next.get(name)?.spec !== r.spec).map(([n]) => n)
  const start = [...next.keys()].filter((name) => !running.has(name) || stop.includes(name))
  return { stop, start }
}

/** What restarts a plugin when it changes: its manifest and its server files (hooks files are watched by claude-hooks). */
export function fingerprint(dir: string, manifest: PluginManifest): string {
  const read = (f: string) => {
    try {
      return readConfigText(f) // checked: a FIFO named plugin.json must not hang every reload
    } catch {
      return ''
    }
  }
  return JSON.stringify([
    dir,
    manifest.file ? read(manifest.file) : '',
    manifest.mcpFiles.map(read),
    manifest.hookFiles,
    manifest.skills,
    manifest.commands,
    manifest.agents,
  ])
}

/** An item by full name (`plugin:thing`), or by bare name when one plugin alone has it. */
export function byName<T extends { name: string }>(items: T[], name: string): T | undefined {
  const exact = items.find((i) => i.name === name)
  if (exact) return exact
  const bare = items.filter((i) => i.name.slice(i.name.indexOf(':') + 1) === name)
  return bare.length === 1 ? bare[0] : undefined
}
