/**
 * claude-plugins: Claude Code plugin folders (and Codex's and Agent Plugins' where they overlap)
 * as yoke parts. `dirs` names plugin folders, folders of them, or a marketplace checkout
 * (`.claude-plugin/marketplace.json` with `./` sources); an installer adds more through the
 * service. Each plugin runs as a child instance (folder.ts): an edit to one restarts that one.
 * One instance is one ClaudePlugins object (instance.ts); which folders run, decide.ts decides.
 */
import { z } from 'zod'
import { definePlugin } from 'yoke'
import { ClaudePlugins } from './instance.ts'

export type * from './api.ts'

const config = z
  .object({
    /** plugin folders, folders of plugin folders, or marketplace checkouts; relative to the project */
    dirs: z.array(z.string().min(1)).default([]),
    /**
     * also the plugins this machine's Claude Code has installed and enabled (its
     * installed_plugins.json and the enabledPlugins of its settings)
     */
    claudeCode: z.boolean().default(false),
    /** where Claude Code keeps its files */
    claudeHome: z.string().min(1).default('~/.claude'),
    /** plugin names not to load */
    except: z.array(z.string().min(1)).default([]),
    /** where each plugin's `${CLAUDE_PLUGIN_DATA}` folder is made (relative to the project) */
    dataDir: z.string().min(1).default('.yoke/plugin-data'),
    watch: z.boolean().default(true),
  })
  .strict()

export default definePlugin({
  name: 'claude-plugins',
  inject: ['project'],
  provides: ['claudePlugins'],
  // each plugin folder runs its hooks and MCP servers as children of its own (folder.ts)
  uses: ['claude-hooks', 'mcp-client'],
  config,
  runsProjectCode: (cfg) => cfg.dirs.length > 0, // their hooks and stdio servers wait for `yoke trust`
  apply(ctx, cfg) {
    const plugins = new ClaudePlugins(ctx, cfg)
    const service = plugins.service()
    ctx.provide('claudePlugins', service)
    ctx.control('claude-plugins/list', () => ({ roots: plugins.roots, plugins: service.list() }))
    plugins.start()
  },
})
