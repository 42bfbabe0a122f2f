/**
 * @module cli/signals
 * Waiting for Ctrl-C (or SIGTERM) in a long-running command. The listeners stay on until the
 * command is done: a library that watches signals (signal-exit, under proper-lockfile and
 * write-file-atomic) re-raises a signal nobody else listens to, which would kill the process
 * before its clean shutdown. A second signal while shutting down ends the process at once.
 *
 * A command whose parent process dies while its stdio is a pipe or a socket (an editor, an agent
 * or a test harness that started it and read its output) stops as on SIGHUP: nobody is left to
 * read it or stop it. One whose stdio is a terminal or a file (`nohup`, `setsid`, a service's log
 * file) runs on when the shell that started it ends.
 */
import { fstatSync } from 'node:fs'
import { faultContext } from '../kernel/faults.ts'

export interface StopSignal {
  /** resolves with the first SIGINT or SIGTERM, or SIGHUP when the parent process is gone */
  readonly stopped: Promise<NodeJS.Signals>
  /** takes the listeners off (when the command returns) */
  dispose(): void
}

const EXIT: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 }

/** How often a long-running command checks that its parent is still there. */
export const PARENT_CHECK_MS = 1000

export function stopSignal(): StopSignal {
  let heard: NodeJS.Signals | undefined
  let resolve!: (signal: NodeJS.Signals) => void
  const stopped = new Promise<NodeJS.Signals>((r) => (resolve = r))
  const onSignal = (signal: NodeJS.Signals) => {
    if (heard) exitNow(EXIT[signal] ?? 1)
    heard = signal
    resolve(signal)
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  const parent = process.ppid
  const stopWatching = watchParent(() => {
    process.stderr.write(
      `yoke: the process that started this one (pid ${parent}) is gone; stopping (start it with nohup or setsid, or with its output in a file, to keep it running)\n`,
    )
    onSignal('SIGHUP')
  })
  return {
    stopped,
    dispose() {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      stopWatching()
    },
  }
}

/**
 * Calls `gone` once the parent process has gone (this process was handed to another parent),
 * when one of stdin, stdout, stderr is a pipe or a socket: the parent held its other end.
 */
function watchParent(gone: () => void): () => void {
  const parent = process.ppid
  if (parent <= 1 || ![0, 1, 2].some(piped)) return () => {}
  const timer = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(timer)
    gone()
  }, PARENT_CHECK_MS)
  timer.unref()
  return () => clearInterval(timer)
}

function piped(fd: number): boolean {
  try {
    const stat = fstatSync(fd)
    return stat.isFIFO() || stat.isSocket()
  } catch {
    return false
  }
}

/**
 * Ends the process now, as the CLI frame (never as a plugin): process.exit() called from a
 * plugin's async context is refused (kernel/faults), and the CLI's own exits often run there —
 * a write to a closed pipe fails in the context of the plugin whose log line it carried.
 */
export function exitNow(code: number): never {
  return faultContext.exit(() => process.exit(code))
}
