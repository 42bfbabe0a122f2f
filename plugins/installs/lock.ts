/**
 * `yoke.lock`: JSON with its keys in a fixed order (entries by name), so that a diff shows what an
 * install changed. A missing file is an empty lock; one that cannot be read or is not a lock is an
 * error naming the file; a bad entry is left out (and kept in the file), the others load. Changes are made under a lock (`yoke.lock.lock`, a directory) and
 * written atomically, so two `yoke add` at once never lose an entry.
 */
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import lockfile from 'proper-lockfile'
import writeFileAtomic from 'write-file-atomic'
import { z } from 'zod'
import { readConfigText, YokeError } from 'yoke'
import type { LockEntry, LockFile, MarketplaceRecord } from './api.ts'

/** What `yoke add` accepts as an install's name (and so as a folder under `installed/`). */
export const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
export const usableName = (name: string) => NAME.test(name) && !name.includes('..')

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
    // a `yoke.<word>` file at the project's root: project trust covers it as it covers the config
    // (its hash is recorded, an edit asks again), since what it installs may run code
    lock: join(projectDir, 'yoke.lock'),
    installed: join(projectDir, '.yoke', 'installed'),
  }
}

export function userScope(home: string): Scope {
  return { name: 'user', lock: join(home, 'yoke.lock'), installed: join(home, 'installed') }
}

const text = z.string().min(1).max(4096)
const name = z
  .string()
  .refine(usableName, 'is not an install name (letters, digits, . _ -, at most 64, no ..)')

/** One entry of `installs`, as `yoke add` writes it. */
const entrySchema = z.object({
  name,
  kind: z.enum(['skill', 'skills', 'exec-package', 'claude-plugin']),
  version: z.string().max(256).optional(),
  source: z.object({
    given: text,
    type: z.enum(['folder', 'git', 'tarball', 'npm', 'server-json', 'registry']),
    location: text,
    ref: text.optional(),
    commit: text.optional(),
    subdir: text.optional(),
    marketplace: text.optional(),
    entry: text.optional(),
    binary: z
      .object({ platform: text, url: text, sha256: z.string().max(128).optional() })
      .optional(),
  }),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'is not a sha256 (64 hex digits)'),
  installedAt: z.string().max(64),
})

const marketplaceSchema = z.object({ name: text, source: text, addedAt: z.string().max(64) })

/** An entry of the lock that is left out, and why; kept as it is when the lock is written. */
export interface LockProblem {
  file: string
  section: 'installs' | 'marketplaces'
  key: string
  reason: string
}

/** A lock as read: the good entries, the bad ones (kept verbatim for the next write) and why. */
export interface ReadLock extends LockFile {
  problems: LockProblem[]
  /** the bad entries as they were in the file, by section and key */
  kept: { installs: Record<string, unknown>; marketplaces: Record<string, unknown> }
}

const empty = (): ReadLock => ({
  lockfileVersion: 1,
  installs: {},
  marketplaces: {},
  problems: [],
  kept: { installs: {}, marketplaces: {} },
})

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** zod's first issue as `at source.type: expected …`. */
const issueOf = (error: z.ZodError) => {
  const issue = error.issues[0]!
  return `${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}`
}

/**
 * Reads a lock through the config reader (a regular file, at most 1 MiB: a FIFO, a device or a
 * huge file is refused without being read), then checks it against its schema: the file as a
 * whole (JSON, lockfileVersion 1, `installs` and `marketplaces` objects) or INSTALL_LOCK_INVALID
 * naming it; then each entry, and a bad one (a wrong type, a name `yoke add` would refuse such as
 * `../../outside`, a key that is not its name, an unknown kind) is left out with a problem naming
 * the file and the key, while the others load. A missing file is an empty lock.
 */
export function readLock(file: string): ReadLock {
  let source: string
  try {
    source = readConfigText(file)
  } catch (err) {
    if ((err as YokeError).code === 'CONFIG_NOT_FOUND') return empty()
    throw invalid(file, `it cannot be read: ${(err as Error).message}`, err)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(source)
  } catch (err) {
    throw invalid(file, `it is not valid JSON (${(err as Error).message})`, err)
  }
  if (!isRecord(parsed) || parsed.lockfileVersion !== 1)
    throw invalid(file, 'it is not a yoke lock file (an object with "lockfileVersion": 1)')
  const lock = empty()
  const sections = [
    ['installs', entrySchema],
    ['marketplaces', marketplaceSchema],
  ] as const
  for (const [section, schema] of sections) {
    const raw = parsed[section] ?? {}
    if (!isRecord(raw)) throw invalid(file, `its "${section}" is not an object`)
    for (const key of Object.keys(raw)) {
      const checked = schema.safeParse(raw[key])
      const reason = !checked.success
        ? issueOf(checked.error)
        : section === 'installs' && !usableName(key)
          ? 'its key is not an install name (letters, digits, . _ -, at most 64, no ..)'
          : checked.data.name !== key
            ? `its key is not its name (${JSON.stringify(checked.data.name).slice(0, 80)})`
            : undefined
      if (reason || !checked.success) {
        lock.problems.push({ file, section, key, reason: reason! })
        lock.kept[section][key] = raw[key]
      } else if (section === 'installs') lock.installs[key] = checked.data as LockEntry
      else lock.marketplaces[key] = checked.data as MarketplaceRecord
    }
  }
  return lock
}

/** How a bad entry is said: the file, the entry, why, and what to do. */
export const problemText = (p: LockProblem) =>
  `${p.file}: ${p.section} entry ${JSON.stringify(p.key).slice(0, 100)} is left out: ${p.reason}`

const invalid = (file: string, reason: string, cause?: unknown) =>
  new YokeError(
    'INSTALL_LOCK_INVALID',
    { file, reason },
    { file, ...(cause !== undefined && { cause }) },
  )

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

function serialize(lock: ReadLock): string {
  const byName = <T>(record: Record<string, T>, map: (v: T) => T, kept: Record<string, unknown>) =>
    Object.fromEntries(
      [...new Set([...Object.keys(record), ...Object.keys(kept)])]
        .sort()
        .map((k) => [k, k in record ? map(record[k]!) : kept[k]]),
    )
  // a bad entry that no change replaced is written back as it was: yoke never drops what it
  // could not read
  const out = {
    lockfileVersion: 1,
    installs: byName(lock.installs, ordered, lock.kept.installs),
    marketplaces: byName(
      lock.marketplaces,
      (m: MarketplaceRecord) => ({ name: m.name, source: m.source, addedAt: m.addedAt }),
      lock.kept.marketplaces,
    ),
  }
  return JSON.stringify(out, null, 2) + '\n'
}

/**
 * Reads the lock, lets `change` edit it (and do the work the edit records, such as moving the new
 * tree into place), then writes it: all under the lock, so the work and the record go together.
 */
export async function updateLock<T>(
  file: string,
  change: (lock: ReadLock) => Promise<T> | T,
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
    // an entry the change set replaces the bad one kept under its key
    for (const key of Object.keys(lock.installs)) delete lock.kept.installs[key]
    for (const key of Object.keys(lock.marketplaces)) delete lock.kept.marketplaces[key]
    await writeFileAtomic(file, serialize(lock))
    return result
  } finally {
    await release()
  }
}
