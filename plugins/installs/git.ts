/**
 * Fetching a git repository for an install, bounded and checked before anything is written
 * out of it:
 * - only file, git, ssh, http and https transports (`ext::` and other command transports are
 *   refused by git itself, `GIT_ALLOW_PROTOCOL`); the URL never reads as an option (`--`);
 * - the clone has no checkout; it is stopped past `limits.bytes` received (read from git's own
 *   progress lines) or `limits.ms`, the figure in the error;
 * - the ref resolves to a commit, a pinned `sha` is checked against it;
 * - the tree to install (the sub-path, or the whole) is listed from the commit first: a
 *   submodule in it (another repository, not fetched, not pinned) refuses the install, naming it
 *   and where it points; more bytes or entries than an install may hold refuse it, naming the
 *   largest file; a sub-path that is a link, or that leads out, refuses it;
 * - only then is it checked out (sparse: the sub-path alone), and copy.ts copies it as a folder
 *   (a link that leads out of the tree refuses the install there).
 */
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs'
import { join, posix, sep } from 'node:path'
import { YokeError } from 'yoke/cli'
import { MAX_COPY_BYTES } from './copy.ts'
import { probe } from './detect.ts'

export interface GitLimits {
  /** what the clone may receive */
  bytes: number
  /** how long the clone (and each git step) may take */
  ms: number
  /** the bytes of the tree installed (what a checkout writes) */
  treeBytes: number
  /** the files and folders of the tree installed */
  entries: number
}

export const GIT_LIMITS: GitLimits = {
  bytes: 200 * 1024 * 1024,
  ms: 300_000,
  treeBytes: MAX_COPY_BYTES,
  entries: 20_000,
}

export interface GitSpec {
  url: string
  ref?: string
  sha?: string
  subdir?: string
}

export interface Cloned {
  /** the checked-out tree to install (the sub-path, when one is given) */
  root: string
  commit: string
  /** what the ref named: a tag that moves later is a warning sign (install.ts `update`) */
  refKind?: 'tag' | 'branch' | 'commit'
}

/** git's environment: no prompts, no LFS downloads, the transports an install may use. */
export const gitEnv = () => ({
  GIT_TERMINAL_PROMPT: '0',
  GIT_ASKPASS: 'echo',
  SSH_ASKPASS: 'echo',
  GIT_ALLOW_PROTOCOL: 'file:git:ssh:http:https',
  GIT_LFS_SKIP_SMUDGE: '1',
  GIT_CONFIG_PARAMETERS: "'core.hooksPath'='/dev/null' 'submodule.recurse'='false'",
})

const SHA = /^[0-9a-f]{7,40}$/i

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

/** The bytes git says it received so far, from a progress line (`Receiving objects: … 12.3 MiB`). */
export function receivedBytes(line: string): number | undefined {
  const match = /Receiving objects:.*?([\d.]+) (bytes|KiB|MiB|GiB)/.exec(line)
  if (!match) return undefined
  const unit = { bytes: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 }[match[2] as 'KiB']
  return Number(match[1]) * unit
}

type Git = (
  args: string[],
  cwd?: string,
) => Promise<{ exitCode?: number; stdout: string; stderr: string }>

async function runner(limits: GitLimits): Promise<Git> {
  const { execa } = await import('execa') // at the first install, not whenever installs loads
  return async (args, cwd) => {
    const r = await execa('git', args, {
      cwd,
      env: gitEnv(),
      reject: false,
      timeout: limits.ms,
      stdin: 'ignore',
      maxBuffer: 64 * 1024 * 1024,
    })
    return { exitCode: r.exitCode, stdout: String(r.stdout), stderr: String(r.stderr) }
  }
}

const failed = (reason: string) => new YokeError('INSTALL_FAILED', { reason })
const refused = (reason: string) => new YokeError('INSTALL_REFUSED', { reason })
const lastLine = (text: string) => text.trim().split('\n').at(-1) ?? ''

/**
 * Clones `spec.url` into `into` without a checkout, bounded by `limits` (bytes received, time):
 * shallow at a branch or tag (or the default branch), whole when a commit is asked for.
 */
