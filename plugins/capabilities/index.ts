/**
 * capabilities: every tool, skill, package, MCP server, install and dynamic plugin as an id, a
 * version and a content hash; metrics per id + version (offered by the agent loop or the MCP
 * gateway's tools/list, found by search, called, ok and each error code, p50 / p95); the project's
 * rules over versions (pins, withdrawal, rollout to some scopes first), applied through the
 * runtime's visible and preExecute hooks; and an append-only audit log of every change of what the
 * model can use. The metrics and the audit log's state are kept (`ctx.keep`), so a reload of any
 * instance (this one too) keeps them. The instance is a `Capabilities` object (capabilities.ts).
 */
import { definePlugin } from 'yoke'
import { Capabilities } from './capabilities.ts'
import { capabilitiesConfig } from './config.ts'
import './errors.ts'
import { newKept } from './kept.ts'

export type * from './api.ts'

export default definePlugin({
  name: 'capabilities',
  inject: ['runtime', 'project'],
  provides: ['capabilities'],
  config: capabilitiesConfig,
  apply(ctx, config) {
    const capabilities = new Capabilities(ctx, config, ctx.keep('kept', newKept))
    ctx.effect('capabilities', () => capabilities.close())
    capabilities.start()
  },
})
