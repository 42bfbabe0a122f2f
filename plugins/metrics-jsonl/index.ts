/**
 * metrics-jsonl: persists the capabilities plugin's metrics rows to a JSON-lines file, and reads
 * them back when it starts, so `yoke stats` counts across runs and across processes. Each process
 * appends only what it counted since its last write (a delta line), and reading sums the lines, so
 * a `yoke dev` and a `yoke run` writing at once add up instead of overwriting each other. When the
 * file grows past `compactBytes` it is rewritten at start as one total line per row.
 */
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import { z } from 'zod'
import { definePlugin } from 'yoke'
import {
  escapesProject,
  PROJECT_PATH_RULE,
  resolveInside,
  type MetricsRow,
} from '../capabilities/api.ts'

type Persisted = MetricsRow & { latencies?: number[] }
type Counts = Pick<MetricsRow, 'offered' | 'found' | 'called' | 'ok' | 'errors'>

/** how many recent latencies a row keeps (as the capabilities store does) */
const SAMPLES = 256
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
    })
    .strict(),
  apply(ctx, config) {
    const file = resolveInside(ctx.project.dir, config.file, 'file', '.yoke/metrics.jsonl')
    const warn = (line: number) => ctx.logger.warn(`${file}:${line}: not a metrics row; skipped`)
    const { rows, bytes } = readFile(file, warn)
    if (bytes > config.compactBytes) compact(file, rows, bytes, warn)
    ctx.capabilities.seed(rows)
    // what the file holds of each row already: a write appends only what came after
    const written = new Map<string, Counts>(ctx.capabilities.stats().map((r) => [keyOf(r), r]))
    const write = () => {
      const lines: string[] = []
      const at = new Date().toISOString()
      for (const row of ctx.capabilities.drain()) {
        const k = keyOf(row)
        const add = delta(row, written.get(k))
        written.set(k, row)
        if (add) lines.push(JSON.stringify({ at, pid: process.pid, add }) + '\n')
      }
      if (!lines.length) return
      mkdirSync(dirname(file), { recursive: true })
      const fd = openSync(file, 'a', 0o600)
      try {
        // one write per line on an O_APPEND file: lines of two processes never interleave
        for (const line of lines) writeSync(fd, line)
      } finally {
        closeSync(fd)
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
 * after its last `row` line (a total: what compaction, and earlier versions, wrote).
 */
export function readRows(file: string, onBad: (line: number) => void = () => {}): Persisted[] {
  return readFile(file, onBad).rows
}

function readFile(
  file: string,
  onBad: (line: number) => void,
): { rows: Persisted[]; bytes: number } {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return { rows: [], bytes: 0 }
  }
  return { rows: [...fold(new Map(), text, 0, onBad).values()], bytes: Buffer.byteLength(text) }
}

function fold(
  rows: Map<string, Persisted>,
  text: string,
  firstLine: number,
  onBad: (line: number) => void,
): Map<string, Persisted> {
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return
    try {
      const { row, add } = JSON.parse(line) as { row?: Persisted; add?: Persisted }
      const r = add ?? row
      if (typeof r?.id !== 'string' || typeof r.hash !== 'string') throw new Error('no row')
      if (typeof r.offered !== 'number' || typeof r.called !== 'number')
        throw new Error('no counts')
      const k = keyOf(r)
      const had = rows.get(k)
      rows.set(k, add && had ? sum(had, add) : { ...r, errors: { ...r.errors } })
    } catch {
      onBad(firstLine + i + 1)
    }
  })
  return rows
}

/**
 * Rewrites the file as one total line per row. Lines another process appended while this one
 * read are folded in just before the new file replaces the old (a rename, so a reader never sees
 * half of it).
 */
function compact(file: string, rows: Persisted[], bytes: number, onBad: (line: number) => void) {
  let tail: string
  try {
    tail = readFileSync(file).subarray(bytes).toString('utf8')
  } catch {
    return
  }
  const all = fold(new Map(rows.map((r) => [keyOf(r), r])), tail, 0, onBad)
  const at = new Date().toISOString()
  const temp = `${file}.${process.pid}.tmp`
  const fd = openSync(temp, 'w', 0o600)
  try {
    for (const row of all.values()) writeSync(fd, JSON.stringify({ at, row }) + '\n')
  } finally {
    closeSync(fd)
  }
  renameSync(temp, file)
  rows.splice(0, rows.length, ...all.values())
}
