/**
 * The audit log: append-only JSON lines, one per change of what the model can use. Each line is
 * one write on a file opened for appending (O_APPEND), so lines from several processes never
 * interleave; a torn or foreign line is skipped when read, never fatal.
 */
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import type { AuditEntry } from './api.ts'

/** the most of the log's tail read back (the fold of the last known state needs no more) */
const TAIL_BYTES = 8 * 1024 * 1024

export function appendAudit(file: string, entries: AuditEntry[]): void {
  if (!entries.length) return
  mkdirSync(dirname(file), { recursive: true })
  const fd = openSync(file, 'a', 0o600)
  try {
    for (const entry of entries) writeSync(fd, JSON.stringify(entry) + '\n')
  } finally {
    closeSync(fd)
  }
}

/** The log's entries, oldest first ([] when there is none). */
export function readAudit(file: string): AuditEntry[] {
  let text: string
  try {
    const bytes = readFileSync(file)
    text = bytes.subarray(Math.max(0, bytes.length - TAIL_BYTES)).toString('utf8')
  } catch {
    return []
  }
  const entries: AuditEntry[] = []
  for (const line of text.split('\n')) {
    if (!line.trim()) continue
    try {
      const entry = JSON.parse(line) as AuditEntry
      if (entry && typeof entry.id === 'string' && typeof entry.at === 'string') entries.push(entry)
    } catch {
      // a torn last line of a process that died mid-write, or not ours
    }
  }
  return entries
}

/** The state the log ends in: scope + id → the version last recorded (null: gone). */
export function foldAudit(entries: AuditEntry[]): Map<string, string | null> {
  const state = new Map<string, string | null>()
  for (const e of entries) state.set(stateKey(e.id, e.scope), e.to)
  return state
}

export const stateKey = (id: string, scope?: string) => `${scope ?? 'global'}\0${id}`
