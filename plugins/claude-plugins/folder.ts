/**
 * One plugin folder as a child instance: its skills (a namespaced root of the `skills` service),
 * commands and agents (read into the registry, re-read when their files change), hooks (a
 * claude-hooks child per hooks.json, Claude Code's protocol) and MCP servers (an mcp-client child
 * per server, named `plugin_<plugin>_<server>` so its tools are `mcp__plugin_<plugin>_<server>__…`
 * as in Claude Code). Disposing the child undoes all of it, so an edited plugin restarts alone.
 * One child is one Folder object: what it brought, and the problems of reading it.
 */
import { mkdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { definePlugin, type Context, type InjectedContext } from 'yoke'
import type { PluginCommand, PluginFolder, SubagentDefinition } from './api.ts'
import { toAgent } from './agents.ts'
import type { PluginManifest } from './manifest.ts'
import { readMarkdownFiles } from './markdown.ts'
import { toCommand } from './prompts.ts'
import { startServers } from './servers.ts'

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
  // its hooks and its MCP servers run as children, composed by name
  uses: ['claude-hooks', 'mcp-client'],
  apply(ctx, config) {
    const folder = new Folder(ctx, config as unknown as FolderSettings)
    folder.start()
    ctx.effect(`plugin ${folder.name}`, () => folder.close())
  },
})

class Folder {
  readonly name: string
  readonly #dir: string
  readonly #manifest: PluginManifest
  /** `${CLAUDE_PLUGIN_DATA}`: made before its hooks and servers start */
  readonly #dataDir: string
  /** the problems of loading it (its manifest's, its servers'); its files' are `#fileProblems` */
  readonly #problems: string[]
  /** the problems of its command and agent files, read again on edits */
  #fileProblems: string[] = []
  /** what it brought, by kind (the lists are the plugin's own: filled in place) */
  readonly #parts: PluginFolder['parts'] = {
    skills: [],
    commands: [],
    agents: [],
    hooks: [],
    mcpServers: [],
  }
  readonly #state: FolderState

  constructor(
    private readonly ctx: Context,
    private readonly settings: FolderSettings,
  ) {
    const { dir, manifest } = settings
    this.name = manifest.name
    this.#dir = dir
    this.#manifest = manifest
    this.#dataDir = join(settings.dataRoot, manifest.name)
    this.#problems = [...manifest.problems]
    this.#state = {
      info: {
        name: manifest.name,
        dir,
        manifest: manifest.kind,
        ...(manifest.version && { version: manifest.version }),
        ...(manifest.description && { description: manifest.description }),
        source: settings.source,
        parts: this.#parts,
        notes: manifest.notes,
        problems: this.#problems,
      },
      commands: [],
      agents: [],
    }
  }

  /** Its parts, each as the plugin brings it, then what it brought is published. */
  start(): void {
    const m = this.#manifest
    this.#startSkills()
    this.#readPrompts()
    const promptRoots = [...m.commands, ...m.agents]
    if (this.settings.watch && promptRoots.length)
      this.ctx.watch(promptRoots, () => {
        this.#readPrompts()
        this.#publish()
      })
    // hooks and servers may keep state in ${CLAUDE_PLUGIN_DATA}: it exists before they start
    const runs = m.hookFiles.length || m.inlineHooks || m.mcpFiles.length || m.inlineMcp
    if (runs || m.codexMcp) mkdirSync(this.#dataDir, { recursive: true })
    this.#startHooks()
    const started = startServers(this.ctx, this.settings, this.#vars(), this.#problems)
    this.#parts.mcpServers.push(...started)
    this.#publish()
  }

  /** Going: what it brought leaves the parent's registry. */
  close(): void {
    this.settings.publish(undefined)
  }

  /** What its hooks, servers and text see: where the plugin and its data are. */
  #vars(): Record<string, string> {
    return {
      CLAUDE_PLUGIN_ROOT: this.#dir,
      CLAUDE_PLUGIN_DATA: this.#dataDir,
      PLUGIN_ROOT: this.#dir,
      PLUGIN_DATA: this.#dataDir,
      CLAUDE_PROJECT_DIR: this.settings.projectDir,
    }
  }

  #rel(path: string): string {
    return relative(this.#dir, path) || '.'
  }

  #publish(): void {
    const problems = [...this.#problems, ...this.#fileProblems]
    this.settings.publish({ ...this.#state, info: { ...this.#state.info, problems } })
  }

  /**
   * Skills: one namespaced root per skills folder, from a child that waits for the skills service
   * (it may start after this plugin, or restart alone); the skills plugin watches them.
   */
  #startSkills(): void {
    const { skills } = this.#manifest
    if (!skills.length) return
    const { name } = this
    const rel = (p: string) => this.#rel(p)
    this.ctx.plugin(
      {
        name: 'claude-plugin-skills',
        inject: ['skills'],
        apply(child: InjectedContext<['skills']>) {
          for (const root of skills)
            child.effect(
              `skills ${rel(root)}`,
              child.skills.addRoot(root, { namespace: name, source: `plugin ${name}` }),
            )
        },
      },
      {},
      { key: 'skills' },
    )
    for (const root of skills) this.#parts.skills.push(rel(root))
  }

  /** Commands and agents: read now, and again when a file under them changes. */
  #readPrompts(): void {
    const found: string[] = []
    // a manifest may list files of the default commands/ and agents/ folders too: one file is
    // read once (a file listed twice is not two commands)
    const read = new Set<string>()
    const filesOf = (roots: string[]) =>
      roots
        .flatMap((root) => readMarkdownFiles(root, found))
        .filter((md) => !read.has(md.file) && read.add(md.file))
    const commands: PluginCommand[] = []
    for (const md of filesOf(this.#manifest.commands)) {
      const command = toCommand(this.name, md)
      const first = commands.find((c) => c.name === command.name)
      if (first) found.push(`${md.file}: ${command.name} is also ${first.file}; the first is used`)
      else commands.push(command)
    }
    this.#state.commands = commands
    this.#state.agents = filesOf(this.#manifest.agents).flatMap(
      (md) => toAgent(this.name, md, found) ?? [],
    )
    this.#parts.commands = commands.map((c) => c.name)
    this.#parts.agents = this.#state.agents.map((a) => a.name)
    this.#fileProblems = found
    for (const problem of found) this.ctx.logger.warn(`plugin ${this.name}: ${problem}`)
  }

  /** Hooks: Claude Code's protocol, a claude-hooks child per hooks file and one for inline hooks. */
  #startHooks(): void {
    const { hookFiles, inlineHooks } = this.#manifest
    const base = { pluginRoot: this.#dir, source: `plugin ${this.name}` }
    hookFiles.forEach((file, i) => {
      this.ctx.plugin('claude-hooks', { files: [file], ...base }, { key: `hooks-${i + 1}` })
      this.#parts.hooks.push(this.#rel(file))
    })
    if (inlineHooks) {
      const hooks = inlineHooks.hooks ?? inlineHooks
      this.ctx.plugin('claude-hooks', { hooks, ...base }, { key: 'hooks-inline' })
      this.#parts.hooks.push('plugin.json')
    }
  }
}
