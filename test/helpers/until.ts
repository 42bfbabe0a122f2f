/**
 * The test suite's one polling helper. Every wait is bounded: on timeout it fails naming what it
 * waited for and for how long, so a regression fails fast instead of hanging the file.
 */
import assert from 'node:assert/strict'

export interface UntilOptions {
  /** how long to wait before failing (default 10 s) */
  ms?: number
  /** how often to check (default every 20 ms) */
  every?: number
}

/**
 * Polls `check` until it returns true. `what` names the awaited thing in the failure ("the tool to
 * load"); a function is called only on failure, to describe the state the wait ended in. A check
 * that throws fails at once; an async check that never settles is cut off at the deadline too.
 *
 * @example await until('the package to load', () => rt.list().some((t) => t.name === 'probe'))
 */
export async function until(
  what: string | (() => string),
  check: () => boolean | Promise<boolean>,
  { ms = 10_000, every = 20 }: UntilOptions = {},
): Promise<void> {
  const deadline = Date.now() + ms
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), ms)
  })
  try {
    for (;;) {
      const done = await Promise.race([check(), expired])
      if (done === true) return
      if (done === 'expired' || Date.now() >= deadline) break
      await new Promise((resolve) => setTimeout(resolve, Math.min(every, deadline - Date.now())))
    }
  } finally {
    clearTimeout(timer)
  }
  assert.fail(`timed out after ${ms} ms waiting for ${typeof what === 'function' ? what() : what}`)
}
