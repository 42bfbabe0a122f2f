/**
 * The audit log: append-only JSON lines, one per change of what the model can use. Each line is
 * one write on a file opened for appending (O_APPEND), so lines from several processes never
 * interleave. It is read back through the state-file reader (state-file.ts): a regular file only,
 * its last 8 MiB, each line checked against the entry's schema; a torn or foreign line costs that
 * line alone and is reported (file:line), never fatal.
 */
import { z } from 'zod'
import { messageOf } from 'yoke/cli'
import type { AuditEntry } from './api.ts'
import { appendJsonLines, readJsonLines } from './state-file.ts'

/** the most of the log's tail read back (the fold of the last known state needs no more) */
const TAIL_BYTES = 8 * 1024 * 1024

const text = z.string().max(64 * 1024)
const version = text.nullable()
const auditEntry: z.ZodType<AuditEntry> = z.object({
  at: text,
  who: text,
  id: text.min(1),
  from: version,
  to: version,
  scope: text.optional(),
  why: text.optional(),
  by: text.optional(),
  hash: text.optional(),
})

/** Appends `entries`; throws (naming the file and what it is) when it is not a regular file. */
export function appendAudit(file: string, entries: AuditEntry[]): void {
  appendJsonLines(file, entries)
}

/** A command's audit lines: a log that cannot be written is said on stderr (the change is made). */
export function appendAuditOrSay(file: string, entries: AuditEntry[]): void {
  try {
    appendAudit(file, entries)
  } catch (err) {
    process.stderr.write(`warning: the audit log misses this change: ${messageOf(err)}\n`)
  }
}

/**
 * The log's entries, oldest first ([] when there is none); what was left out and why goes to
 * `onProblem` (a line: `file:line: …`; the file: `file: …`).
 */
export function readAudit(
  file: string,
  onProblem: (problem: string) => void = () => {},
): AuditEntry[] {
  const read = readJsonLines(file, auditEntry, { maxBytes: TAIL_BYTES, tail: true })
  for (const p of read.problems) onProblem(p)
  return read.entries
}

/** The state the log ends in: scope + id → the version last recorded (null: gone). */
export function foldAudit(entries: AuditEntry[]): Map<string, string | null> {
  const state = new Map<string, string | null>()
  for (const e of entries) state.set(stateKey(e.id, e.scope), e.to)
  return state
}

export const stateKey = (id: string, scope?: string) => `${scope ?? 'global'}\0${id}`
