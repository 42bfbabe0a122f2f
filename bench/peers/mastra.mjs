// Mastra's MCPClient (@mastra/mcp 0.14, on the v1 SDK; 1.x needs Node >= 22.13) as bench/mcp.ts calls
// it: the server's tool as a Mastra tool, executed as an agent would (tool.execute({ context })).
// Its stdio transport does not take `stderr`: the server's banner reaches the bench's stderr.
import { MCPClient } from '@mastra/mcp'

/** Connects to one stdio server; `call` runs its tool `tool` with `args`. */
export async function connect({ command, args, tool }) {
  const client = new MCPClient({ servers: { bench: { command, args, stderr: 'ignore' } } })
  const found = (await client.getTools())[`bench_${tool}`]
  if (!found) throw new Error(`Mastra's MCPClient lists no tool "bench_${tool}"`)
  return { call: (input) => found.execute({ context: input }), close: () => client.disconnect() }
}
