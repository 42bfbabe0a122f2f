/** The capabilities instance's config: the rules (governance.ts), the audit log, the stats tool. */
import { z } from 'zod'
import { rulesConfig } from './governance.ts'
import { escapesProject, PROJECT_PATH_RULE } from './paths.ts'

export const capabilitiesConfig = z
  .object({
    ...rulesConfig,
    /** the audit log (JSON lines), relative to the project; false: none */
    audit: z
      .union([
        z
          .string()
          .min(1)
          .refine((path) => !escapesProject(path), PROJECT_PATH_RULE),
        z.literal(false),
      ])
      .default('.yoke/audit.jsonl'),
    /** registers `capability_stats`, a read-only tool (the MCP endpoint serves it) */
    statsTool: z.boolean().default(false),
    /** how long the tools stay quiet before their changes are written to the audit log */
    auditQuietMs: z.number().int().nonnegative().default(100),
  })
  .strict()

export type CapabilitiesConfig = z.output<typeof capabilitiesConfig>
