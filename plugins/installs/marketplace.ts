/**
 * Claude Code marketplaces (`.claude-plugin/marketplace.json`): `name`, `owner`, `plugins[]` with
 * a `source` each, optional `metadata.pluginRoot`. A marketplace is recorded in the lock by
 * `yoke marketplace add` (a folder, the file itself, or an http(s) URL to it) and read again each
 * time an entry is installed, so `yoke update` sees what it offers now.
 *
 * Entry sources: `./path` (inside the marketplace's folder; `pluginRoot` is prepended to a path
 * without `./`), `github{repo,ref?,sha?}`, `url{url,ref?,sha?,path?}` (a git URL; a .tgz URL is a
 * tarball), `git-subdir{url,path,ref?,sha?}`, `npm{package,version?,registry?}`,
 * `archive{url,sha256?}`. `command` sources run a publisher's command and are refused. A
 * marketplace read from a URL has no files beside it, so its relative sources are refused too
 * (Claude Code does the same).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, posix, relative, resolve, sep } from 'node:path'
import { YokeError } from 'yoke/cli'
import type { LockFile, MarketplaceRecord } from './api.ts'
import { probe } from './detect.ts'
import { download } from './download.ts'
import { fetchGitTree, type GitSpec } from './git.ts'
import { parseSource, type SourceSpec } from './sources.ts'

export interface Marketplace {
  name: string
  /** a marketplace read from a git repository: where, for its `./path` entries */
  git?: GitSpec
  /** the marketplace.json read */
  file: string
  /** the folder relative sources start from (none for a marketplace read from a URL) */
  root?: string
  plugins: MarketplaceEntry[]
  pluginRoot?: string
}

export interface MarketplaceEntry {
  name: string
  source: unknown
  version?: string
  strict?: boolean
  [field: string]: unknown
}

const MAX_MARKETPLACE_BYTES = 16 * 1024 * 1024

/**
 * A marketplace in a git repository (`yoke marketplace add https://github.com/OWNER/REPO`, a git
 * URL, `URL#REF:PATH`), as opposed to a marketplace.json served over http(s) or a local path.
 */