async function clone(
  spec: GitSpec,
  into: string,
  limits: GitLimits,
  progress: (line: string) => void,
): Promise<void> {
  const { execa } = await import('execa')
  const byName = spec.ref && !SHA.test(spec.ref) && !spec.sha
  const shallow = !spec.sha && (!spec.ref || byName)
  const args = [
    'clone',
    '--no-checkout',
    '--progress',
    ...(shallow ? ['--depth', '1'] : []),
    ...(byName ? ['--branch', spec.ref!] : []),
    '--',
    spec.url,
    into,
  ]
  progress(`cloning ${spec.url}${spec.ref ? `#${spec.ref}` : ''}`)
  const child = execa('git', args, {
    env: gitEnv(),
    reject: false,
    stdin: 'ignore',
    stdout: 'ignore',
    timeout: limits.ms,
    // git drops --depth for a plain local path (it copies the objects): only its own bounds hold
  })
  let received = 0
  let over = false
  let tail = ''
  child.stderr?.setEncoding('utf8')
  child.stderr?.on('data', (chunk: string) => {
    tail = (tail + chunk).slice(-4096)
    for (const line of chunk.split(/[\r\n]/)) {
      const bytes = receivedBytes(line)
      if (bytes === undefined) continue
      received = Math.max(received, bytes)
      if (received > limits.bytes && !over) {
        over = true
        child.kill('SIGKILL')
      }
    }
  })
  const result = await child
  if (over)
    throw refused(
      `git clone ${spec.url} was stopped: it sent more than ${mib(limits.bytes)} (${mib(received)} received), more than an install may fetch`,
    )
  if (result.timedOut)
    throw refused(
      `git clone ${spec.url} was stopped after ${Math.round(limits.ms / 1000)} s (${mib(received)} received): the repository is too large or the server too slow`,
    )
  if (result.exitCode !== 0) {
    const why = lastLine(tail.replace(/\r/g, '\n'))
    const offline = /could not resolve host|unable to access|network/i.test(tail)
    const noRef = byName && /Remote branch .* not found/i.test(tail)
    throw failed(
      noRef
        ? `${spec.url} has no ref or commit ${spec.ref} (no branch or tag of that name)`
        : `git clone ${spec.url} failed: ${why || result.message}${offline ? ' (this needs the network)' : ''}`,
    )
  }
}

/** What the ref names in the clone, and its commit. */
async function resolveRef(
  git: Git,
  into: string,
  spec: GitSpec,
): Promise<{ commit: string; refKind?: Cloned['refKind'] }> {
  const verify = async (name: string) => {
    const r = await git(
      ['rev-parse', '--verify', '--quiet', '--end-of-options', `${name}^{commit}`],
      into,
    )
    return r.exitCode === 0 ? r.stdout.trim() : undefined
  }
  if (!spec.ref || spec.sha) {
    // a pinned sha is the commit installed; a ref beside it only says where it came from
    const commit = await verify(spec.sha ?? 'HEAD')
    if (!commit) throw failed(`${spec.url} has no ref or commit ${spec.sha ?? 'HEAD'}`)
    return { commit, ...(spec.sha && { refKind: 'commit' as const }) }
  }
  const candidates: Array<[string, Cloned['refKind']]> = [
    [`refs/tags/${spec.ref}`, 'tag'],
    [`refs/remotes/origin/${spec.ref}`, 'branch'],
    [`refs/heads/${spec.ref}`, 'branch'],
    ...(SHA.test(spec.ref) ? [[spec.ref, 'commit'] as [string, Cloned['refKind']]] : []),
  ]
  for (const [name, refKind] of candidates) {
    const commit = await verify(name)
    if (commit) return { commit, refKind }
  }
  throw failed(
    `${spec.url} has no ref or commit ${spec.ref} (no branch, tag or commit of that name)`,
  )
}

/** Where each submodule of the commit points (`.gitmodules`), by path. */
async function submodules(git: Git, into: string, commit: string): Promise<Map<string, string>> {
  const r = await git(
    ['config', '--blob', `${commit}:.gitmodules`, '--get-regexp', '^submodule\\..*\\.(path|url)$'],
    into,
  )
  const byName = new Map<string, { path?: string; url?: string }>()
  for (const line of r.stdout.split('\n')) {
    const match = /^submodule\.(.*)\.(path|url) (.*)$/.exec(line)
    if (!match) continue
    const entry = byName.get(match[1]!) ?? {}
    entry[match[2] as 'path'] = match[3]!
    byName.set(match[1]!, entry)
  }
  return new Map([...byName.values()].filter((e) => e.path).map((e) => [e.path!, e.url ?? '?']))
}

/**
 * Lists the tree to install from the commit, before anything is checked out: refuses a
 * submodule, a sub-path that is a link, or a tree past the limits.
 */
async function checkTree(
  git: Git,
  into: string,
  spec: GitSpec,
  commit: string,
  limits: GitLimits,
): Promise<void> {
  const at = `${spec.url} at ${commit.slice(0, 12)}`
  const sub = spec.subdir
    ? posix.normalize(spec.subdir.replace(/\\/g, '/')).replace(/\/+$/, '')
    : ''
  if (sub === '..' || sub.startsWith('../') || sub.startsWith('/'))
    throw refused(`${at}: the sub-path ${spec.subdir} leads outside the repository`)
  if (sub && sub !== '.') {
    const top = await git(['ls-tree', '-z', commit, '--', sub], into)
    const [mode] = top.stdout.split(/\s/)
    if (!top.stdout) throw failed(`${at} has no folder ${spec.subdir}`)
    if (mode === '120000')
      throw refused(`${at}: the sub-path ${spec.subdir} is a link, not a folder of the repository`)
    if (mode !== '040000') throw failed(`${at}: ${spec.subdir} is not a folder`)
  }
  const listed = await git(
    ['ls-tree', '-r', '-t', '-l', '-z', commit, '--', ...(sub && sub !== '.' ? [`${sub}/`] : [])],
    into,
  )
  if (listed.exitCode !== 0) throw failed(`${at} cannot be listed: ${lastLine(listed.stderr)}`)
  let bytes = 0
  let entries = 0
  let biggest = { path: '', size: 0 }
  let modules: Map<string, string> | undefined
  for (const record of listed.stdout.split('\0')) {
    if (!record) continue
    const tab = record.indexOf('\t')
    const [mode, , , size] = record.slice(0, tab).split(/\s+/)
    const path = record.slice(tab + 1)
    entries++
    if (mode === '160000') {
      modules ??= await submodules(git, into, commit)
      throw refused(
        `${at}: ${path} is a submodule pointing to ${modules.get(path) ?? 'a repository .gitmodules does not name'}: yoke does not fetch submodules (another repository, not pinned by this install); install that repository by its own URL`,
      )
    }
    const n = Number(size)
    if (Number.isFinite(n)) {
      bytes += n
      if (n > biggest.size) biggest = { path, size: n }
    }
    if (entries > limits.entries)
      throw refused(
        `${at}: the tree holds more than ${limits.entries} files and folders, more than an install may`,
      )
    if (bytes > limits.treeBytes)
      throw refused(
        `${at}: the tree holds more than ${limits.treeBytes} bytes (${mib(bytes)} so far; ${biggest.path} alone is ${biggest.size}), more than an install may`,
      )
  }
}

/** Clones, resolves, checks and checks out the tree to install (see the module's header). */
export async function fetchGitTree(
  spec: GitSpec,
  into: string,
  progress: (line: string) => void,
  limits: GitLimits = GIT_LIMITS,
): Promise<Cloned> {
  if (/^-/.test(spec.url) || /^ext::/i.test(spec.url))
    throw refused(`${spec.url} is not a repository URL yoke fetches`)
  const sub = spec.subdir && posix.normalize(spec.subdir.replace(/\\/g, '/')).replace(/\/+$/, '')
  // `./` (a marketplace entry of the repository's top) is the whole tree
  if (spec.subdir !== undefined && (!sub || sub === '.')) spec = { ...spec, subdir: undefined }
  await clone(spec, into, limits, progress)
  const git = await runner(limits)
  const { commit, refKind } = await resolveRef(git, into, spec)
  if (spec.sha && !commit.startsWith(spec.sha.toLowerCase()))
    throw refused(`${spec.url} is at ${commit}, not the pinned commit ${spec.sha}`)
  await checkTree(git, into, spec, commit, limits)
  if (spec.subdir) {
    // only the sub-path is written: what lies beside it is neither checked nor needed
    await git(['config', 'core.sparseCheckout', 'true'], into)
    mkdirSync(join(into, '.git', 'info'), { recursive: true })
    const sub = posix.normalize(spec.subdir.replace(/\\/g, '/')).replace(/\/+$/, '')
    writeFileSync(join(into, '.git', 'info', 'sparse-checkout'), `/${sub}/\n`)
  }
  const checkout = await git(
    ['-c', 'advice.detachedHead=false', 'checkout', '--quiet', '--detach', commit],
    into,
  )
  if (checkout.exitCode !== 0)
    throw failed(
      `${spec.url}: checking out ${commit.slice(0, 12)} failed: ${lastLine(checkout.stderr)}`,
    )
  let root = realpathSync(into)
  if (spec.subdir) {
    const top = root
    const found = probe(join(top, spec.subdir))
    root = found?.isDirectory() ? realpathSync(join(top, spec.subdir)) : ''
    if (!root || !root.startsWith(top + sep))
      throw refused(
        `${spec.url} at ${commit.slice(0, 12)}: the sub-path ${spec.subdir} is not a folder inside it`,
      )
  }
  return { root, commit, ...(refKind && { refKind }) }
}

/**
 * The commit a ref names on the remote now (`git ls-remote`), for `yoke outdated`: a tag's
 * peeled commit, a branch's head, HEAD without a ref; undefined when the remote has no such ref.
 */
export async function remoteCommit(
  url: string,
  ref: string | undefined,
  limits: GitLimits = { ...GIT_LIMITS, ms: 60_000 },
): Promise<{ commit: string; refKind: Cloned['refKind'] } | undefined> {
  const git = await runner(limits)
  const r = await git(['ls-remote', '--', url, ...(ref ? [ref, `${ref}^{}`] : ['HEAD'])])
  if (r.exitCode !== 0) throw failed(`git ls-remote ${url} failed: ${lastLine(r.stderr)}`)
  const refs = new Map(
    r.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('\t').reverse() as [string, string]),
  )
  if (!ref) return refs.get('HEAD') ? { commit: refs.get('HEAD')!, refKind: 'branch' } : undefined
  const tag = refs.get(`refs/tags/${ref}^{}`) ?? refs.get(`refs/tags/${ref}`)
  if (tag) return { commit: tag, refKind: 'tag' }
  const branch = refs.get(`refs/heads/${ref}`)
  return branch ? { commit: branch, refKind: 'branch' } : undefined
}
