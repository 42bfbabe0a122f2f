/**
 * Finding a package's executable and keeping it honest. The search order is octos's (the
 * manifest's name, the directory's name, `main`, then a scan); symlinks are refused and so is a
 * file over 100 MB, before a byte of it is read. The sha256 taken at load is checked again before
 * every spawn. Re-reading a large unchanged binary on every call would cost milliseconds, so the
 * check compares the file's identity and change stamps first (device, inode, size, mtime, ctime):
 * replacing the file (a new inode) or writing to it (mtime and ctime move; ctime cannot be set
 * back from user space) changes them, and only then is the file hashed again.
 */
import { createHash } from 'node:crypto'
import { createReadStream, lstatSync, readdirSync, type Stats } from 'node:fs'
import { lstat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { messageOf } from 'yoke'

export const MAX_EXECUTABLE_BYTES = 100_000_000

const NOT_EXECUTABLES = /\.(json|md|toml|tar\.gz)$/

export type Stamp = Pick<Stats, 'dev' | 'ino' | 'size' | 'mtimeMs' | 'ctimeMs'>

export interface Verified {
  path: string
  sha256: string
  stamp: Stamp
}

/** The integrity failure of an executable (the runtime turns it into INTEGRITY_FAILED). */
export class IntegrityError extends Error {}

/** The executable of the package in `dir` named `name`, or why there is none. */
export function findExecutable(dir: string, name: string): { path: string } | { problem: string } {
  for (const candidate of [...new Set([name, basename(dir), 'main'])]) {
    const path = join(dir, candidate)
    let st: Stats
    try {
      st = lstatSync(path)
    } catch {
      continue
    }
    if (st.isSymbolicLink())
      return {
        problem: `the executable ${path} is a symlink; symlinks are refused (copy the file instead)`,
      }
    if (st.isFile() && st.mode & 0o111) return { path }
  }
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
    a.name.localeCompare(b.name),
  )) {
    if (entry.name.startsWith('.') || NOT_EXECUTABLES.test(entry.name) || !entry.isFile()) continue
    const path = join(dir, entry.name)
    if (lstatSync(path).mode & 0o111) return { path }
  }
  return {
    problem: `no executable found in package "${name}" (tried "${name}", "${basename(dir)}", "main", and a scan of ${dir}); is it chmod +x?`,
  }
}

/** Hashes the executable (refusing symlinks and files over the size cap before reading) and checks it against `expected`. */
export async function verify(path: string, expected?: string): Promise<Verified> {
  const st = await lstat(path)
  if (st.isSymbolicLink()) throw new IntegrityError(`${path} is a symlink`)
  if (!st.isFile()) throw new IntegrityError(`${path} is not a regular file`)
  if (st.size > MAX_EXECUTABLE_BYTES)
    throw new IntegrityError(
      `${path} is ${st.size} bytes; an executable may be at most ${MAX_EXECUTABLE_BYTES}`,
    )
  const sha256 = await hashFile(path)
  if (expected && sha256 !== expected)
    throw new IntegrityError(`hash mismatch: the manifest says ${expected}, the file is ${sha256}`)
  return { path, sha256, stamp: stampOf(st) }
}

/** Checked before every spawn: an unchanged file costs one lstat; a changed one is hashed again. */
export class IntegrityGate {
  constructor(private verified: Verified) {}

  get sha256(): string {
    return this.verified.sha256
  }

  async check(): Promise<void> {
    const { path, sha256, stamp } = this.verified
    let st: Stats
    try {
      st = lstatSync(path) // a few µs; the async form costs a thread-pool round trip on every call
    } catch (err) {
      throw new IntegrityError(
        `${path} is gone (${(err as NodeJS.ErrnoException).code ?? messageOf(err)})`,
      )
    }
    if (sameStamp(st, stamp)) return
    const now = await verify(path)
    if (now.sha256 !== sha256)
      throw new IntegrityError(
        `${path} changed after it was verified (expected ${sha256}, got ${now.sha256})`,
      )
    this.verified = now // touched, same bytes: trust the new stamps
  }
}

function stampOf(st: Stats): Stamp {
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs }
}

function sameStamp(st: Stats, stamp: Stamp): boolean {
  return (
    !st.isSymbolicLink() &&
    st.dev === stamp.dev &&
    st.ino === stamp.ino &&
    st.size === stamp.size &&
    st.mtimeMs === stamp.mtimeMs &&
    st.ctimeMs === stamp.ctimeMs
  )
}

function hashFile(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256')
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')))
  })
}
