/**
 * installs: what `yoke add` installed, verified and handed to the service for its kind. At load,
 * and whenever `yoke.lock` or an installed tree changes, every entry of the project's lock (and
 * of `$YOKE_HOME/yoke.lock`) is hashed again: a tree that no longer matches its sha256 is refused
 * with an error that names it, the lock and the fix, and the others still load. The good ones go
 * to `skills.addRoot` (skills), `execTools.addRoot` (exec packages) and `claudePlugins.add`
 * (Claude Code plugins). Those services are optional: a kind whose service is absent is skipped
 * with a warning, and registered as soon as an instance provides it (and again if it restarts).
 * The project's exec packages and Claude Code plugins run its code: they wait until the project is
 * trusted (`yoke trust`, whose hash covers yoke.lock), as the project's own config does; the
 * user's installs (`--user`) are the user's own, and skills run nothing. One Installs object per
 * instance holds it all (installs.ts).
 */
import { definePlugin } from 'yoke'
import { Installs } from './installs.ts'
import { projectScope, userScope } from './lock.ts'
import { config } from './api.ts'
import './errors.ts'

export type * from './api.ts'

export default definePlugin({
  name: 'installs',
  inject: ['project'],
  provides: ['installs'],
  config,
  async apply(ctx, cfg) {
    const scopes = [
      projectScope(ctx.project.dir),
      ...(cfg.user ? [userScope(ctx.project.home)] : []),
    ]
    const installs = new Installs(ctx, scopes)
    ctx.effect('installs', () => installs.close())
    await installs.start(cfg.watch)
  },
})
