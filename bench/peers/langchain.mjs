// LangChain's MCP adapters (@langchain/mcp-adapters, on the v1 SDK) as bench/mcp.ts calls them: the
// server's tool as a LangChain tool, invoked as an agent would (tool.invoke(args)).
import { MultiServerMCPClient } from '@langchain/mcp-adapters'

/** Connects to one stdio server; `call` invokes its tool `tool` with `args`. */
export async function connect({ command, args, tool }) {
  const client = new MultiServerMCPClient({
    mcpServers: { bench: { transport: 'stdio', command, args, stderr: 'ignore' } },
  })
  const found = (await client.getTools()).find(
    (t) => t.name === tool || t.name.endsWith(`__${tool}`),
  )
  if (!found) throw new Error(`LangChain's adapters list no tool "${tool}"`)
  return { call: (input) => found.invoke(input), close: () => client.close() }
}
