// An MCP server over stdio whose one tool, `meta`, answers with the `_meta` its handler saw of the
// tools/call (the trace context a client sent, next to the SDK's own keys), as JSON text:
//   node trace-server.mjs        the v2 SDK (@modelcontextprotocol/server), either era by the client
//   node trace-server.mjs --v1   the v1 SDK (@modelcontextprotocol/sdk), the 2025 era
const TOOL = {
  name: 'meta',
  description: 'the request _meta it saw',
  inputSchema: { type: 'object' },
}
const answer = (meta) => ({ content: [{ type: 'text', text: JSON.stringify(meta ?? null) }] })

if (process.argv[2] === '--v1') {
  const { Server } = await import('@modelcontextprotocol/sdk/server/index.js')
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js')
  const { CallToolRequestSchema, ListToolsRequestSchema } =
    await import('@modelcontextprotocol/sdk/types.js')
  const server = new Server({ name: 'trace-v1', version: '1.0.0' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [TOOL] }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => answer(request.params._meta))
  await server.connect(new StdioServerTransport())
} else {
  const { Server } = await import('@modelcontextprotocol/server')
  const { serveStdio } = await import('@modelcontextprotocol/server/stdio')
  serveStdio(() => {
    const server = new Server(
      { name: 'trace-v2', version: '1.0.0' },
      { capabilities: { tools: {} } },
    )
    server.setRequestHandler('tools/list', async () => ({ tools: [TOOL] }))
    server.setRequestHandler('tools/call', async (_request, ctx) => answer(ctx.mcpReq._meta))
    return server
  })
}
