/**
 * `yoke outdated`: what moved at each install's source since it was installed, asked without
 * fetching the content: a git ref's commit now (`git ls-remote`), an MCP Registry's latest
 * version, npm's version for the range asked, a marketplace entry's version and pinned sha, a
 * server.json file's content. A commit asked for by its sha, a registry or npm version given
 * exactly, are pinned: they never move. A folder or a tarball has nothing to ask: `yoke update`
 * compares its content.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { LockEntry } from './api.ts'
import { remoteCommit } from './git.ts'
import { readLock, type Scope } from './lock.ts'
import { entrySpec, findMarketplace, readMarketplace } from './marketplace.ts'
import { baseOf, registryEntry } from './registry.ts'
import type { SourceSpec } from './sources.ts'

export interface Outdated {
  name: string
  scope: Scope['name']
  /**
   * outdated: a newer version or commit; moved: a tag names another commit (a warning sign);
   * pinned: asked for exactly; not checked: nothing to ask (a folder, a tarball); failed: the
   * source did not answer
   */
  status: 'up to date' | 'outdated' | 'moved' | 'pinned' | 'not checked' | 'failed'
  /** the version, else the commit, installed */
  current: string
  latest?: string
  why?: string
}

const shortSha = (sha?: string) => sha?.slice(0, 12)
const currentOf = (e: LockEntry) => e.version ?? shortSha(e.source.commit) ?? e.sha256.slice(0, 12)

/** A git source: the ref's commit now against the one installed. */
async function gitRow(
  e: LockEntry,
  url: string,
  ref: string | undefined,
  sha?: string,
): Promise<Omit<Outdated, 'name' | 'scope'>> {
  const installed = e.source.commit ?? ''
  const current = shortSha(installed) ?? ''
  return { current, ...(await gitState(installed, url, ref, sha)) }
}

async function gitState(
  installed: string,
  url: string,
  ref: string | undefined,
  sha?: string,
): Promise<Omit<Outdated, 'name' | 'scope' | 'current'>> {
  if (sha) {
    return installed.startsWith(sha.toLowerCase())
      ? { status: 'pinned', why: `pinned to ${shortSha(sha)}` }
      : { status: 'outdated', latest: shortSha(sha), why: `the source pins ${shortSha(sha)} now` }
  }
  if (ref && /^[0-9a-f]{40}$/i.test(ref))
    return { status: 'pinned', why: `pinned to ${shortSha(ref)}` }
  const now = await remoteCommit(url, ref)
  if (!now) return { status: 'failed', why: `${url} has no ref ${ref ?? 'HEAD'} now` }
  if (now.commit === installed) return { status: 'up to date', latest: shortSha(now.commit) }
  return now.refKind === 'tag'
    ? {
        status: 'moved',
        latest: shortSha(now.commit),
        why: `the tag ${ref} moved from ${shortSha(installed)} to ${shortSha(now.commit)}: yoke update refuses it`,
      }
    : {
        status: 'outdated',
        latest: shortSha(now.commit),
        why: `${ref ?? 'HEAD'} is at ${shortSha(now.commit)}`,
      }
}

async function npmVersion(pkg: string, range: string | undefined, registry?: string) {
  const { execa } = await import('execa')
  const r = await execa(
    'npm',
    [
      'view',
      `${pkg}${range ? `@${range}` : ''}`,
      'version',
      '--json',
      ...(registry ? ['--registry', registry] : []),
    ],
    { reject: false, timeout: 60_000, stdin: 'ignore' },
  )
  if (r.exitCode !== 0)
    throw new Error(`npm view ${pkg} failed: ${String(r.stderr).trim().split('\n').at(-1)}`)
  const v = JSON.parse(String(r.stdout)) as string | string[]
  return Array.isArray(v) ? v.at(-1)! : v
}

