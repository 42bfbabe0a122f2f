/**
 * What a SOURCE names, and fetching it into a work folder:
 * - a folder (copied as it is);
 * - a git repository: a folder with `.git` (or a bare one), a `file://`, `git://`, `ssh://` or
 *   `.git` URL, optionally with `#ref` (a branch, tag or commit); cloned through git;
 * - a tarball: an http(s) URL or a local `.tgz`/`.tar.gz`/`.tar` file;
 * - an npm package (`npm:NAME[@VERSION]`), through `npm pack`.
 * `NAME@MARKETPLACE` is resolved by marketplace.ts into one of these.
 */
import { existsSync, mkdtempSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { readConfigText } from 'yoke'
import { YokeError } from 'yoke/cli'
import type { InstallSource } from './api.ts'
import { probe } from './detect.ts'
import { download } from './download.ts'
import { fetchGitTree, type GitLimits } from './git.ts'
import { registryBase, registryEntry } from './registry.ts'
import { planServer, serverInstallName, writeServer } from './server-json.ts'
import { unpack } from './tarball.ts'

export type SourceSpec =
  | { type: 'folder'; path: string }
  | { type: 'git'; url: string; ref?: string; sha?: string; subdir?: string }
  | { type: 'tarball'; url: string; sha256?: string }
  | { type: 'npm'; package: string; version?: string; registry?: string }
  /** an MCP Registry server.json: a file, or an http(s) URL to one */
  | { type: 'server-json'; url: string }
  /** an entry of an MCP Registry, by name (`mcp:NAME[@VERSION]`) */
  | { type: 'registry'; base: string; name: string; version?: string }

export interface Fetched {
  /** the fetched tree (inside the work folder, or the source folder itself) */
  root: string
  source: Omit<InstallSource, 'given'>
  /** a name the source suggests (a folder's, a repository's, a tarball's) */
  name: string
  /** git: what the ref named (a tag that moves is refused by `yoke update`) */
  refKind?: 'tag' | 'branch' | 'commit'
  /** what the add says besides (a server.json's package that cannot run here) */
  warnings?: string[]
}

const SERVER_JSON = /(^|[/\\.])server\.json$/i
const TARBALL = /\.(tgz|tar\.gz|tar)$/i
const GIT_URL = /^(git\+)?(file|git|ssh):\/\/|^[\w.-]+@[\w.-]+:|\.git(#.*)?$/i

/** The SOURCE argument as a spec, or undefined when it names nothing yoke can fetch. */
export function parseSource(given: string, cwd: string, registry?: string): SourceSpec | undefined {
  if (given.startsWith('mcp:')) {
    const spec = given.slice(4)
    const at = spec.lastIndexOf('@')
    return {
      type: 'registry',
      base: registryBase(registry),
      ...(at > 0 ? { name: spec.slice(0, at), version: spec.slice(at + 1) } : { name: spec }),
    }
  }
  if (
    SERVER_JSON.test(given.split(/[?#]/)[0]!) &&
    (/^https?:\/\//i.test(given) || probe(resolve(cwd, given))?.isFile())
  )
    return { type: 'server-json', url: /^https?:\/\//i.test(given) ? given : resolve(cwd, given) }
  if (given.startsWith('npm:')) {
    const spec = given.slice(4)
    const at = spec.lastIndexOf('@')
    return at > 0
      ? { type: 'npm', package: spec.slice(0, at), version: spec.slice(at + 1) }
      : { type: 'npm', package: spec }
  }
  if (/^https?:\/\//i.test(given)) {
    const [url, pins] = splitRef(given)
    const forge = forgeTree(url)
    if (forge) return { type: 'git', ...forge, ...pins }
    return GIT_URL.test(url) ? { type: 'git', url, ...pins } : { type: 'tarball', url: given }
  }
  if (GIT_URL.test(given) && !existsSync(resolve(cwd, given))) {
    const [url, pins] = splitRef(given)
    return { type: 'git', url: url.replace(/^git\+/, ''), ...pins }
  }
  const [path, pins] = existsSync(resolve(cwd, given)) ? [given, {}] : splitRef(given)
  const abs = resolve(cwd, path)
  const stat = probe(abs) // `LICENSE/x` (ENOTDIR) or a link loop is not there either
  if (!stat) return undefined
  if (stat.isFile()) return TARBALL.test(abs) ? { type: 'tarball', url: abs } : undefined
  if (pins.ref || pins.subdir || isGitRepository(abs)) return { type: 'git', url: abs, ...pins }
  return { type: 'folder', path: abs }
}

/**
 * `SOURCE#REF`, `SOURCE#REF:PATH` or `SOURCE#:PATH` (a git ref never holds `:`, so the first one
 * ends it): the ref and the sub-path to install.
 */
function splitRef(given: string): [string, { ref?: string; subdir?: string }] {
  const hash = given.lastIndexOf('#')
  if (hash <= 0) return [given, {}]
  const fragment = given.slice(hash + 1)
  const colon = fragment.indexOf(':')
  const ref = colon < 0 ? fragment : fragment.slice(0, colon)
  const subdir = colon < 0 ? '' : fragment.slice(colon + 1).replace(/^\/+|\/+$/g, '')
  return [given.slice(0, hash), { ...(ref && { ref }), ...(subdir && { subdir }) }]
}

/**
 * A repository's page on GitHub or GitLab as a git source: `https://github.com/OWNER/REPO`, and
 * `…/tree/REF/PATH` (GitLab: `…/-/tree/REF/PATH`) with the ref (one path segment) and sub-path.
 */
function forgeTree(url: string): { url: string; ref?: string; subdir?: string } | undefined {
  const match =
    /^(https:\/\/(?:github\.com|gitlab\.com)\/[\w.-]+\/[\w.-]+?)(?:\.git)?(?:\/(?:-\/)?tree\/([^/]+)(?:\/(.+?))?)?\/?$/i.exec(
      url,
    )
  if (!match) return undefined
  return {
    url: `${match[1]}.git`,
    ...(match[2] && { ref: decodeURIComponent(match[2]) }),
    ...(match[3] && { subdir: decodeURIComponent(match[3]) }),
  }
}

/** A working tree's top (`.git` inside), or a bare repository (HEAD, objects/, refs/). */
function isGitRepository(dir: string): boolean {
  return (
    existsSync(join(dir, '.git')) ||
    (existsSync(join(dir, 'HEAD')) &&
      existsSync(join(dir, 'objects')) &&
      existsSync(join(dir, 'refs')))
  )
}

/** Fetches the spec into `work` (an empty folder of the caller's, removed by it). */
export async function fetchSource(
  spec: SourceSpec,
  work: string,
  progress: (line: string) => void,
  limits?: GitLimits,
): Promise<Fetched> {
  switch (spec.type) {
    case 'folder':
      if (!probe(spec.path)?.isDirectory())
        throw new YokeError('INSTALL_FAILED', { reason: `${spec.path} is not a folder` })
      return {
        root: spec.path,
        source: { type: 'folder', location: spec.path },
        name: basename(spec.path),
      }
    case 'git':
      return fetchGit(spec, work, progress, limits)
    case 'tarball': {
      let file = spec.url
      if (/^https?:\/\//i.test(spec.url)) {
        progress(`downloading ${spec.url}`)
        file = join(work, 'download.tgz')
        await download(spec.url, file, spec.sha256 ? { sha256: spec.sha256 } : {})
      } else if (spec.sha256) {
        const { sha256File } = await import('./tree.ts')
        const digest = await sha256File(file) // streamed: never the whole file in memory
        if (digest !== spec.sha256.toLowerCase())
          throw new YokeError('INSTALL_REFUSED', {
            reason: `${file} does not match its pinned sha256: expected ${spec.sha256}, got ${digest}`,
          })
      }
      const into = mkdtempSync(join(work, 'unpacked-'))
      const root = await unpack(file, into, spec.url)
      const name = basename(spec.url.split(/[?#]/)[0]!)
        .replace(TARBALL, '')
        .replace(/-v?\d+(\.\d+)*.*$/, '')
      return { root, source: { type: 'tarball', location: spec.url }, name: name || basename(root) }
    }
    case 'npm':
      return fetchNpm(spec, work, progress)
    case 'server-json':
    case 'registry':
      return fetchServer(spec, work, progress)
  }
}

async function fetchGit(
  spec: Extract<SourceSpec, { type: 'git' }>,
  work: string,
  progress: (line: string) => void,
  limits?: GitLimits,
): Promise<Fetched> {
  const into = join(work, 'clone')
  const { root, commit, refKind } = await fetchGitTree(spec, into, progress, limits)
  const name = basename((spec.subdir ?? spec.url).replace(/[/\\]+$/, '')).replace(/\.git$/, '')
  return {
    root,
    source: {
      type: 'git',
      location: spec.url,
      ...(spec.ref && { ref: spec.ref }),
      commit,
      ...(spec.subdir && { subdir: spec.subdir }),
    },
    name,
    ...(refKind && { refKind }),
  }
}

async function fetchNpm(
  spec: Extract<SourceSpec, { type: 'npm' }>,
  work: string,
  progress: (line: string) => void,
): Promise<Fetched> {
  const wanted = spec.version ? `${spec.package}@${spec.version}` : spec.package
  progress(`npm pack ${wanted}`)
  const { execa } = await import('execa')
  const packed = await execa(
    'npm',
    [
      'pack',
      wanted,
      '--json',
      '--pack-destination',
      work,
      ...(spec.registry ? ['--registry', spec.registry] : []),
    ],
    { cwd: work, reject: false, timeout: 300_000, stdin: 'ignore' },
  )
  if (packed.exitCode !== 0)
    throw new YokeError('INSTALL_FAILED', {
      reason: `npm pack ${wanted} failed: ${String(packed.stderr).trim().split('\n').slice(-2).join(' ')}`,
    })
  const info = JSON.parse(String(packed.stdout))[0] as {
    filename: string
    version: string
    name: string
  }
  const into = mkdtempSync(join(work, 'unpacked-'))
  const root = await unpack(join(work, info.filename), into, wanted)
  return {
    root,
    source: { type: 'npm', location: `${info.name}@${info.version}` },
    name: info.name.replace(/^@[^/]+\//, ''),
  }
}

/** A server.json (a file, a URL, a registry's entry) laid out as the plugin folder that runs it. */
async function fetchServer(
  spec: Extract<SourceSpec, { type: 'server-json' | 'registry' }>,
  work: string,
  progress: (line: string) => void,
): Promise<Fetched> {
  let text: string
  let location: string
  if (spec.type === 'registry') {
    progress(`asking ${spec.base} for ${spec.name}${spec.version ? `@${spec.version}` : ''}`)
    const found = await registryEntry(spec.base, spec.name, spec.version)
    text = found.text
    location = found.url
  } else if (/^https?:\/\//i.test(spec.url)) {
    progress(`downloading ${spec.url}`)
    await download(spec.url, join(work, 'server.json'), {
      maxBytes: 1024 * 1024,
      timeoutMs: 30_000,
    })
    text = readConfigText(join(work, 'server.json'))
    location = spec.url
  } else {
    text = readConfigText(spec.url) // a regular file of at most 1 MiB
    location = spec.url
  }
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw new YokeError('INSTALL_FAILED', {
      reason: `${location} is not valid JSON: ${(err as Error).message}`,
    })
  }
  const plan = planServer(doc, location)
  progress(`${plan.name} runs as ${plan.chosen}`)
  const root = join(work, 'server')
  const name = serverInstallName(plan.name)
  writeServer(root, plan, text, name)
  return {
    root,
    source: { type: spec.type, location },
    name,
    warnings: plan.warnings.map((w) => `${plan.name}: ${w}`),
  }
}
