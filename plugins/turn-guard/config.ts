import { z } from 'zod'

export const turnGuardConfig = z
  .object({
    /** a reload that names no options holds what would alter the cached prompt until the turn ends */
    holdOnCacheImpact: z.boolean().default(false),
    /** a reload that names no options is refused while a turn is in flight */
    refuseIfBusy: z.boolean().default(false),
    /** the services whose use by a changed instance alters the model's prompt */
    cacheServices: z.array(z.string().min(1)).default(['runtime', 'prompt', 'skills']),
  })
  .strict()

export type TurnGuardConfig = z.infer<typeof turnGuardConfig>
