/**
 * The packages' entries in `list()` (what `yoke plugins list` shows): one per package directory,
 * with its state and identity, and which of them changed between two readings.
 */
import type { PackageInfo } from './api.ts'
import type { Package } from './load.ts'
import type { ManifestProblem } from './manifest.ts'

/** The ids whose entries differ between two readings of the packages (one gone or come counts). */
export function changedIds(before: PackageInfo[], after: PackageInfo[]): string[] {
  const key = (i: PackageInfo) => `${i.id}\0${i.dir}`
  const old = new Map(before.map((i) => [key(i), JSON.stringify(i)]))
  const now = new Map(after.map((i) => [key(i), JSON.stringify(i)]))
  return [...new Set([...old.keys(), ...now.keys()])]
    .filter((k) => old.get(k) !== now.get(k))
    .map((k) => k.slice(0, k.indexOf('\0')))
}

/** One package directory as list() shows it: its state and, when it was read, its identity. */
export function info(
  id: string,
  dir: string,
  state: PackageInfo['state'],
  pkg: Package | undefined,
  errors: ManifestProblem[],
  source: string | undefined,
): PackageInfo {
  const m = pkg?.manifest
  return {
    id,
    dir,
    ...(source !== undefined && { source }),
    state,
    version: m?.version,
    tools: m?.tools.map((t) => t.name) ?? [],
    executable: pkg?.exe?.path,
    sha256: pkg?.exe?.sha256,
    fingerprint: pkg?.fingerprint,
    signed: Boolean(m?.sha256),
    extras: {
      prompts: m?.promptsInclude.length ?? 0,
      mcpServers: m?.mcpServers.length ?? 0,
      hooks: m?.hooks.length ?? 0,
    },
    errors,
    warnings: pkg?.warnings ?? [],
  }
}
