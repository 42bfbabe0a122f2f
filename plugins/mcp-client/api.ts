/**
 * The public face of mcp-client: the plugin itself (exec-tools runs one per `mcp_servers` entry of
 * a package; mcp-json one per server of an mcp.json), its config schema, the public name of a
 * server's tool, and the importer of other hosts' MCP config files (`yoke mcp import`, mcp-json).
 */
export {
  default as mcpClient,
  mcpClientConfig,
  publicToolName,
  type McpClientConfig,
} from './index.ts'
export {
  importFile,
  importText,
  toYaml,
  type ImportedServer,
  type ImportOptions,
  type ImportResult,
} from './import.ts'
