/**
 * @module tool-search/files
 * Reading a file the user's folder or yoke's cache holds, defensively: a regular file under its
 * cap, checked before it is opened and again on the descriptor (a FIFO or a device is refused, not
 * read: opening one non-blocking never waits for a writer).
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs'

/** Why a path is not a regular file under `max` bytes, or undefined when it is. */
function refusal(stat: Stats, max: number): string | undefined {
  if (!stat.isFile()) return 'not a regular file'
  if (stat.size > max) return `${stat.size} bytes, more than ${max}`
  return undefined
}

/** Throws (ENOENT as node does; else 'not a regular file', 'N bytes, more than M') unless `file` is a regular file under `max`. */
export function checkRegular(file: string, max: number): Stats {
  const stat = statSync(file)
  const why = refusal(stat, max)
  if (why) throw new Error(why)
  return stat
}

/** The bytes of a regular file under `max` (checkRegular's errors). */
export function readRegular(file: string, max: number): Buffer {
  checkRegular(file, max)
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    const stat = fstatSync(fd)
    const why = refusal(stat, max)
    if (why) throw new Error(why)
    const bytes = Buffer.alloc(stat.size)
    let read = 0
    while (read < bytes.length) {
      const n = readSync(fd, bytes, read, bytes.length - read, read)
      if (!n) break
      read += n
    }
    return bytes.subarray(0, read)
  } finally {
    closeSync(fd)
  }
}
