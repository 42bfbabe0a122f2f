/**
 * `yoke.lock`: JSON with its keys in a fixed order (entries by name), so that a diff shows what an
 * install changed. It is read leniently only in that a missing file is an empty lock; a broken one
 * is an error naming the file. Changes are made under a lock (`yoke.lock.lock`, a directory) and
 * written atomically, so two `yoke add` at once never lose an entry.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import lockfile from 'proper-lockfile'
import writeFileAtomic from 'write-file-atomic'
import { YokeError } from 'yoke/cli'
import type { LockEntry, LockFile, MarketplaceRecord } from './api.ts'

/** Where one scope keeps its lock and its installs. */
export interface Scope {
  name: 'project' | 'user'
  lock: string
  /** `.yoke/installed` (project) or `$YOKE_HOME/installed` (user) */
  installed: string
}

export function projectScope(projectDir: string): Scope {
  return {
    name: 'project',
    lock: join(projectDir, 'yoke.lock'),
    installed: join(projectDir, '.yoke', 'installed'),
  }
}

export function userScope(home: string): Scope {
  return { name: 'user', lock: join(home, 'yoke.lock'), installed: join(home, 'installed') }
}

const empty = (): LockFile => ({ lockfileVersion: 1, installs: {}, marketplaces: {} })

export function readLock(file: string): LockFile {
  if (!existsSync(file)) return empty()
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new YokeError(
      'INSTALL_FAILED',
      {
        reason: `${file} is not valid JSON (${(err as Error).message}): fix it, or restore it from version control`,
      },
      { file },
    )
  }
  const lock = parsed as Partial<LockFile>
  if (!lock || typeof lock !== 'object' || lock.lockfileVersion !== 1)
    throw new YokeError(
      'INSTALL_FAILED',
      { reason: `${file} is not a yoke lock file (lockfileVersion 1)` },
      { file },
    )
  return {
    lockfileVersion: 1,
    installs: lock.installs ?? {},
    marketplaces: lock.marketplaces ?? {},
  }
}

/** The entry's keys in the documented order (JSON keeps insertion order). */
function ordered(e: LockEntry): LockEntry {
  const source = Object.fromEntries(
    (
      [
        'given',
        'type',
        'location',
        'ref',
        'commit',
        'subdir',
        'marketplace',
        'entry',
        'binary',
      ] as const
    )
      .filter((k) => e.source[k] !== undefined)
      .map((k) => [k, e.source[k]]),
  ) as unknown as LockEntry['source']
  return {
    name: e.name,
    kind: e.kind,
    ...(e.version !== undefined && { version: e.version }),
    source,
    sha256: e.sha256,
    installedAt: e.installedAt,
  }
}

function serialize(lock: LockFile): string {
  const byName = <T>(record: Record<string, T>, map: (v: T) => T) =>
    Object.fromEntries(
      Object.keys(record)
        .sort()
        .map((k) => [k, map(record[k]!)]),
    )
  const out = {
    lockfileVersion: 1,
    installs: byName(lock.installs, ordered),
    marketplaces: byName(lock.marketplaces, (m: MarketplaceRecord) => ({
      name: m.name,
      source: m.source,
      addedAt: m.addedAt,
    })),
  }
  return JSON.stringify(out, null, 2) + '\n'
}

/**
 * Reads the lock, lets `change` edit it (and do the work the edit records, such as moving the new
 * tree into place), then writes it: all under the lock, so the work and the record go together.
 */
export async function updateLock<T>(
  file: string,
  change: (lock: LockFile) => Promise<T> | T,
): Promise<T> {
  mkdirSync(dirname(file), { recursive: true })
  let release: () => Promise<void>
  try {
    release = await lockfile.lock(file, {
      realpath: false,
      retries: { retries: 60, minTimeout: 50, maxTimeout: 250 },
      stale: 15_000,
    })
  } catch (err) {
    throw new YokeError('INSTALL_FAILED', {
      reason: `${file} is locked by another yoke (${(err as Error).message}): wait for it, or remove ${file}.lock if no yoke runs`,
    })
  }
  try {
    const lock = readLock(file)
    const result = await change(lock)
    await writeFileAtomic(file, serialize(lock))
    return result
  } finally {
    await release()
  }
}
