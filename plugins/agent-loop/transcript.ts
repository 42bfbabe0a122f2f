/**
 * Transcripts: every run appends JSON lines to `<project>/.yoke/runs/<runId>.jsonl` as it goes
 * (`start`, `turn`, `model`, `message`, `tool-call`, `tool-result`, `task-done`, `end`), so a run
 * that is cancelled or crashes still leaves everything up to that point. The file is written with
 * synchronous appends: a line is on disk before the run moves on.
 */
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'

export class Transcript {
  readonly file: string
  #fd: number | undefined
  #failed?: (err: unknown) => void

  constructor(dir: string, runId: string, onError: (err: unknown) => void) {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    this.file = join(dir, `${runId}.jsonl`)
    this.#fd = openSync(this.file, 'wx', 0o600)
    this.#failed = onError
  }

  write(type: string, record: Record<string, unknown>): void {
    if (this.#fd === undefined) return
    try {
      writeSync(this.#fd, JSON.stringify({ type, at: Date.now(), ...record }) + '\n')
    } catch (err) {
      // a full disk must not end the run: report once and stop writing
      this.close()
      this.#failed?.(err)
      this.#failed = undefined
    }
  }

  close(): void {
    if (this.#fd === undefined) return
    const fd = this.#fd
    this.#fd = undefined
    closeSync(fd)
  }
}

/** Run ids sort by time: `20261129-161502-9f3a0c11`. */
export function newRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
  return `${stamp}-${randomBytes(4).toString('hex')}`
}