export function gitMarketplace(source: string): GitSpec | undefined {
  if (/\.json([?#].*)?$/i.test(source)) return undefined
  if (!/^([a-z][a-z0-9+.-]*:\/\/|[\w.-]+@[\w.-]+:)/i.test(source)) return undefined
  const spec = parseSource(source, process.cwd())
  return spec?.type === 'git' ? spec : undefined
}

/** Clones the repository (bounded and checked as any git install) and reads its marketplace. */
async function readGitMarketplace(source: string, git: GitSpec): Promise<Marketplace> {
  const work = mkdtempSync(join(tmpdir(), 'yoke-marketplace-'))
  try {
    const { root, commit } = await fetchGitTree(git, join(work, 'clone'), () => {})
    const found = [
      join(root, '.claude-plugin', 'marketplace.json'),
      join(root, 'marketplace.json'),
    ].find((f) => probe(f)?.isFile())
    if (!found)
      throw new YokeError('INSTALL_FAILED', {
        reason: `${source} (at ${commit.slice(0, 12)}) has no .claude-plugin/marketplace.json (nor marketplace.json)`,
      })
    const stat = probe(found)!
    if (stat.size > MAX_MARKETPLACE_BYTES)
      throw new YokeError('INSTALL_FAILED', {
        reason: `${source}: its marketplace.json is ${stat.size} bytes, more than a marketplace may be (${MAX_MARKETPLACE_BYTES})`,
      })
    const rel = relative(root, found).replace(/\\/g, '/')
    return {
      ...parseMarketplace(
        readFileSync(found, 'utf8'),
        `${source} (${rel} at ${commit.slice(0, 12)})`,
      ),
      git,
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** Reads a marketplace from a folder, a file, a URL, or a git repository. */
export async function readMarketplace(source: string): Promise<Marketplace> {
  const git = gitMarketplace(source)
  if (git) return readGitMarketplace(source, git)
  let file: string
  let root: string | undefined
  let text: string
  if (/^https?:\/\//i.test(source)) {
    const work = mkdtempSync(join(tmpdir(), 'yoke-marketplace-'))
    try {
      await download(source, join(work, 'marketplace.json'), {
        maxBytes: MAX_MARKETPLACE_BYTES,
        timeoutMs: 30_000,
      })
      text = readFileSync(join(work, 'marketplace.json'), 'utf8')
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
    file = source
  } else {
    const stat = probe(source) // `LICENSE/x` or a link loop: not there, said as such
    if (!stat)
      throw new YokeError('INSTALL_FAILED', { reason: `marketplace ${source} does not exist` })
    if (stat.isDirectory()) {
      const found = [
        join(source, '.claude-plugin', 'marketplace.json'),
        join(source, 'marketplace.json'),
      ].find(existsSync)
      if (!found)
        throw new YokeError('INSTALL_FAILED', {
          reason: `${source} has no .claude-plugin/marketplace.json (nor marketplace.json)`,
        })
      file = found
      root = source
    } else {
      file = source
      root = dirname(file).endsWith(`${sep}.claude-plugin`) ? dirname(dirname(file)) : dirname(file)
    }
    // a regular file under the cap a download has: a FIFO would block, /dev/zero never end
    const found = probe(file)
    if (!found?.isFile() || found.size > MAX_MARKETPLACE_BYTES)
      throw new YokeError(
        'INSTALL_FAILED',
        {
          reason: `${file} is ${found?.isFile() ? `${found.size} bytes, more than a marketplace may be (${MAX_MARKETPLACE_BYTES})` : 'not a regular file'}`,
        },
        { file },
      )
    text = readFileSync(file, 'utf8')
  }
  return { ...parseMarketplace(text, file), ...(root && { root }) }
}

/** A marketplace.json's text, checked: its name, entries and pluginRoot. */
function parseMarketplace(text: string, file: string): Marketplace {
  let doc: Record<string, unknown>
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw new YokeError(
      'INSTALL_FAILED',
      { reason: `${file} is not valid JSON: ${(err as Error).message}` },
      { file },
    )
  }
  const name = doc?.name
  if (
    typeof name !== 'string' ||
    !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) ||
    !Array.isArray(doc.plugins)
  )
    throw new YokeError(
      'INSTALL_FAILED',
      { reason: `${file} is not a marketplace: it needs "name" (kebab-case) and a "plugins" list` },
      { file },
    )
  const plugins = (doc.plugins as unknown[]).filter(
    (p): p is MarketplaceEntry => !!p && typeof (p as MarketplaceEntry).name === 'string',
  )
  const pluginRoot = (doc.metadata as { pluginRoot?: unknown } | undefined)?.pluginRoot
  return {
    name,
    file,
    plugins,
    ...(typeof pluginRoot === 'string' && { pluginRoot }),
  }
}

/** `NAME@MARKETPLACE`, when the text has that shape. */
export function entryRef(given: string): { entry: string; marketplace: string } | undefined {
  const match = /^([A-Za-z0-9][A-Za-z0-9._-]*)@([A-Za-z0-9][A-Za-z0-9._-]*)$/.exec(given)
  return match ? { entry: match[1]!, marketplace: match[2]! } : undefined
}

/** The marketplace a lock records under `name` (project lock first). */
export function findMarketplace(name: string, locks: LockFile[]): MarketplaceRecord | undefined {
  for (const lock of locks) if (lock.marketplaces[name]) return lock.marketplaces[name]
  return undefined
}

/** The base of `github` sources: github.com, or a mirror (`YOKE_GITHUB_URL`, used by tests). */
const githubBase = () => (process.env.YOKE_GITHUB_URL ?? 'https://github.com').replace(/\/+$/, '')

/** A `./path` entry of a marketplace read from git: that folder of its repository. */
function repositoryFolder(
  market: Marketplace,
  git: GitSpec,
  source: string,
  fail: (reason: string) => YokeError,
): SourceSpec {
  const entryPath =
    source.startsWith('./') || !market.pluginRoot ? source : posix.join(market.pluginRoot, source)
  const rel = posix.normalize(posix.join(git.subdir ?? '', entryPath))
  const sub = rel.replace(/\/+$/, '') || '.'
  if (sub === '..' || sub.startsWith('../') || sub.startsWith('/'))
    throw fail(`its source ${source} leads outside the marketplace's repository`)
  const { subdir: _top, ...repository } = git
  return { ...repository, type: 'git', ...(sub !== '.' && { subdir: sub }) }
}

/** An entry's source as a spec yoke fetches. */
export function entrySpec(market: Marketplace, entry: MarketplaceEntry): SourceSpec {
  const where = `entry "${entry.name}" of marketplace ${market.name} (${market.file})`
  const source = entry.source
  const fail = (reason: string) =>
    new YokeError('INSTALL_FAILED', { reason: `${where}: ${reason}` })
  if (typeof source === 'string') {
    if (market.git) return repositoryFolder(market, market.git, source, fail)
    if (!market.root)
      throw fail(
        `its source ${source} is a path, and a marketplace read from a URL has no files beside it: add the marketplace from a folder or a git checkout`,
      )
    const rel =
      source.startsWith('./') || !market.pluginRoot ? source : join(market.pluginRoot, source)
    const path = resolve(market.root, rel)
    if (path !== market.root && !path.startsWith(market.root + sep))
      throw fail(`its source ${source} leads outside the marketplace's folder`)
    return { type: 'folder', path }
  }
  if (!source || typeof source !== 'object') throw fail('it has no source')
  const s = source as Record<string, unknown>
  const str = (k: string) => (typeof s[k] === 'string' && s[k] ? (s[k] as string) : undefined)
  const pins = { ...(str('ref') && { ref: str('ref')! }), ...(str('sha') && { sha: str('sha')! }) }
  switch (s.source) {
    case 'github': {
      const repo = str('repo')
      if (!repo || !/^[\w.-]+\/[\w.-]+$/.test(repo))
        throw fail('a github source needs repo: "owner/name"')
      return { type: 'git', url: `${githubBase()}/${repo}.git`, ...pins }
    }
    case 'url': {
      const url = str('url')
      if (!url) throw fail('a url source needs url')
      // the official marketplace has url entries with a `path` too (as git-subdir's)
      return /\.(tgz|tar\.gz)(\?.*)?$/i.test(url)
        ? { type: 'tarball', url, ...(str('sha256') && { sha256: str('sha256')! }) }
        : { type: 'git', url, ...pins, ...(str('path') && { subdir: str('path')! }) }
    }
    case 'git-subdir': {
      const url = str('url')
      const path = str('path')
      if (!url || !path) throw fail('a git-subdir source needs url and path')
      return { type: 'git', url, subdir: path, ...pins }
    }
    case 'archive': {
      const url = str('url')
      if (!url) throw fail('an archive source needs url')
      return { type: 'tarball', url, ...(str('sha256') && { sha256: str('sha256')! }) }
    }
    case 'npm': {
      const pkg = str('package')
      if (!pkg) throw fail('an npm source needs package')
      return {
        type: 'npm',
        package: pkg,
        ...(str('version') && { version: str('version')! }),
        ...(str('registry') && { registry: str('registry')! }),
      }
    }
    case 'command':
      throw fail(
        "a command source runs the publisher's command to fetch it; yoke does not run it: install from the folder it produces",
      )
    default:
      throw fail(
        `its source type ${JSON.stringify(s.source)} is not one yoke knows (./path, github, url, git-subdir, npm, archive)`,
      )
  }
}

/** The plugin.json a `strict: false` entry stands for: the entry's own fields, less the marketplace's. */
export function definitionOf(entry: MarketplaceEntry): Record<string, unknown> {
  const { source: _source, strict: _strict, category: _c, tags: _t, relevance: _r, ...rest } = entry
  return rest
}
