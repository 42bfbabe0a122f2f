/**
 * The public face of mcp-client: its config schema and type, the public name of a server's tool,
 * and the importer of other hosts' MCP config files (`yoke mcp import`, mcp-json). Not the plugin:
 * a plugin that runs servers composes it by name (`uses: ['mcp-client']`, then
 * `ctx.plugin('mcp-client', config, { key })`).
 */
export { mcpClientConfig, publicToolName, type McpClientConfig } from './config.ts'
export {
  importFile,
  importText,
  toYaml,
  type ImportedServer,
  type ImportOptions,
  type ImportResult,
} from './import.ts'
