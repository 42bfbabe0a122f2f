// One 2026-07-28 request over Streamable HTTP, as a stateless client sends it: the standard
// headers (Mcp-Protocol-Version, Mcp-Method, Mcp-Name mirrored from the body) and the request's
// envelope in `_meta` (protocol version, client info, and capabilities: form elicitation and the
// tasks extension). What the replica tests and the cluster soak send, each reading the answer
// its own way.

let ids = 0

export interface ModernPost {
  /** the request's JSON-RPC id (its answer carries it) */
  id: number
  res: Response
}

/** POSTs `method` with `params` to `url` with the bearer `token`; fails after `ms`. */
export async function modernPost(
  url: string,
  method: string,
  params: Record<string, unknown>,
  { token, client = 'yoke-test', ms = 30_000 }: { token: string; client?: string; ms?: number },
): Promise<ModernPost> {
  const id = ++ids
  const name = (params.name ?? params.taskId) as string | undefined
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: client, version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {
      elicitation: { form: {} },
      extensions: { 'io.modelcontextprotocol/tasks': {} },
    },
  }
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name && { 'mcp-name': name }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: envelope } }),
    signal: AbortSignal.timeout(ms),
  })
  return { id, res }
}
