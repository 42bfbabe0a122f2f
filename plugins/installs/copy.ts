/**
 * Copies a fetched tree into the staging folder of an install. The copy holds only files and
 * folders: a symlink that stays inside the source is copied as what it points to, one that leads
 * out (or dangles) refuses the install, naming the link, and so does a FIFO or a device. `.git`
 * is left behind. Files keep their executable bit, nothing else of their mode.
 */
import {
  chmodSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  realpathSync,
  statSync,
} from 'node:fs'
import { join, relative, sep } from 'node:path'
import { YokeError } from 'yoke/cli'

export const MAX_COPY_BYTES = 500 * 1024 * 1024

const SKIP = new Set(['.git'])

export function copyTree(from: string, to: string, label: string, maxBytes = MAX_COPY_BYTES): void {
  const root = realpathSync(from)
  let bytes = 0
  const inside = (p: string) => p === root || p.startsWith(root + sep)
  const copy = (src: string, dst: string, depth: number) => {
    if (depth > 64)
      throw refused(`${label}: ${relative(root, src)} nests too deep (links in a loop?)`)
    mkdirSync(dst, { recursive: true })
    for (const name of readdirSync(src)) {
      if (SKIP.has(name)) continue
      const abs = join(src, name)
      const out = join(dst, name)
      let stat = lstatSync(abs)
      if (stat.isSymbolicLink()) {
        let real: string
        try {
          real = realpathSync(abs)
        } catch {
          throw refused(`${label}: the link ${relative(root, abs)} leads nowhere`)
        }
        if (!inside(real))
          throw refused(`${label}: the link ${relative(root, abs)} leads outside it`)
        stat = statSync(abs)
      }
      if (stat.isDirectory()) copy(abs, out, depth + 1)
      else if (stat.isFile()) {
        bytes += stat.size
        if (bytes > maxBytes) throw refused(`${label} holds more than ${maxBytes} bytes`)
        copyFileSync(abs, out)
        chmodSync(out, stat.mode & 0o111 ? 0o755 : 0o644)
      } else throw refused(`${label}: ${relative(root, abs)} is not a file or a folder`)
    }
  }
  copy(root, to, 0)
}

const refused = (reason: string) => new YokeError('INSTALL_REFUSED', { reason })
