/**
 * `yoke add`, `update` and `remove` as functions (the commands print what they return). An
 * install is fetched into a scratch folder, laid out in a staging folder beside its final place
 * (same filesystem), hashed, and then swapped in with a rename while the lock is held, so a
 * running `yoke dev` sees the old tree or the new one, never half of one; the lock entry is
 * written in the same step.
 *
 * Layout under `.yoke/installed/NAME/` (so each service gets the folder shape it reads): a skill
 * and an exec package sit in a folder named NAME inside it (a folder of skills, of packages); a
 * folder of skills is the folder itself; a Claude Code plugin is the folder itself.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { YokeError } from 'yoke/cli'
import type { InstallKind, InstallSource, LockEntry } from './api.ts'
import { binariesOf, installBinary } from './binaries.ts'
import { copyTree } from './copy.ts'
import { detect, subdirOf } from './detect.ts'
import { readLock, updateLock, usableName, type ReadLock, type Scope } from './lock.ts'
import {
  definitionOf,
  entryRef,
  entrySpec,
  findMarketplace,
  readMarketplace,
} from './marketplace.ts'
import { baseOf } from './registry.ts'
import { GIT_LIMITS, type GitLimits } from './git.ts'
import { fetchSource, parseSource, type Fetched } from './sources.ts'
import { diffTrees, hashTree, listTree, TreeTooLarge, type TreeDiff } from './tree.ts'

export { NAME } from './lock.ts'

export interface Options {
  scope: Scope
  /** every scope whose marketplaces count (project, then user) */
  scopes: Scope[]
  cwd: string
  name?: string
  force?: boolean
  /** only these kinds (`yoke skills add`: skill, skills) */
  kinds?: InstallKind[]
  progress?: (line: string) => void
  /** the MCP Registry `mcp:NAME` asks (registry.ts registryBase) */
  registry?: string
  /** bounds of a git fetch (git.ts GIT_LIMITS by default) */
  limits?: Partial<GitLimits>
  /** a git source is fetched at this commit, a registry entry at this version (the lock's: `update` of a missing tree) */
  pin?: string
}

/** Where an install's content sits in its tree: what the kind's service reads. */
export function contentDir(installDir: string, entry: Pick<LockEntry, 'kind' | 'name'>): string {
  return entry.kind === 'skill' || entry.kind === 'exec-package'
    ? join(installDir, entry.name)
    : installDir
}

interface Staged {
  entry: LockEntry
  staging: string
  warnings: string[]
  refKind?: Fetched['refKind']
}

