/**
 * The names a plugin folder's parts get in yoke: those Claude Code gives them, so matchers, hook
 * `matcher`s and permission rules written for Claude Code match here too.
 */

/**
 * Claude Code's `normalizeNameForMCP`: each character outside A-Z a-z 0-9 _ - becomes `_`
 * (nothing is cut, nothing collapsed; only its `claude.ai ` connectors are treated otherwise).
 */
export function claudeCodeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_')
}

/**
 * `plugin_<plugin>_<server>`: the server Claude Code calls `plugin:<plugin>:<server>`
 * (addPluginScopeToServers), normalised as its tool names are, whole however long, so the
 * server's tools are `mcp__plugin_<plugin>_<server>__<tool>` as there.
 * @example pluginServerName('chrome-devtools-mcp', 'chrome-devtools') // 'plugin_chrome-devtools-mcp_chrome-devtools'
 */
export function pluginServerName(plugin: string, server: string): string {
  return claudeCodeName(`plugin:${plugin}:${server}`)
}
