/** The store plugin's config: which engine, and for Redis where and how long to wait. */
import { z } from 'zod'

const redisUrl = z
  .string()
  .url()
  .refine((u) => /^rediss?:$/.test(new URL(u).protocol), 'a redis:// or rediss:// URL')

export const storeConfig = z
  .object({
    /** memory: this process only (the embedded default); redis: shared by every replica */
    engine: z.enum(['memory', 'redis']).default('memory'),
    /** the Redis server (`rediss://` for TLS); a password in it is never printed */
    url: redisUrl.default('redis://127.0.0.1:6379'),
    /** the variable that holds the Redis password (rather than writing it into the url) */
    passwordEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional(),
    /** before every key and channel: one per deployment, so deployments on one Redis stay apart */
    keyPrefix: z
      .string()
      .regex(/^[A-Za-z0-9:_.{}-]{1,64}$/, 'letters, digits and : _ . { } - (at most 64)')
      .default('yoke:'),
    /** how long a connection may take (and the first operations wait for it) */
    connectTimeoutMs: z.number().int().min(10).max(60_000).default(2_000),
    /** how long one operation may wait for Redis's answer */
    commandTimeoutMs: z.number().int().min(10).max(60_000).default(1_000),
  })
  .strict()

export type StoreConfig = z.output<typeof storeConfig>