/** Fetches `given` and lays it out in a staging folder next to its final place. */
async function stage(given: string, options: Options): Promise<Staged> {
  const progress = options.progress ?? (() => {})
  const work = mkdtempSync(join(tmpdir(), 'yoke-add-'))
  const warnings: string[] = []
  let staging: string | undefined
  try {
    const ref = existsSync(join(options.cwd, given)) ? undefined : entryRef(given)
    let spec = ref ? undefined : parseSource(given, options.cwd, options.registry)
    let marketEntry: Awaited<ReturnType<typeof readMarketplace>>['plugins'][number] | undefined
    if (ref) {
      const record = findMarketplace(
        ref.marketplace,
        options.scopes.map((s) => readLock(s.lock)),
      )
      if (!record)
        throw new YokeError('INSTALL_FAILED', {
          reason: `no marketplace named ${ref.marketplace} is added: \`yoke marketplace add PATH|URL\` first (\`yoke marketplace list\` shows those added)`,
        })
      const market = await readMarketplace(record.source)
      marketEntry = market.plugins.find((p) => p.name === ref.entry)
      if (!marketEntry)
        throw new YokeError('INSTALL_FAILED', {
          reason: `marketplace ${market.name} (${market.file}) has no entry ${ref.entry}; it offers ${market.plugins.map((p) => p.name).join(', ') || 'nothing'}`,
        })
      spec = entrySpec(market, marketEntry)
    }
    if (!spec)
      throw new YokeError('INSTALL_FAILED', {
        reason: `${given} is not a folder, a git repository, a tarball (.tgz), a server.json or an http(s) URL, nor NAME@MARKETPLACE or mcp:NAME`,
      })
    if (options.pin && spec.type === 'git') spec = { ...spec, sha: options.pin }
    if (options.pin && spec.type === 'registry') spec = { ...spec, version: options.pin }
    const fetched = await fetchSource(spec, work, progress, { ...GIT_LIMITS, ...options.limits })
    warnings.push(...(fetched.warnings ?? []))
    const detected = detect(
      fetched.root,
      given,
      marketEntry ? { kind: 'claude-plugin' } : undefined,
    )
    if (options.kinds && !options.kinds.includes(detected.kind))
      throw new YokeError('INSTALL_FAILED', {
        reason: `${given} is a ${detected.kind}, not ${options.kinds.join(' or ')}: install it with \`yoke add\``,
      })
    const name = options.name ?? marketEntry?.name ?? detected.name ?? fetched.name
    if (!usableName(name))
      throw new YokeError('INSTALL_FAILED', {
        reason: `"${name}" is not a usable install name (letters, digits, . _ -, at most 64): give one with --name`,
      })
    mkdirSync(options.scope.installed, { recursive: true })
    staging = mkdtempSync(join(options.scope.installed, `.staging-${name}-`))
    const entryLike = { kind: detected.kind, name }
    const target = contentDir(staging, entryLike)
    copyTree(detected.content, target, given)
    const served = fetched.source.type === 'server-json' || fetched.source.type === 'registry'
    if (served && detected.name !== name) {
      // a server.json installed under --name: its plugin (and so its server's name) takes it
      const file = join(target, '.claude-plugin', 'plugin.json')
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
      writeFileSync(file, JSON.stringify({ ...manifest, name }, null, 2) + '\n')
    }
    if (marketEntry?.strict === false) {
      // the marketplace entry is the whole definition (Claude Code's strict: false)
      mkdirSync(join(target, '.claude-plugin'), { recursive: true })
      writeFileSync(
        join(target, '.claude-plugin', 'plugin.json'),
        JSON.stringify(definitionOf(marketEntry), null, 2) + '\n',
      )
    }
    let binary: InstallSource['binary']
    if (detected.kind === 'exec-package' && binariesOf(target)) {
      binary = await installBinary(target, name, work, progress)
      if (!binary.sha256)
        warnings.push(
          `${name}: binaries.${binary.platform} pins no sha256: the download was not checked`,
        )
    }
    const version =
      (typeof marketEntry?.version === 'string' ? marketEntry.version : undefined) ??
      detected.version
    const subdir = [fetched.source.subdir, subdirOf(fetched.root, detected.content)]
      .filter(Boolean)
      .join('/')
    const entry: LockEntry = {
      name,
      kind: detected.kind,
      ...(version && { version }),
      source: {
        given: ref ? given : absolute(given, options.cwd),
        ...fetched.source,
        ...(subdir && { subdir }),
        ...(ref && { marketplace: ref.marketplace, entry: ref.entry }),
        ...(binary && { binary }),
      },
      sha256: hashTree(await listTree(staging)),
      installedAt: new Date().toISOString(),
    }
    return { entry, staging, warnings, ...(fetched.refKind && { refKind: fetched.refKind }) }
  } catch (err) {
    if (staging) rmSync(staging, { recursive: true, force: true })
    throw err
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** A local path as given is recorded absolute (with its `#ref`), so `yoke update` finds it from anywhere. */
function absolute(given: string, cwd: string): string {
  if (/^[a-z+]+:\/\//i.test(given) || /^(npm|mcp):/.test(given)) return given
  if (existsSync(resolve(cwd, given))) return resolve(cwd, given)
  const hash = given.lastIndexOf('#')
  return hash > 0 && existsSync(resolve(cwd, given.slice(0, hash)))
    ? resolve(cwd, given.slice(0, hash)) + given.slice(hash)
    : given
}

/** Moves the staged tree to its place (the old one, if any, goes), and records the entry. */
function swapIn(lock: ReadLock, scope: Scope, staged: Staged): void {
  const final = join(scope.installed, staged.entry.name)
  const old = `${staged.staging}.old`
  if (existsSync(final)) renameSync(final, old)
  renameSync(staged.staging, final)
  rmSync(old, { recursive: true, force: true })
  lock.installs[staged.entry.name] = staged.entry
  delete lock.kept.installs[staged.entry.name] // a bad entry of that name is replaced
}

export interface Added {
  entry: LockEntry
  dir: string
  /** the entry this one replaced (--force) */
  replaced?: LockEntry
  warnings: string[]
}

export async function add(given: string, options: Options): Promise<Added> {
  const staged = await stage(given, options)
  const { name } = staged.entry
  try {
    return await updateLock(options.scope.lock, (lock) => {
      const before = lock.installs[name]
      const dir = join(options.scope.installed, name)
      if ((before || existsSync(dir) || name in lock.kept.installs) && !options.force)
        throw new YokeError('INSTALL_FAILED', {
          reason: before
            ? `${name} is installed already (from ${before.source.given}, ${options.scope.lock}): \`yoke update ${name}\` fetches it again, \`--force\` replaces it with ${given}, \`--name\` installs it beside`
            : name in lock.kept.installs
              ? `${options.scope.lock} has an entry ${name} it cannot read: pass --force to replace it, or fix it`
              : `${dir} exists but ${options.scope.lock} has no entry for it: remove the folder, or pass --force`,
        })
      swapIn(lock, options.scope, staged)
      return {
        entry: staged.entry,
        dir,
        ...(before && { replaced: before }),
        warnings: staged.warnings,
      }
    })
  } finally {
    rmSync(staged.staging, { recursive: true, force: true })
  }
}

export interface Updated {
  name: string
  status: 'up to date' | 'updated' | 'restored'
  from: { version?: string; sha256: string }
  to: { version?: string; sha256: string }
  diff: TreeDiff
  warnings: string[]
}

/** Fetches each install again from its recorded source; every name when none is given. */
export async function update(names: string[], options: Options): Promise<Updated[]> {
  const lock = readLock(options.scope.lock)
  const wanted = names.length ? names : Object.keys(lock.installs).sort()
  const missing = wanted.filter((n) => !lock.installs[n])
  if (missing.length)
    throw new YokeError('INSTALL_FAILED', {
      reason: `${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not in ${options.scope.lock}${Object.keys(lock.installs).length ? ` (it has ${Object.keys(lock.installs).sort().join(', ')})` : ''}`,
    })
  const results: Updated[] = []
  for (const name of wanted) {
    const recorded = lock.installs[name]!
    // an install whose tree is missing (a fresh clone) or changed is restored at the commit or
    // registry version the lock records, and must give the lock's sha256: the ref may have
    // moved since the add, the registry may have published another version
    const pin =
      recorded.source.type === 'git'
        ? recorded.source.commit
        : recorded.source.type === 'registry'
          ? recorded.version
          : undefined
    const restore = !!pin && !(await intact(recorded, options.scope))
    const staged = await stage(recorded.source.given, {
      ...options,
      name,
      force: true,
      ...(restore && { pin }),
      // an MCP Registry entry is asked of the registry it came from
      ...(recorded.source.type === 'registry' && { registry: baseOf(recorded.source.location) }),
    })
    try {
      tagStayed(recorded, staged)
      if (restore && staged.entry.sha256 !== recorded.sha256)
        throw new YokeError('INSTALL_REFUSED', {
          reason: `${name}: the ${recorded.source.type === 'git' ? `commit ${pin!.slice(0, 12)}` : `version ${pin}`} that ${options.scope.lock} records for ${recorded.source.location} gives another tree (sha256 ${staged.entry.sha256.slice(0, 12)}…) than the lock's (${recorded.sha256.slice(0, 12)}…): the lock was edited, or the source changed what it serves; nothing was installed: \`yoke add ${recorded.source.given} --force\` installs it anew`,
        })
      const result = await updateLock(options.scope.lock, async (current) => {
        const dir = join(options.scope.installed, name)
        const before = existsSync(dir) ? await listTree(dir).catch(() => []) : []
        const intact = existsSync(dir) && before.length > 0 && hashTree(before) === recorded.sha256
        const after = await listTree(staged.staging)
        const base = {
          name,
          from: { ...(recorded.version && { version: recorded.version }), sha256: recorded.sha256 },
          to: {
            ...(staged.entry.version && { version: staged.entry.version }),
            sha256: staged.entry.sha256,
          },
          diff: diffTrees(before, after),
          warnings: staged.warnings,
        }
        if (staged.entry.sha256 === recorded.sha256 && intact) {
          current.installs[name] = recorded // the file is rewritten as it was
          return { ...base, status: 'up to date' as const }
        }
        swapIn(current, options.scope, staged)
        return {
          ...base,
          status:
            staged.entry.sha256 === recorded.sha256 ? ('restored' as const) : ('updated' as const),
        }
      })
      results.push(result)
    } finally {
      rmSync(staged.staging, { recursive: true, force: true })
    }
  }
  return results
}

/** Whether an install's tree is there and matches its lock entry. */
async function intact(entry: LockEntry, scope: Scope): Promise<boolean> {
  const dir = join(scope.installed, entry.name)
  if (!existsSync(dir)) return false
  const entries = await listTree(dir).catch(() => [])
  return entries.length > 0 && hashTree(entries) === entry.sha256
}

/**
 * A git install at a tag whose tag now names another commit: a published tag that moves (a
 * re-tagged release, a rewritten history) is refused, not followed.
 */
function tagStayed(recorded: LockEntry, staged: Staged): void {
  const was = recorded.source.commit
  const now = staged.entry.source.commit
  if (staged.refKind !== 'tag' || !was || !now || was === now) return
  throw new YokeError('INSTALL_REFUSED', {
    reason: `${recorded.name}: the tag ${recorded.source.ref} of ${recorded.source.location} moved: it named ${was.slice(0, 12)} when it was installed, it names ${now.slice(0, 12)} now; a published tag that moves is a warning sign: ask its publisher, then \`yoke add ${recorded.source.given} --force\` takes the new commit`,
  })
}

export async function remove(name: string, scope: Scope): Promise<LockEntry> {
  return updateLock(scope.lock, (lock) => {
    const entry = lock.installs[name] ?? (name in lock.kept.installs ? keptEntry(name) : undefined)
    if (!entry)
      throw new YokeError('INSTALL_FAILED', {
        reason: `${name} is not in ${scope.lock}${Object.keys(lock.installs).length ? ` (it has ${Object.keys(lock.installs).sort().join(', ')})` : ''}${scope.name === 'project' ? '; an install made with --user is removed with --user' : ''}`,
      })
    const dir = join(scope.installed, name)
    if (usableName(name) && existsSync(dir)) {
      // renamed first, so a watcher never sees a half-removed tree as an install
      const gone = join(scope.installed, `.removing-${name}-${process.pid}`)
      renameSync(dir, gone)
      rmSync(gone, { recursive: true, force: true })
    }
    delete lock.installs[name]
    delete lock.kept.installs[name]
    return entry
  })
}

/** What `remove` reports for an entry it could not read (its files are not touched unless the name is usable). */
const keptEntry = (name: string): LockEntry => ({
  name,
  kind: 'skill',
  source: { given: '(an entry yoke.lock could not read)', type: 'folder', location: '' },
  sha256: '',
  installedAt: '',
})

/** Verifies one recorded install against its tree: never throws, a failure is this install's. */
export async function verify(
  entry: LockEntry,
  scope: Scope,
): Promise<{ dir: string; ok: true } | { dir: string; ok: false; why: string; missing: boolean }> {
  const dir = join(scope.installed, entry.name)
  const user = scope.name === 'user' ? ' --user' : ''
  if (!existsSync(dir))
    return {
      dir,
      ok: false,
      missing: true,
      why: `it is not installed (${dir} is missing): \`yoke update ${entry.name}${user}\` fetches it`,
    }
  const fix = `\`yoke update ${entry.name}${user}\` fetches it again, \`yoke add ${entry.source.given} --force\` installs it anew`
  let found: string
  try {
    found = hashTree(await listTree(dir))
  } catch (err) {
    const why =
      err instanceof TreeTooLarge
        ? err.message
        : `it cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`
    return {
      dir,
      ok: false,
      missing: false,
      why: `install ${entry.name} (${scope.lock}) is refused: ${dir} is not what was installed: ${why}: ${fix}`,
    }
  }
  if (found === entry.sha256) return { dir, ok: true }
  return {
    dir,
    ok: false,
    missing: false,
    why: `install ${entry.name} (${scope.lock}) is refused: the files in ${dir} do not match its sha256 (the lock has ${entry.sha256.slice(0, 12)}…, the tree hashes to ${found.slice(0, 12)}…): ${fix}`,
  }
}
