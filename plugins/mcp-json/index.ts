/**
 * mcp-json: the servers of a `.mcp.json` (Claude Code's format, bare or under `mcpServers`; also
 * claude_desktop_config.json or a Codex config.toml), each run as a child mcp-client instance
 * (composed by name). The file is watched: an edit restarts only the servers whose entry changed,
 * and a broken file keeps the running servers and reports where it is broken.
 * A file inside the project is the project's: its stdio servers run its commands, so they wait
 * until the project is trusted (`yoke trust`), even for an instance of the user's own layers (one
 * from the project's config waits whole); its URL servers run. The running instance is an
 * McpJsonServers (servers.ts).
 */
import { definePlugin } from 'yoke'
import { McpJsonServers, mcpJsonConfig } from './servers.ts'

export default definePlugin({
  name: 'mcp-json',
  inject: ['project'],
  uses: ['mcp-client'],
  config: mcpJsonConfig,
  // it starts the stdio servers the project's .mcp.json lists
  runsProjectCode: true,
  async apply(ctx, cfg) {
    const servers = new McpJsonServers(ctx, cfg)
    await servers.start()
  },
})
