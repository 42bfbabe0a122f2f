/**
 * @module cli/signals
 * Waiting for Ctrl-C (or SIGTERM) in a long-running command. The listeners stay on until the
 * command is done: a library that watches signals (signal-exit, under proper-lockfile and
 * write-file-atomic) re-raises a signal nobody else listens to, which would kill the process
 * before its clean shutdown. A second signal while shutting down ends the process at once.
 */
export interface StopSignal {
  /** resolves with the first SIGINT or SIGTERM */
  readonly stopped: Promise<NodeJS.Signals>
  /** takes the listeners off (when the command returns) */
  dispose(): void
}

const EXIT: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 130, SIGTERM: 143 }

export function stopSignal(): StopSignal {
  let heard: NodeJS.Signals | undefined
  let resolve!: (signal: NodeJS.Signals) => void
  const stopped = new Promise<NodeJS.Signals>((r) => (resolve = r))
  const onSignal = (signal: NodeJS.Signals) => {
    if (heard) process.exit(EXIT[signal] ?? 1)
    heard = signal
    resolve(signal)
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return {
    stopped,
    dispose() {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
    },
  }
}
