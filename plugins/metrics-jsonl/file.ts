/**
 * metrics-jsonl's file: JSON lines, each a total of a row (`row`, what compaction writes) or what
 * one process counted since its last line (`add`); a row is the sum of its `add` lines after its
 * last total. Read through the capabilities plugin's checked state-file reader.
 */
import { closeSync, openSync, renameSync, writeSync } from 'node:fs'
import { z } from 'zod'
import { readJsonLines, type MetricsRow } from '../capabilities/api.ts'

export type Persisted = MetricsRow & { latencies?: number[] }
export type Counts = Pick<MetricsRow, 'offered' | 'found' | 'called' | 'ok' | 'errors'>

/** how many recent latencies a row keeps (as the capabilities store does) */
const SAMPLES = 256
/** the default of `maxBytes`: past it a file is not read */
export const MAX_BYTES = 64 * 1024 * 1024

const count = z.number().int().nonnegative()
const text = z.string().max(64 * 1024)
/** a row as a line holds it: a total (`row`) or what one process counted since its last line (`add`) */
const persisted = z.object({
  id: text.min(1),
  version: text.optional(),
  hash: text.min(1),
  source: text,
  offered: count,
  found: count,
  called: count,
  ok: count,
  errors: z.record(text, count),
  firstAt: text,
  lastAt: text,
  latencies: z
    .array(z.number().nonnegative())
    .transform((l) => l.slice(-SAMPLES))
    .optional(),
})
const metricsLine = z
  .object({ row: persisted.optional(), add: persisted.optional() })
  .refine((l) => l.row || l.add, 'neither a row nor an add')
  .transform((l) => ({ total: !l.add, row: (l.add ?? l.row)! as Persisted }))
type Line = z.output<typeof metricsLine>
export const keyOf = (r: { id: string; version?: string; hash: string }) =>
  `${r.id}@${r.version ?? ''}#${r.hash}`

/** What `row` counted beyond `before` (undefined: nothing), with the latencies of those calls. */
export function delta(row: Persisted, before: Counts | undefined): Persisted | undefined {
  const b = before ?? { offered: 0, found: 0, called: 0, ok: 0, errors: {} }
  const errors: Record<string, number> = {}
  for (const [code, n] of Object.entries(row.errors))
    if (n > (b.errors[code] ?? 0)) errors[code] = n - (b.errors[code] ?? 0)
  const called = row.called - b.called
  const add: Persisted = {
    ...row,
    offered: row.offered - b.offered,
    found: row.found - b.found,
    called,
    ok: row.ok - b.ok,
    errors,
    latencies: called > 0 ? (row.latencies ?? []).slice(-called) : [],
  }
  delete add.p50
  delete add.p95
  return add.offered || add.found || add.called ? add : undefined
}

/** `into` plus `add`: counts and error counts summed, the most recent latencies, the widest times. */
function sum(into: Persisted, add: Persisted): Persisted {
  const errors = { ...into.errors }
  for (const [code, n] of Object.entries(add.errors)) errors[code] = (errors[code] ?? 0) + n
  return {
    ...add,
    offered: into.offered + add.offered,
    found: into.found + add.found,
    called: into.called + add.called,
    ok: into.ok + add.ok,
    errors,
    latencies: [...(into.latencies ?? []), ...(add.latencies ?? [])].slice(-SAMPLES),
    firstAt: into.firstAt < add.firstAt ? into.firstAt : add.firstAt,
    lastAt: into.lastAt > add.lastAt ? into.lastAt : add.lastAt,
  }
}

/**
 * The rows a file holds, oldest first: each row (id, version, hash) is the sum of its `add` lines
 * after its last `row` line (a total: what compaction, and earlier versions, wrote). A line that
 * is not a row is skipped and said (`file:line: why`); so is a file that is not read.
 */
export function readRows(
  file: string,
  onProblem: (problem: string) => void = () => {},
  maxBytes = MAX_BYTES,
): Persisted[] {
  return readState(file, maxBytes, onProblem).rows
}

/**
 * The file through the checked reader (a regular file, at most `maxBytes`): its rows, its size,
 * the bytes read, and whether it is `usable` (read, or not there yet).
 */
export function readState(file: string, maxBytes: number, onProblem: (problem: string) => void) {
  const read = readJsonLines(file, metricsLine, { maxBytes })
  for (const p of read.problems) onProblem(p)
  const usable = !read.problems.some((p) => p.startsWith(`${file}: `))
  const rows = [...fold(new Map(), read.entries).values()]
  return { rows, size: read.size, read: read.read, usable }
}

function fold(rows: Map<string, Persisted>, lines: Line[]): Map<string, Persisted> {
  for (const { total, row } of lines) {
    const k = keyOf(row)
    const had = rows.get(k)
    rows.set(k, !total && had ? sum(had, row) : { ...row, errors: { ...row.errors } })
  }
  return rows
}

/**
 * Rewrites the file as one total line per row. Lines another process appended while this one
 * read are folded in just before the new file replaces the old (a rename, so a reader never sees
 * half of it).
 */
export function compact(
  file: string,
  first: { rows: Persisted[]; read: number },
  maxBytes: number,
  onProblem: (problem: string) => void,
) {
  const more = readJsonLines(file, metricsLine, { maxBytes, from: first.read })
  for (const p of more.problems) onProblem(p)
  if (more.problems.some((p) => p.startsWith(`${file}: `))) return
  const all = fold(new Map(first.rows.map((r) => [keyOf(r), r])), more.entries)
  const at = new Date().toISOString()
  const temp = `${file}.${process.pid}.tmp`
  const fd = openSync(temp, 'w', 0o600)
  try {
    for (const row of all.values()) writeSync(fd, JSON.stringify({ at, row }) + '\n')
  } finally {
    closeSync(fd)
  }
  renameSync(temp, file)
  first.rows.splice(0, first.rows.length, ...all.values())
}
