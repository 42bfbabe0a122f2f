/**
 * Unpacks a .tgz/.tar.gz (or plain .tar) safely. Every entry is read first, and the archive is
 * refused before anything is written when one of them: is an absolute path or climbs out with
 * `..`; is a link (symbolic or hard) that leads outside the archive's root; is anything but a
 * file, a directory or such a link (a device, a FIFO); or when the files add up to more than the
 * size limit, or there are too many of them. Then it is extracted with owners and odd modes
 * dropped. npm's layout (everything under `package/`) and GitHub's (one top folder) are unwrapped.
 */
import { readdirSync, statSync } from 'node:fs'
import { join, posix } from 'node:path'
import type { ReadEntry } from 'tar'
import { YokeError } from 'yoke/cli'

export const MAX_UNPACKED_BYTES = 500 * 1024 * 1024
export const MAX_ENTRIES = 20_000

const ALLOWED = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory', 'SymbolicLink', 'Link'])
// pax and GNU headers that only describe the next entry
const META = new Set([
  'ExtendedHeader',
  'GlobalExtendedHeader',
  'NextFileHasLongPath',
  'NextFileHasLongLinkpath',
  'OldGnuLongPath',
])

/** Why the entry is unsafe, or undefined. */
function problem(entry: ReadEntry): string | undefined {
  const path = entry.path.replace(/\\/g, '/')
  if (META.has(entry.type)) return undefined
  if (!ALLOWED.has(entry.type))
    return `${path} is a ${entry.type} entry (only files, folders and links inside it are allowed)`
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return `${path} is an absolute path`
  const normal = posix.normalize(path)
  if (normal === '..' || normal.startsWith('../')) return `${path} leads outside the archive`
  if (entry.type === 'SymbolicLink' || entry.type === 'Link') {
    const target = (entry.linkpath ?? '').replace(/\\/g, '/')
    if (target.startsWith('/') || /^[A-Za-z]:/.test(target))
      return `${path} links to the absolute path ${target}`
    const resolved =
      entry.type === 'Link'
        ? posix.normalize(target)
        : posix.normalize(posix.join(posix.dirname(normal), target))
    if (resolved === '..' || resolved.startsWith('../'))
      return `${path} links to ${target}, outside the archive`
  }
  return undefined
}

/** Checks every entry of `file`, then extracts it into `dir`; returns the content's root folder. */
export async function unpack(
  file: string,
  dir: string,
  label: string,
  maxBytes = MAX_UNPACKED_BYTES,
): Promise<string> {
  const { extract, list } = await import('tar') // at the first install, not whenever installs loads
  const problems: string[] = []
  let bytes = 0
  let entries = 0
  try {
    await list({
      file,
      strict: true,
      onReadEntry(entry) {
        entries++
        bytes += entry.size ?? 0
        const p = problem(entry)
        if (p && problems.length < 5) problems.push(p)
      },
    })
  } catch (err) {
    throw new YokeError('INSTALL_FAILED', {
      reason: `${label} is not a readable tar archive (${(err as Error).message})`,
    })
  }
  if (problems.length)
    throw new YokeError('INSTALL_REFUSED', {
      reason: `${label} is refused: ${problems.join('; ')}`,
    })
  if (bytes > maxBytes)
    throw new YokeError('INSTALL_REFUSED', {
      reason: `${label} unpacks to ${bytes} bytes, over the limit of ${maxBytes}`,
    })
  if (entries > MAX_ENTRIES)
    throw new YokeError('INSTALL_REFUSED', {
      reason: `${label} holds ${entries} entries, over the limit of ${MAX_ENTRIES}`,
    })
  await extract({
    file,
    cwd: dir,
    strict: true,
    preserveOwner: false,
    // no setuid, setgid or world-writable bits from a stranger's archive
    processUmask: 0o022,
    filter: (_path, entry) => !problem(entry as ReadEntry),
  })
  return unwrap(dir)
}

/** A tree whose only entry is one folder (`package/`, `repo-1.2.0/`) is that folder's content. */
export function unwrap(dir: string): string {
  const names = readdirSync(dir).filter((n) => n !== 'pax_global_header')
  if (names.length === 1 && statSync(join(dir, names[0]!)).isDirectory())
    return join(dir, names[0]!)
  return dir
}
