/**
 * The console's config. It serves under `yoke dev` only (`enabled: auto`), or wherever a long-running
 * composition asks for it (`enabled: true`: an embedder), never in a one-shot command; `false`
 * turns it off (nothing listens, nothing is tapped). It binds loopback: another host needs
 * `allowRemote: true` as well, since anyone who can reach the port and learn the token can run the
 * project's tools.
 */
import { z } from 'zod'

/** Hosts that only this machine reaches. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host)
}

export const consoleConfig = z
  .object({
    /** `auto`: under `yoke dev` only; `true`: in any long-running composition; `false`: off */
    enabled: z.union([z.boolean(), z.literal('auto')]).default('auto'),
    /** the address to bind: loopback unless allowRemote */
    host: z.string().min(1).default('127.0.0.1'),
    /** the port (0: any free one, kept across reloads) */
    port: z.number().int().min(0).max(65535).default(0),
    /** binds a non-loopback host: anyone who reaches it and has the token runs your tools */
    allowRemote: z.boolean().default(false),
    /** where the built page is (default: the package's dist/console) */
    uiDir: z.string().min(1).optional(),
    /** events queued for one slow browser before it is dropped */
    maxQueued: z.number().int().positive().default(512),
    /** how long an approval only a browser can answer waits for a browser after the last one left */
    unattendedMs: z.number().int().positive().default(30_000),
    /** the agent runs listed (the newest) */
    maxRuns: z.number().int().positive().max(1000).default(50),
    /** how much of one transcript the Runs view reads (a longer one is shown in part) */
    maxRunBytes: z
      .number()
      .int()
      .positive()
      .default(8 * 1024 * 1024),
    /** replays and forks running at once */
    maxRunJobs: z.number().int().positive().max(16).default(2),
    /** the heartbeat comment's interval on the event stream */
    heartbeatMs: z.number().int().positive().default(15_000),
  })
  .strict()
  .superRefine((c, issues) => {
    if (!isLoopback(c.host) && !c.allowRemote)
      issues.addIssue({
        code: 'custom',
        path: ['host'],
        message: `"${c.host}" is not a loopback address: the console runs your tools for whoever holds its token, so it binds 127.0.0.1; to serve it on "${c.host}" anyway, set allowRemote: true beside host (and keep the network trusted), or remove host`,
      })
  })

export type ConsoleConfig = z.output<typeof consoleConfig>