/** What a spec says now, against the entry installed from it. */
async function specRow(e: LockEntry, spec: SourceSpec, dir: string) {
  switch (spec.type) {
    case 'git':
      return gitRow(e, spec.url, spec.ref, spec.sha)
    case 'npm': {
      if (spec.version && /^\d+\.\d+\.\d+(-[\w.]+)?$/.test(spec.version))
        return { status: 'pinned' as const, why: `pinned to ${spec.version}` }
      const latest = await npmVersion(spec.package, spec.version, spec.registry)
      const installed = e.source.location.slice(e.source.location.lastIndexOf('@') + 1)
      return latest === installed
        ? { status: 'up to date' as const, latest }
        : { status: 'outdated' as const, latest }
    }
    case 'registry': {
      if (spec.version) return { status: 'pinned' as const, why: `pinned to ${spec.version}` }
      const { server } = await registryEntry(baseOf(e.source.location), spec.name)
      const latest = typeof server.version === 'string' ? server.version : undefined
      return latest === e.version
        ? { status: 'up to date' as const, ...(latest && { latest }) }
        : { status: 'outdated' as const, ...(latest && { latest }) }
    }
    case 'server-json': {
      if (/^https?:\/\//i.test(spec.url)) break
      const same =
        readFileSync(spec.url, 'utf8').trim() ===
        readFileSync(join(dir, 'server.json'), 'utf8').trim()
      return same
        ? { status: 'up to date' as const }
        : { status: 'outdated' as const, why: `${spec.url} changed since it was installed` }
    }
  }
  return {
    status: 'not checked' as const,
    why: `a ${spec.type} has no version to ask for: \`yoke update ${e.name}\` compares its content`,
  }
}

/** Each install of the scope (those named, or all), asked what moved. */
export async function outdated(
  names: string[],
  scope: Scope,
  scopes: Scope[],
): Promise<Outdated[]> {
  const lock = readLock(scope.lock)
  const wanted = names.length ? names : Object.keys(lock.installs).sort()
  const rows: Outdated[] = []
  for (const name of wanted) {
    const e = lock.installs[name]
    const base = { name, scope: scope.name, current: e ? currentOf(e) : '' }
    if (!e) {
      rows.push({ ...base, status: 'failed', why: `${name} is not in ${scope.lock}` })
      continue
    }
    try {
      let spec: SourceSpec | undefined
      let versionNow: string | undefined
      if (e.source.marketplace && e.source.entry) {
        const record = findMarketplace(
          e.source.marketplace,
          scopes.map((s) => readLock(s.lock)),
        )
        if (!record)
          throw new Error(`the marketplace ${e.source.marketplace} is not added any more`)
        const market = await readMarketplace(record.source)
        const entry = market.plugins.find((p) => p.name === e.source.entry)
        if (!entry) throw new Error(`marketplace ${market.name} has no entry ${e.source.entry} now`)
        spec = entrySpec(market, entry)
        versionNow = typeof entry.version === 'string' ? entry.version : undefined
      } else {
        const { parseSource } = await import('./sources.ts')
        spec = parseSource(
          e.source.given,
          process.cwd(),
          e.source.type === 'registry' ? baseOf(e.source.location) : undefined,
        )
      }
      if (!spec) throw new Error(`${e.source.given} is not there any more`)
      const row = await specRow(e, spec, join(scope.installed, name))
      if (versionNow && versionNow !== e.version && row.status !== 'moved')
        rows.push({
          ...base,
          status: 'outdated',
          latest: versionNow,
          why: 'the marketplace offers another version',
        })
      else rows.push({ ...base, ...row })
    } catch (err) {
      rows.push({ ...base, status: 'failed', why: (err as Error).message })
    }
  }
  return rows
}

/** 1 when something is outdated (or a tag moved), 2 when nothing is but a source did not answer, else 0. */
export function exitOf(rows: Outdated[]): number {
  if (rows.some((r) => r.status === 'outdated' || r.status === 'moved')) return 1
  return rows.some((r) => r.status === 'failed') ? 2 : 0
}
