/**
 * The public face of claude-plugins: the `claudePlugins` service (the plugin folders in use,
 * their slash commands and subagent definitions, and `add` for an installer), read by the chat
 * (`/name`), the MCP endpoint (commands as prompts) and the spawn tool (agents).
 */
import type { SyncHook } from 'yoke'

/** Where a plugin folder's manifest came from: Claude Code, Codex, Agent Plugins, or none (the folder's name). */
export type ManifestKind = 'claude' | 'codex' | 'agent-plugins' | 'none'

export interface PluginFolder {
  /** the namespace of its skills, commands and agents (`name:thing`) */
  readonly name: string
  readonly dir: string
  readonly manifest: ManifestKind
  readonly version?: string
  readonly description?: string
  /** who added it: `config`, or an installer's label */
  readonly source: string
  /** what it brought, by kind */
  readonly parts: {
    skills: string[]
    commands: string[]
    agents: string[]
    hooks: string[]
    mcpServers: string[]
  }
  /** what was read but is not used here (unsupported fields and parts), one line each */
  readonly notes: string[]
  /** what could not be read, with file:line where there is one */
  readonly problems: string[]
}

/** A slash command (`commands/*.md`): a prompt with `$ARGUMENTS` and `$1`…`$9`. */
export interface PluginCommand {
  /** `plugin:command`, after the file's name (a subfolder only groups them) */
  readonly name: string
  readonly plugin: string
  readonly file: string
  readonly description: string
  readonly argumentHint?: string
  /** the tools it names as pre-approved (read and shown; yoke's policy still decides) */
  readonly allowedTools: string[]
  readonly body: string
}

/** A subagent definition (`agents/*.md`): what the spawn tool offers. */
export interface SubagentDefinition {
  /** `plugin:agent` */
  readonly name: string
  readonly plugin: string
  readonly file: string
  readonly description: string
  /** tool-name globs it may use; empty: every tool its parent has (but spawn) */
  readonly tools: string[]
  /** the model it asks for (`sonnet`, `opus`, `haiku`, `inherit`, or a lane key) */
  readonly model?: string
  /** its instructions: the file's body */
  readonly instructions: string
}

export interface ClaudePluginsApi {
  readonly hooks: { change: SyncHook<[]> }
  list(): PluginFolder[]
  commands(): PluginCommand[]
  /** by full name, or by bare name when one plugin alone has it */
  command(name: string): PluginCommand | undefined
  agents(): SubagentDefinition[]
  agent(name: string): SubagentDefinition | undefined
  /** one more plugin folder (an installer's); the disposer unloads it */
  add(dir: string, options?: { source?: string }): () => void
}

/** What `claude-plugins/list` answers (`yoke claude-plugins list`). */
export interface ClaudePluginsListing {
  /** the configured folders, expanded */
  roots: string[]
  plugins: PluginFolder[]
}

declare module 'yoke' {
  interface Services {
    claudePlugins: ClaudePluginsApi
  }
  interface Controls {
    /** `yoke claude-plugins list`: the plugin folders in use, what each brought, what was not used */
    'claude-plugins/list': { request: Record<string, never>; answer: ClaudePluginsListing }
  }
}

export { expandCommand } from './prompts.ts'
