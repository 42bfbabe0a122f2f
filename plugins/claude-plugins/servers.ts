/**
 * A plugin folder's MCP servers: its .mcp.json files (bare or under `mcpServers`), the servers
 * its manifest gives inline, and Codex's `mcp` table, each read by mcp-client's importer and run
 * as an mcp-client child (composed by name) named `plugin_<plugin>_<server>`.
 */
import { relative, join } from 'node:path'
import { stringify as stringifyToml } from 'smol-toml'
import { interpolate, messageOf, readConfigText, type Context } from 'yoke'
import { importText } from '../mcp-client/api.ts'
import type { FolderSettings } from './folder.ts'
import { pluginServerName } from './names.ts'

/** One text of server definitions: where it comes from, and the file its importer reads it as. */
interface ServerSource {
  label: string
  text: string
  file: string
}

/**
 * Starts each server of the plugin as an mcp-client child; the names of those started. What
 * cannot be read or started is added to `problems` (the plugin's), and logged.
 */
export function startServers(
  ctx: Context,
  settings: Pick<FolderSettings, 'dir' | 'manifest'>,
  vars: Record<string, string>,
  problems: string[],
): string[] {
  const { manifest } = settings
  const started: string[] = []
  /** server name → the plugin's own name of the server that has it (two may normalise alike) */
  const taken = new Map<string, string>()
  const env = { ...process.env, ...vars }
  for (const { label, text, file } of serverSources(settings, problems)) {
    let servers
    try {
      // the user chose to use this plugin: its URLs are reached as written, like their own
      // .mcp.json; its servers keep their names, which Claude Code's naming takes whole
      const result = importText(text, file, { trustUrls: true, asWritten: true })
      for (const warning of result.warnings)
        ctx.logger.warn(`plugin ${manifest.name}: ${label}: ${warning}`)
      servers = result.servers.filter((s) => s.enabled)
    } catch (err) {
      problems.push(`${label}: ${messageOf(err)}`)
      ctx.logger.error(`plugin ${manifest.name}: ${label} was not read`, err)
      continue
    }
    for (const server of servers) {
      const serverName = pluginServerName(manifest.name, server.serverName)
      const other = taken.get(serverName)
      if (other !== undefined) {
        problems.push(sameName(label, server.serverName, other, serverName))
        continue
      }
      taken.set(serverName, server.serverName)
      const { value, errors } = interpolate(server.config, env, new Map())
      for (const e of errors)
        ctx.logger.warn(
          `plugin ${manifest.name}: ${label}: server "${server.serverName}": ${e.message}`,
        )
      const config: Record<string, unknown> = { ...(value as Record<string, unknown>), serverName }
      // its processes learn where the plugin is, as Claude Code tells them
      if (typeof config.command === 'string')
        config.env = { ...vars, ...(config.env as Record<string, string> | undefined) }
      try {
        ctx.plugin('mcp-client', config, { key: `mcp-${serverName}` })
        started.push(serverName)
      } catch (err) {
        problems.push(`${label}: server "${server.serverName}" was not started: ${messageOf(err)}`)
      }
    }
  }
  return started
}

/** Two servers of one plugin whose names Claude Code writes alike: the second is refused. */
function sameName(label: string, server: string, first: string, name: string): string {
  return `${label}: server "${server}" was not started: its name is "${name}" as Claude Code writes it, which server "${first}" of this plugin has already (rename one of them)`
}

/** The texts that define the plugin's servers; one that cannot be read is a problem of the plugin. */
function serverSources(
  { dir, manifest }: Pick<FolderSettings, 'dir' | 'manifest'>,
  problems: string[],
): ServerSource[] {
  const sources: ServerSource[] = []
  for (const file of manifest.mcpFiles) {
    try {
      // the config reader: a regular file under 1 MiB (a FIFO or /dev/zero is refused, not read)
      sources.push({ label: relative(dir, file), text: readConfigText(file), file })
    } catch (err) {
      problems.push(`${file}: ${messageOf(err)}`)
    }
  }
  const manifestFile = manifest.file ?? join(dir, 'plugin.json')
  if (manifest.inlineMcp)
    sources.push({
      label: 'plugin.json mcpServers',
      text: JSON.stringify({ mcpServers: manifest.inlineMcp }),
      file: manifestFile,
    })
  if (manifest.codexMcp)
    try {
      // read by mcp-client's Codex importer, as a config.toml's tables (a name that is not a
      // .toml or .json file makes it read the text by its content)
      sources.push({
        label: 'plugin.json mcp (Codex mcp_servers)',
        text: stringifyToml({ mcp_servers: manifest.codexMcp }),
        file: `${manifestFile}#mcp`,
      })
    } catch (err) {
      problems.push(`plugin.json mcp: not Codex's mcp_servers shape: ${messageOf(err)}`)
    }
  return sources
}
