/**
 * One plugin folder as a child instance: its skills (a namespaced root of the `skills` service),
 * commands and agents (read into the registry, re-read when their files change), hooks (a
 * claude-hooks child per hooks.json, Claude Code's protocol) and MCP servers (an mcp-client child
 * per server, named `plugin_<plugin>_<server>` so its tools are `mcp__plugin_<plugin>_<server>__…`
 * as in Claude Code). Disposing the child undoes all of it, so an edited plugin restarts alone.
 */
import { createHash } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { stringify as stringifyToml } from 'smol-toml'
import { definePlugin, interpolate, readConfigText, type Context, type InjectedContext } from 'yoke'
import { claudeHooks } from '../claude-hooks/api.ts'
import { importText, mcpClient } from '../mcp-client/api.ts'
import type { PluginCommand, PluginFolder, SubagentDefinition } from './api.ts'
import { toAgent } from './agents.ts'
import type { PluginManifest } from './manifest.ts'
import { readMarkdownFiles } from './markdown.ts'
import { toCommand } from './prompts.ts'

/** What a folder puts into the parent's registry; the parent reads it for the service. */
export interface FolderState {
  info: PluginFolder
  commands: PluginCommand[]
  agents: SubagentDefinition[]
}

export interface FolderSettings {
  dir: string
  source: string
  projectDir: string
  /** where `${CLAUDE_PLUGIN_DATA}` points: `<dataRoot>/<plugin>` */
  dataRoot: string
  watch: boolean
  /** the parent's registry: the child sets its state and says when it changed */
  publish(state: FolderState | undefined): void
  /** the manifest as the parent read it (to name the child) */
  manifest: PluginManifest
}

export const pluginFolder = definePlugin({
  name: 'claude-plugin-folder',
  apply(ctx, config) {
    const settings = config as unknown as FolderSettings
    const { dir, manifest } = settings
    const { name } = manifest
    const dataDir = join(settings.dataRoot, name)
    const vars = {
      CLAUDE_PLUGIN_ROOT: dir,
      CLAUDE_PLUGIN_DATA: dataDir,
      PLUGIN_ROOT: dir,
      PLUGIN_DATA: dataDir,
      CLAUDE_PROJECT_DIR: settings.projectDir,
    }
    // the problems of loading it, and those of its command and agent files (read again on edits)
    const problems = [...manifest.problems]
    let fileProblems: string[] = []
    const parts: PluginFolder['parts'] = {
      skills: [],
      commands: [],
      agents: [],
      hooks: [],
      mcpServers: [],
    }
    const state: FolderState = {
      info: {
        name,
        dir,
        manifest: manifest.kind,
        ...(manifest.version && { version: manifest.version }),
        ...(manifest.description && { description: manifest.description }),
        source: settings.source,
        parts,
        notes: manifest.notes,
        problems,
      },
      commands: [],
      agents: [],
    }
    const rel = (p: string) => relative(dir, p) || '.'
    const publish = () =>
      settings.publish({
        ...state,
        info: { ...state.info, problems: [...problems, ...fileProblems] },
      })

    // skills: one namespaced root per skills folder, from a child that waits for the skills
    // service (it may start after this plugin, or restart alone); the skills plugin watches them
    if (manifest.skills.length) {
      ctx.plugin(
        {
          name: 'claude-plugin-skills',
          inject: ['skills'],
          apply(child: InjectedContext<['skills']>) {
            for (const root of manifest.skills)
              child.effect(
                `skills ${rel(root)}`,
                child.skills.addRoot(root, { namespace: name, source: `plugin ${name}` }),
              )
          },
        },
        {},
        { key: 'skills' },
      )
      for (const root of manifest.skills) parts.skills.push(rel(root)) // no spread: the list is the plugin's
    }

    // commands and agents: read now, and again when a file under them changes
    const readPrompts = () => {
      const found: string[] = []
      state.commands = []
      for (const md of manifest.commands.flatMap((root) => readMarkdownFiles(root, found))) {
        const command = toCommand(name, md)
        const first = state.commands.find((c) => c.name === command.name)
        if (first)
          found.push(`${md.file}: ${command.name} is also ${first.file}; the first is used`)
        else state.commands.push(command)
      }
      state.agents = manifest.agents.flatMap((root) =>
        readMarkdownFiles(root, found).flatMap((md) => toAgent(name, md, found) ?? []),
      )
      parts.commands = state.commands.map((c) => c.name)
      parts.agents = state.agents.map((a) => a.name)
      fileProblems = found
      for (const problem of found) ctx.logger.warn(`plugin ${name}: ${problem}`)
    }
    readPrompts()
    const promptRoots = [...manifest.commands, ...manifest.agents]
    if (settings.watch && promptRoots.length)
      ctx.watch(promptRoots, () => {
        readPrompts()
        publish()
      })

    // hooks and servers may keep state in ${CLAUDE_PLUGIN_DATA}: it exists before they start
    if (
      manifest.hookFiles.length ||
      manifest.inlineHooks ||
      manifest.mcpFiles.length ||
      manifest.inlineMcp ||
      manifest.codexMcp
    )
      mkdirSync(dataDir, { recursive: true })

    // hooks: Claude Code's protocol, whatever the plugin's other parts are
    manifest.hookFiles.forEach((file, i) => {
      ctx.plugin(
        claudeHooks,
        { files: [file], pluginRoot: dir, source: `plugin ${name}` },
        { key: `hooks-${i + 1}` },
      )
      parts.hooks.push(rel(file))
    })
    if (manifest.inlineHooks) {
      const hooks = manifest.inlineHooks.hooks ?? manifest.inlineHooks
      ctx.plugin(
        claudeHooks,
        { hooks, pluginRoot: dir, source: `plugin ${name}` },
        { key: 'hooks-inline' },
      )
      parts.hooks.push('plugin.json')
    }

    startServers(ctx, settings, vars, state, problems)
    publish()
    ctx.effect(`plugin ${name}`, () => settings.publish(undefined))
  },
})

