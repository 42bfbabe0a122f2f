/**
 * Copies a fetched tree into the staging folder of an install. The copy holds only files and
 * folders: a symlink that stays inside the source is copied as what it points to, one that leads
 * out (or dangles, or back to a folder that holds it: a loop) refuses the install, naming the
 * link, and so does a FIFO or a device. `.git` is left behind, and so are run-time caches (tree.ts
 * `isCache`: the install's hash leaves them out, so a shipped one would go unchecked). Files keep
 * their executable bit, nothing else of their mode.
 */
import {
  chmodSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  realpathSync,
  statSync,
  type Stats,
} from 'node:fs'
import { join, relative, sep } from 'node:path'
import { YokeError } from 'yoke/cli'
import { isCache } from './tree.ts'

export const MAX_COPY_BYTES = 500 * 1024 * 1024

const SKIP = new Set(['.git'])

export function copyTree(from: string, to: string, label: string, maxBytes = MAX_COPY_BYTES): void {
  const root = realpathSync(from)
  let bytes = 0
  const inside = (p: string) => p === root || p.startsWith(root + sep)
  const rel = (p: string) => relative(root, p).replace(/\\/g, '/') || '.'
  /** an fs call on the source: an errno (EACCES, ELOOP, …) refuses the install, naming the path */
  const attempt = <T>(what: string, fn: () => T): T => {
    try {
      return fn()
    } catch (err) {
      if (err instanceof YokeError) throw err
      throw refused(
        `${label}: ${what} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      )
    }
  }
  /** `real` is the folder's real path; `holding` the real paths of the folders that hold it */
  const copy = (src: string, dst: string, real: string, holding: Set<string>) => {
    if (holding.size > 256) throw refused(`${label}: ${rel(src)} nests too deep`)
    mkdirSync(dst, { recursive: true })
    const inner = new Set(holding).add(real)
    for (const name of attempt(rel(src), () => readdirSync(src))) {
      const abs = join(src, name)
      const path = rel(abs)
      if (SKIP.has(name)) continue
      let stat: Stats = attempt(path, () => lstatSync(abs))
      let target = join(real, name)
      if (stat.isSymbolicLink()) {
        try {
          target = realpathSync(abs)
        } catch (err) {
          const loop = (err as NodeJS.ErrnoException).code === 'ELOOP'
          throw refused(
            `${label}: the link ${path} leads nowhere${loop ? ' (links in a loop)' : ''}`,
          )
        }
        if (!inside(target)) throw refused(`${label}: the link ${path} leads outside it`)
        stat = attempt(path, () => statSync(abs))
      }
      if (isCache(path, stat.isDirectory())) continue
      if (stat.isDirectory()) {
        if (inner.has(target))
          throw refused(
            `${label}: the link ${path} leads back to a folder that holds it (${rel(target)}), a loop: remove the link, or install a folder inside it`,
          )
        copy(abs, join(dst, name), target, inner)
      } else if (stat.isFile()) {
        bytes += stat.size
        if (bytes > maxBytes) throw refused(`${label} holds more than ${maxBytes} bytes`)
        attempt(path, () => copyFileSync(abs, join(dst, name)))
        chmodSync(join(dst, name), stat.mode & 0o111 ? 0o755 : 0o644)
      } else throw refused(`${label}: ${path} is not a file or a folder`)
    }
  }
  copy(root, to, root, new Set())
}

const refused = (reason: string) => new YokeError('INSTALL_REFUSED', { reason })
