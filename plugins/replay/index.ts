/**
 * replay: a model provider that plays a cassette back, offline and deterministically. Record one
 * with `yoke run --record FILE "TASK"` against a live provider; replay it with this plugin as the
 * `model`. A request that differs from the recording fails with REPLAY_MISMATCH naming the turn
 * and the first difference, so a changed prompt, tool or result shows at once. Every instance
 * also offers the `replay` kind to the `models` registry; with `cassette: false` that is all it does.
 */
import { resolve } from 'node:path'
import { z } from 'zod'
import { definePlugin, YokeError } from 'yoke'
import { offerProvider, type ModelProvider } from '../models/api.ts'
import { createReplayModel } from './cassette.ts'

export default definePlugin({
  name: 'replay',
  inject: ['project'],
  provides: ['model'],
  config: z
    .object({
      /** the cassette (relative: to the project); false: provide no `model`, only offer the kind */
      cassette: z.union([z.string().min(1), z.literal(false)]),
      /** which lane of the cassette to play: `main`, or a sub-provider lane's key */
      lane: z.string().min(1).default('main'),
    })
    .strict(),
  apply(ctx, cfg) {
    offerProvider(ctx, replayProvider)
    if (cfg.cassette === false) return
    // read (and checked) at apply: a broken cassette fails this instance with its file:line
    ctx.provide(
      'model',
      createReplayModel({ cassette: resolve(ctx.project.dir, cfg.cassette), lane: cfg.lane }),
    )
  },
})

/** The `replay` kind in the `models` registry: a lane that plays its own cassette (resolved by the asker). */
const replayProvider: ModelProvider = {
  kind: 'replay',
  create(spec, who) {
    if (!spec.cassette)
      throw new YokeError('MODEL_FAILED', {
        provider: 'replay',
        model: spec.model,
        reason: `${who} has no cassette`,
      })
    return createReplayModel({ cassette: spec.cassette, lane: spec.lane })
  },
}
