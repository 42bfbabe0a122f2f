/**
 * metrics-jsonl: persists the capabilities plugin's metrics rows to a JSON-lines file, and reads
 * them back when it starts, so `yoke stats` counts across runs and across processes. Each process
 * appends only what it counted since its last write (a delta line), and reading sums the lines, so
 * a `yoke dev` and a `yoke run` writing at once add up instead of overwriting each other. When the
 * file grows past `compactBytes` it is rewritten at start as one total line per row (file.ts). The
 * instance is a `MetricsSink` (sink.ts).
 */
import { z } from 'zod'
import { definePlugin } from 'yoke'
import { escapesProject, PROJECT_PATH_RULE, resolveInside } from '../capabilities/api.ts'
import { MAX_BYTES } from './file.ts'
import { MetricsSink } from './sink.ts'

export { readRows } from './file.ts'

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
    const sink = new MetricsSink(file, ctx.capabilities, config, (p) => ctx.logger.warn(p))
    ctx.effect('metrics-jsonl: the last write', () => sink.close())
    sink.start()
    ctx.setInterval(() => sink.write(), config.intervalMs)
  },
})
