/**
 * metrics-jsonl: persists the capabilities plugin's metrics rows to a JSON-lines file, and reads
 * them back when it starts, so `yoke stats` counts across runs and across processes. Each process
 * appends only what it counted since its last write (a delta line), and reading sums the lines, so
 * a `yoke dev` and a `yoke run` writing at once add up instead of overwriting each other. When the
 * file grows past `compactBytes` it is rewritten at start as one total line per row.
 */
import { closeSync, openSync, renameSync, writeSync } from 'node:fs'
import { z } from 'zod'
import { definePlugin } from 'yoke'
import {
  appendJsonLines,
  escapesProject,
  PROJECT_PATH_RULE,
  readJsonLines,
  resolveInside,
  type MetricsRow,
} from '../capabilities/api.ts'

type Persisted = MetricsRow & { latencies?: number[] }
type Counts = Pick<MetricsRow, 'offered' | 'found' | 'called' | 'ok' | 'errors'>

/** how many recent latencies a row keeps (as the capabilities store does) */
const SAMPLES = 256
/** the default of `maxBytes`: past it a file is not read */
const MAX_BYTES = 64 * 1024 * 1024

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
const keyOf = (r: { id: string; version?: string; hash: string }) =>
  `${r.id}@${r.version ?? ''}#${r.hash}`

export default definePlugin({
  name: 'metrics-jsonl',
  inject: ['capabilities', 'project'],
  config: z
    .object({
      /** the file, relative to the project (and inside it) */
      file: z
        .string()
        .min(1)
        .refine((path) => !escapesProject(path), PROJECT_PATH_RULE)
        .default('.yoke/metrics.jsonl'),
      intervalMs: z.number().int().positive().default(10_000),
      /** past this size the file is rewritten at start as one line per row */
      compactBytes: z
        .number()
        .int()
        .positive()
        .default(1024 * 1024),
      /** a file larger than this is not read (nor appended to): said, with the fix */
      maxBytes: z.number().int().positive().default(MAX_BYTES),
    })
    .strict(),
  apply(ctx, config) {
    const file = resolveInside(ctx.project.dir, config.file, 'file', '.yoke/metrics.jsonl')
    const warn = (problem: string) => ctx.logger.warn(problem)
    const read = readState(file, config.maxBytes, warn)
    // a file not read (not a regular file, too large) is not appended to either: it is said once
    let usable = read.usable
    if (!usable)
      warn(`metrics are kept in memory only: ${file} is not appended to until it is fixed`)
    if (usable && read.size > config.compactBytes)
      try {
        compact(file, read, config.maxBytes, warn)
      } catch (err) {
        warn(
          `${file} was not compacted (it is read whole at each start): ${(err as Error).message}`,
        )
      }
    ctx.capabilities.seed(read.rows)
    // what the file holds of each row already: a write appends only what came after
    const written = new Map<string, Counts>(ctx.capabilities.stats().map((r) => [keyOf(r), r]))
    const write = () => {
      const lines: unknown[] = []
      const at = new Date().toISOString()
      for (const row of ctx.capabilities.drain()) {
        const k = keyOf(row)
        const add = delta(row, written.get(k))
        written.set(k, row)
        if (add) lines.push({ at, pid: process.pid, add })
      }
      if (!lines.length || !usable) return
      try {
        // one write per line on an O_APPEND file: lines of two processes never interleave
        appendJsonLines(file, lines)
      } catch (err) {
        usable = false
        warn(`metrics are kept in memory only from now: ${(err as Error).message}`)
      }
    }
    ctx.setInterval(write, config.intervalMs)
    return write
  },
})

/** What `row` counted beyond `before` (undefined: nothing), with the latencies of those calls. */
function delta(row: Persisted, before: Counts | undefined): Persisted | undefined {
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
function readState(file: string, maxBytes: number, onProblem: (problem: string) => void) {
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
function compact(
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
