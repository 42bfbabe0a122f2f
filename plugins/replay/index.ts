/**
 * replay: a model provider that plays a cassette back, offline and deterministically. Record one
 * with `yoke run --record FILE "TASK"` against a live provider; replay it with this plugin as the
 * `model`. A request that differs from the recording fails with REPLAY_MISMATCH naming the turn
 * and the first difference, so a changed prompt, tool or result shows at once.
 */
import { resolve } from 'node:path'
import { z } from 'zod'
import { definePlugin } from 'yoke'
import { createReplayModel } from '../shared/cassette.ts'

export default definePlugin({
  name: 'replay',
  inject: ['project'],
  provides: ['model'],
  config: z
    .object({
      /** the cassette (relative: to the project) */
      cassette: z.string().min(1),
      /** which lane of the cassette to play: `main`, or a sub-provider lane's key */
      lane: z.string().min(1).default('main'),
    })
    .strict(),
  apply(ctx, cfg) {
    // read (and checked) at apply: a broken cassette fails this instance with its file:line
    ctx.provide(
      'model',
      createReplayModel({ cassette: resolve(ctx.project.dir, cfg.cassette), lane: cfg.lane }),
    )
  },
})
