/**
 * audit-log: an example framework plugin in TypeScript.
 * It provides the `auditLog` service and taps the kernel's `state` hook, so the service holds the
 * recent lifecycle of every instance (what loaded, what failed, what a reload restarted).
 * Load it by path from a preset:  use: ./examples/plugins/audit-log/index.ts
 */
import { z } from 'zod'
import { definePlugin, type FiberInfo } from 'yoke'

export interface AuditEntry {
  time: string
  instance: string
  plugin: string
  state: string
  error?: string
}

export interface AuditLog {
  entries(): readonly AuditEntry[]
}

declare module 'yoke' {
  interface Services {
    auditLog: AuditLog
  }
}

export default definePlugin({
  name: 'audit-log',
  provides: ['auditLog'],
  config: z.object({
    /** how many entries to keep */
    max: z.number().int().positive().default(100),
  }),
  apply(ctx, config) {
    const entries: AuditEntry[] = []
    ctx.tap(ctx.hooks.state, 'audit-log', (fiber: FiberInfo) => {
      entries.push({
        time: new Date().toISOString(),
        instance: fiber.key,
        plugin: fiber.plugin.name,
        state: fiber.state,
        error: fiber.error?.message,
      })
      if (entries.length > config.max) entries.splice(0, entries.length - config.max)
    })
    ctx.provide('auditLog', { entries: () => entries })
    ctx.logger.info(`keeping the last ${config.max} lifecycle events`)
  },
})