/** Each MCP server of the plugin's .mcp.json files (bare or under `mcpServers`) and its manifest, as an mcp-client child. */
function startServers(
  ctx: Context,
  settings: FolderSettings,
  vars: Record<string, string>,
  state: FolderState,
  problems: string[],
) {
  const { manifest } = settings
  const sources: Array<{ label: string; text: string; file: string }> = []
  for (const file of manifest.mcpFiles) {
    try {
      // the config reader: a regular file under 1 MiB (a FIFO or /dev/zero is refused, not read)
      sources.push({ label: relative(settings.dir, file), text: readConfigText(file), file })
    } catch (err) {
      problems.push(`${file}: ${(err as Error).message}`)
    }
  }
  if (manifest.inlineMcp)
    sources.push({
      label: 'plugin.json mcpServers',
      text: JSON.stringify({ mcpServers: manifest.inlineMcp }),
      file: manifest.file ?? join(settings.dir, 'plugin.json'),
    })
  if (manifest.codexMcp)
    try {
      // read by mcp-client's Codex importer, as a config.toml's tables (a name that is not a
      // .toml or .json file makes it read the text by its content)
      sources.push({
        label: 'plugin.json mcp (Codex mcp_servers)',
        text: stringifyToml({ mcp_servers: manifest.codexMcp }),
        file: `${manifest.file ?? join(settings.dir, 'plugin.json')}#mcp`,
      })
    } catch (err) {
      problems.push(`plugin.json mcp: not Codex's mcp_servers shape: ${(err as Error).message}`)
    }
  const env = { ...process.env, ...vars }
  for (const { label, text, file } of sources) {
    let servers
    try {
      // the user chose to use this plugin: its URLs are reached as written, like their own .mcp.json
      const result = importText(text, file, { trustUrls: true })
      for (const warning of result.warnings)
        ctx.logger.warn(`plugin ${manifest.name}: ${label}: ${warning}`)
      servers = result.servers.filter((s) => s.enabled)
    } catch (err) {
      problems.push(`${label}: ${(err as Error).message}`)
      ctx.logger.error(`plugin ${manifest.name}: ${label} was not read`, err)
      continue
    }
    for (const server of servers) {
      const serverName = pluginServerName(manifest.name, server.serverName)
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
        ctx.plugin(mcpClient, config, { key: `mcp-${serverName}` })
        state.info.parts.mcpServers.push(serverName)
      } catch (err) {
        problems.push(
          `${label}: server "${server.serverName}" was not started: ${(err as Error).message}`,
        )
      }
    }
  }
}

/** `plugin_<plugin>_<server>` as Claude Code names it, made to fit mcp-client's 32 characters (a hash keeps long ones apart). */
export function pluginServerName(plugin: string, server: string): string {
  const full = `plugin_${plugin}_${server}`.replace(/[^A-Za-z0-9_-]/g, '_')
  if (full.length <= 32) return full
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 6)
  return `${full.slice(0, 25)}_${hash}`
}
