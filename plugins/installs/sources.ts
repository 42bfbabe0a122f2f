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
import { basename, join, resolve, sep } from 'node:path'
import { YokeError } from 'yoke/cli'
import type { InstallSource } from './api.ts'
import { probe } from './detect.ts'
import { download } from './download.ts'
import { unpack } from './tarball.ts'

export type SourceSpec =
  | { type: 'folder'; path: string }
  | { type: 'git'; url: string; ref?: string; sha?: string; subdir?: string }
  | { type: 'tarball'; url: string; sha256?: string }
  | { type: 'npm'; package: string; version?: string; registry?: string }

export interface Fetched {
  /** the fetched tree (inside the work folder, or the source folder itself) */
  root: string
  source: Omit<InstallSource, 'given'>
  /** a name the source suggests (a folder's, a repository's, a tarball's) */
  name: string
}

const TARBALL = /\.(tgz|tar\.gz|tar)$/i
const GIT_URL = /^(git\+)?(file|git|ssh):\/\/|^[\w.-]+@[\w.-]+:|\.git(#.*)?$/i

/** The SOURCE argument as a spec, or undefined when it names nothing yoke can fetch. */
export function parseSource(given: string, cwd: string): SourceSpec | undefined {
  if (given.startsWith('npm:')) {
    const spec = given.slice(4)
    const at = spec.lastIndexOf('@')
    return at > 0
      ? { type: 'npm', package: spec.slice(0, at), version: spec.slice(at + 1) }
      : { type: 'npm', package: spec }
  }
  if (/^https?:\/\//i.test(given)) {
    const [url, ref] = splitRef(given)
    return GIT_URL.test(url)
      ? { type: 'git', url, ...(ref && { ref }) }
      : { type: 'tarball', url: given }
  }
  if (GIT_URL.test(given) && !existsSync(resolve(cwd, given))) {
    const [url, ref] = splitRef(given)
    return { type: 'git', url: url.replace(/^git\+/, ''), ...(ref && { ref }) }
  }
  const [path, ref] = existsSync(resolve(cwd, given)) ? [given, undefined] : splitRef(given)
  const abs = resolve(cwd, path)
  const stat = probe(abs) // `LICENSE/x` (ENOTDIR) or a link loop is not there either
  if (!stat) return undefined
  if (stat.isFile()) return TARBALL.test(abs) ? { type: 'tarball', url: abs } : undefined
  if (ref || isGitRepository(abs)) return { type: 'git', url: abs, ...(ref && { ref }) }
  return { type: 'folder', path: abs }
}

function splitRef(given: string): [string, string | undefined] {
  const hash = given.lastIndexOf('#')
  return hash > 0 ? [given.slice(0, hash), given.slice(hash + 1) || undefined] : [given, undefined]
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
      return fetchGit(spec, work, progress)
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
  }
}

async function fetchGit(
  spec: Extract<SourceSpec, { type: 'git' }>,
  work: string,
  progress: (line: string) => void,
): Promise<Fetched> {
  const into = join(work, 'clone')
  const env = { GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'echo' }
  const { execa } = await import('execa') // at the first install, not whenever installs loads
  const git = (args: string[], cwd?: string) =>
    execa('git', args, { cwd, env, reject: false, timeout: 300_000, stdin: 'ignore' })
  progress(`cloning ${spec.url}${spec.ref ? `#${spec.ref}` : ''}`)
  const cloned = await git(['clone', '--quiet', spec.url, into])
  if (cloned.exitCode !== 0) {
    const offline = /could not resolve host|unable to access|network/i.test(String(cloned.stderr))
    throw new YokeError('INSTALL_FAILED', {
      reason: `git clone ${spec.url} failed: ${String(cloned.stderr || cloned.message)
        .trim()
        .split('\n')
        .at(-1)}${offline ? ' (this needs the network)' : ''}`,
    })
  }
  for (const want of [spec.ref, spec.sha].filter(Boolean) as string[]) {
    const checkout = await git(['checkout', '--quiet', want], into)
    if (checkout.exitCode !== 0)
      throw new YokeError('INSTALL_FAILED', {
        reason: `${spec.url} has no ref or commit ${want}: ${String(checkout.stderr).trim()}`,
      })
  }
  const commit = String((await git(['rev-parse', 'HEAD'], into)).stdout).trim()
  if (spec.sha && !commit.startsWith(spec.sha.toLowerCase()))
    throw new YokeError('INSTALL_REFUSED', {
      reason: `${spec.url} is at ${commit}, not the pinned commit ${spec.sha}`,
    })
  let root = into
  if (spec.subdir) {
    root = resolve(into, spec.subdir)
    if (!root.startsWith(into + sep) || !probe(root)?.isDirectory())
      throw new YokeError('INSTALL_FAILED', {
        reason: `${spec.url} has no folder ${spec.subdir} (at ${commit.slice(0, 12)})`,
      })
  }
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
