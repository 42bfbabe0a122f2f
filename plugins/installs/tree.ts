/**
 * The hash of an installed tree, the same on every machine: each entry's relative path (with `/`,
 * sorted by code unit), its type, for a file its executable bit and the sha256 of its bytes, for a
 * symlink the sha256 of its target text (installs never hold one: a link that appears later makes
 * the hash differ instead of being followed). Empty directories count too.
 */
import { createHash } from 'node:crypto'
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'

/** One entry of a tree: `f` file (`x` when executable), `d` directory, `l` symlink. */
export interface TreeEntry {
  path: string
  type: 'f' | 'x' | 'd' | 'l'
  sha256: string
}

const sha = (data: string | Buffer) => createHash('sha256').update(data).digest('hex')

/** Every entry under `root`, sorted by path. */
export function listTree(root: string): TreeEntry[] {
  const out: TreeEntry[] = []
  const walk = (dir: string, prefix: string) => {
    for (const name of readdirSync(dir)) {
      const abs = join(dir, name)
      const path = prefix ? `${prefix}/${name}` : name
      const stat = lstatSync(abs)
      if (stat.isSymbolicLink()) out.push({ path, type: 'l', sha256: sha(readlinkSync(abs)) })
      else if (stat.isDirectory()) {
        out.push({ path, type: 'd', sha256: '' })
        walk(abs, path)
      } else if (stat.isFile())
        out.push({ path, type: stat.mode & 0o111 ? 'x' : 'f', sha256: sha(readFileSync(abs)) })
      else out.push({ path, type: 'l', sha256: sha(`special file ${stat.mode}`) })
    }
  }
  walk(root, '')
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/** The tree's hash (hex). */
export function hashTree(entries: TreeEntry[]): string {
  return sha(entries.map((e) => `${e.type} ${e.sha256} ${e.path}\n`).join(''))
}

export interface TreeDiff {
  added: string[]
  changed: string[]
  removed: string[]
}

/** The files (not directories) added, changed (content or executable bit) and removed. */
export function diffTrees(before: TreeEntry[], after: TreeEntry[]): TreeDiff {
  const files = (list: TreeEntry[]) =>
    new Map(list.filter((e) => e.type !== 'd').map((e) => [e.path, e]))
  const a = files(before)
  const b = files(after)
  return {
    added: [...b.keys()].filter((p) => !a.has(p)),
    changed: [...b.keys()].filter(
      (p) =>
        a.has(p) && (a.get(p)!.sha256 !== b.get(p)!.sha256 || a.get(p)!.type !== b.get(p)!.type),
    ),
    removed: [...a.keys()].filter((p) => !b.has(p)),
  }
}
