/**
 * Temporary directories for tests, and their removal. A suite's cleanup first ends what it
 * started (its processes, its yoke instances: `await h.close()`, `await dev.stop()`), then removes
 * the tree with these: a process that has just ended, or a background one (a hook, a server's
 * log) finishing its last write, can leave the tree briefly non-empty or busy, and a plain
 * `rmSync(dir, { recursive: true })` then fails the suite's hook with ENOTEMPTY or EBUSY although
 * every test passed. These retry those errors (Node's own retries, a linear backoff: about 1.5 s
 * in all), and a tree that still cannot go fails with the path and the reason.
 *
 *   const dir = tempDir('yoke-thing-')
 *   after(async () => {
 *     await h.close()        // first what the suite started
 *     await removeTree(dir)  // then its files
 *   })
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** how `rm` retries EBUSY, EMFILE, ENFILE, ENOTEMPTY and EPERM: 5 more tries, 100 ms apart and growing */
export const REMOVE_RETRIES = { maxRetries: 5, retryDelay: 100 } as const

/** A new directory under the system's temp directory. */
export function tempDir(prefix = 'yoke-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

/** Removes `dir` and everything in it (nothing if it is gone), retrying a tree that is still being written. */
export async function removeTree(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true, ...REMOVE_RETRIES })
}

/** removeTree for a synchronous cleanup (`project.cleanup()`); the retries wait in place. */
export function removeTreeSync(dir: string): void {
  rmSync(dir, { recursive: true, force: true, ...REMOVE_RETRIES })
}
