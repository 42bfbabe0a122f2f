/**
 * Where packages are looked for: a root is a folder of package folders (each with manifest.json),
 * and an added root may also be one package folder. Light on purpose: `yoke plugins list` reads
 * the roots of an instance that waits with these, without loading anything.
 */
import { existsSync, readdirSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'

/** `dir` as a path: `~/` is the home directory, a relative path starts at the project's directory. */
export function expandDir(projectDir: string, dir: string): string {
  return resolve(projectDir, dir.startsWith('~/') ? join(homedir(), dir.slice(2)) : dir)
}

/** The package folders in a folder of packages (none when it is missing, a file or unreadable). */
export function childrenOf(root: string): string[] {
  try {
    return readdirSync(root, { withFileTypes: true })
      .filter((e) => e.isDirectory() && existsSync(join(root, e.name, 'manifest.json')))
      .map((e) => join(root, e.name))
  } catch {
    return [] // missing, a file (ENOTDIR) or unreadable: it holds no packages, the others load
  }
}

/** The package folders of an added root: itself when it is one package folder, else its children. */
export function packagesOf(root: string): string[] {
  return existsSync(join(root, 'manifest.json')) ? [root] : childrenOf(root)
}
