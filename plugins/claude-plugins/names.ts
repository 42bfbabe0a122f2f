/** The names a plugin folder's parts get in yoke. */
import { createHash } from 'node:crypto'

/** `plugin_<plugin>_<server>` as Claude Code names it, made to fit mcp-client's 32 characters (a hash keeps long ones apart). */
export function pluginServerName(plugin: string, server: string): string {
  const full = `plugin_${plugin}_${server}`.replace(/[^A-Za-z0-9_-]/g, '_')
  if (full.length <= 32) return full
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 6)
  return `${full.slice(0, 25)}_${hash}`
}
