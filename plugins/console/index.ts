/**
 * console: a local web console for the running composition (`yoke dev` serves it; `yoke console`
 * opens it). It binds 127.0.0.1 behind a per-launch token (guard.ts), serves the page built into
 * dist/console (static.ts), a snapshot of every view and a live event stream (views.ts,
 * events.ts), runs a tool through the full pipeline for the page, and answers approvals from the
 * browser, racing the terminal (approvals.ts). It starts under `yoke dev` only (or with
 * `enabled: true` in a long-running embedding), never in a one-shot command; `enabled: false` is
 * nothing at all. See README.md.
 */
import { definePlugin } from 'yoke'
import { consoleConfig } from './config.ts'

export type * from './api.ts'
export { consoleConfig, type ConsoleConfig } from './config.ts'

export default definePlugin({
  name: 'console',
  // its port: a reload ends the old version before the new one listens on the same port
  exclusive: true,
  inject: ['project'],
  config: consoleConfig,
  // who may reach the console, and so run tools as the user: a cloned project's remote host waits
  // for `yoke trust`, and so does a page folder of its own
  sendsSecrets: () => ['host', 'allowRemote', 'uiDir'],
  async apply(ctx, config) {
    const off = offReason(ctx, config.enabled)
    if (off) {
      // off costs nothing: no listener, no taps; `yoke console` is told why
      ctx.control('console/url', () => ({ listening: false, why: off }))
      return
    }
    const { WebConsole } = await loadServer()
    const web = new WebConsole(ctx, config)
    ctx.effect('console: the server', () => web.close())
    await web.start()
  },
})

/**
 * The server's modules load only where it runs: a one-shot command imports none of them. (At
 * module level: tsc 5.9 leaves a relative `.ts` import inside this object literal's method as it
 * is, which the build cannot load.)
 */
function loadServer() {
  return import('./console.ts')
}

/** Why the console does not run here; undefined when it does. */
function offReason(
  ctx: { runMode: string; command?: string | undefined },
  enabled: boolean | 'auto',
): string | undefined {
  if (enabled === false) return 'the console is turned off (enabled: false)'
  if (ctx.runMode === 'once') return 'a one-shot command serves no console'
  if (enabled === 'auto' && ctx.command !== 'dev')
    return 'the console runs under `yoke dev` (elsewhere, set enabled: true in its config)'
  return undefined
}
