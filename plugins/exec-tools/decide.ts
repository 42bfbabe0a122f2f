/**
 * What exec-tools loads, as pure functions over what was read: which package directories to read
 * again, each package's state in list() (loaded, failed, shadowed, filtered, held), and which
 * running packages stop and which start. The instance (instance.ts) does the reading and the
 * starting; these decide, so a test can ask them without composing anything.
 */
import { basename, sep } from 'node:path'
import type { PackageInfo } from './api.ts'
import { info } from './entries.ts'
import type { Package, PackageFailure } from './load.ts'

/** One package directory as scanned: where it is, the result of reading it, its added root's source. */
export interface ReadPackage {
  dir: string
  result: Package | PackageFailure
  source?: string
}

/** What the decisions ask about holds and the skill filter (as they stand now). */
export interface Gates {
  /** held: `hold` unloaded it; `why` is shown with it */
  held(id: string): boolean
  why(id: string): string | undefined
  /** the skill filter's verdict; no filter: every package is allowed */
  allows?(id: string): boolean
}

/**
 * Whether the package in `dir` is read again: on a full re-read (no `touched`), when a touched
 * path is the directory or under it, or when no package from it runs now (nothing to reuse).
 */
export function needsReading(dir: string, touched: string[] | undefined, runs: boolean): boolean {
  return !touched || !runs || touched.some((p) => p === dir || p.startsWith(dir + sep))
}

/**
 * Each directory's entry in list(), highest priority first, and the packages that should run. A
 * directory that failed to read is `failed`; a second package with an id already claimed is
 * `shadowed` (the first, higher, directory wins, whatever its own state); a held package keeps its
 * identity and shows why; one the skill filter leaves out is `filtered`; the rest are `loaded`.
 */
export function classify(
  read: ReadPackage[],
  gates: Gates,
): { infos: PackageInfo[]; next: Map<string, Package> } {
  const infos: PackageInfo[] = []
  const next = new Map<string, Package>()
  const claimed = new Set<string>()
  for (const { dir, result, source } of read) {
    if (!('manifest' in result)) {
      infos.push(info(basename(dir), dir, 'failed', undefined, result.errors, source))
      continue
    }
    const { id } = result.manifest
    // a held package keeps its identity in list(), whatever the filter says
    const state = claimed.has(id)
      ? 'shadowed'
      : gates.held(id)
        ? 'held'
        : gates.allows && !gates.allows(id)
          ? 'filtered'
          : 'loaded'
    claimed.add(id)
    infos.push({
      ...info(id, dir, state, result, [], source),
      ...(state === 'held' && { why: gates.why(id) }),
    })
    if (state === 'loaded') next.set(id, result)
  }
  return { infos, next }
}

/**
 * Which running packages stop (gone, or changed: another fingerprint or directory) and which of
 * `next` start (not running after the stops, not held, allowed by the filter as it is now: one
 * that arrived while the packages were read counts).
 */
export function restarts(
  running: ReadonlyMap<string, Package>,
  next: ReadonlyMap<string, Package>,
  gates: Gates,
): { stop: string[]; start: string[] } {
  const stop = [...running]
    .filter(([id, pkg]) => {
      const now = next.get(id)
      return now?.fingerprint !== pkg.fingerprint || now?.dir !== pkg.dir
    })
    .map(([id]) => id)
  const start = [...next.keys()].filter(
    (id) =>
      (!running.has(id) || stop.includes(id)) &&
      !gates.held(id) &&
      (!gates.allows || gates.allows(id)),
  )
  return { stop, start }
}
