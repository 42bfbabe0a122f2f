/**
 * metrics-jsonl: persists the capabilities plugin's metrics rows to a JSON-lines file, and reads
 * them back when it starts, so `yoke stats` counts across runs (the last line of a row wins). A
 * row is written when it changed: every `intervalMs`, and once more when the instance stops.
 */
import { mkdirSync, openSync, readFileSync, writeSync, closeSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { z } from 'zod'
import { definePlugin } from 'yoke'
import type { MetricsRow } from '../capabilities/api.ts'

type Persisted = MetricsRow & { latencies?: number[] }

export default definePlugin({
  name: 'metrics-jsonl',
  inject: ['capabilities', 'project'],
  config: z
    .object({
      /** the file, relative to the project */
      file: z.string().min(1).default('.yoke/metrics.jsonl'),
      intervalMs: z.number().int().positive().default(10_000),
    })
    .strict(),
  apply(ctx, config) {
    const file = resolve(ctx.project.dir, config.file)
    ctx.capabilities.seed(
      readRows(file, (line) => ctx.logger.warn(`${file}:${line}: not a metrics row; skipped`)),
    )
    const write = () => {
      const rows = ctx.capabilities.drain()
      if (!rows.length) return
      mkdirSync(dirname(file), { recursive: true })
      const fd = openSync(file, 'a', 0o600)
      try {
        const at = new Date().toISOString()
        // one write per line on an O_APPEND file: lines of two processes never interleave
        for (const row of rows) writeSync(fd, JSON.stringify({ at, row }) + '\n')
      } finally {
        closeSync(fd)
      }
    }
    ctx.setInterval(write, config.intervalMs)
    return write
  },
})

/** The last line of each row (id, version, hash), oldest lines first. */
export function readRows(file: string, onBad: (line: number) => void = () => {}): Persisted[] {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return []
  }
  const rows = new Map<string, Persisted>()
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return
    try {
      const { row } = JSON.parse(line) as { row: Persisted }
      if (typeof row?.id !== 'string' || typeof row.hash !== 'string') throw new Error('no row')
      rows.set(`${row.id}@${row.version ?? ''}#${row.hash}`, row)
    } catch {
      onBad(i + 1)
    }
  })
  return [...rows.values()]
}
