/**
 * A ToolResult as an MCP CallToolResult: content parts as they are (an image stays an image; a
 * text part right before one that is its alternative text, `alt`, for text-only readers is
 * dropped), structured output as structuredContent, and a result that is not ok as isError with
 * yoke's message and hint.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import type { ContentPart, RegisteredTool, ToolResult } from 'yoke'

type Block = CallToolResult['content'][number]

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

export function toCallToolResult(result: ToolResult, tool?: RegisteredTool): CallToolResult {
  const content = blocks(result.content)
  const structured = isRecord(result.structured) ? result.structured : undefined
  if (!result.ok) {
    const error = result.error
    // a tool's own error output (TOOL_ERROR) speaks for itself; yoke's failures carry their text already
    if (
      error &&
      result.status !== 'TOOL_ERROR' &&
      !content.some((b) => b.type === 'text' && b.text.includes(error.message))
    ) {
      content.push({
        type: 'text',
        text: `${error.code}: ${error.message}${error.hint ? `\nhint: ${error.hint}` : ''}`,
      })
    }
    return { content, isError: true, ...(structured && { structuredContent: structured }) }
  }
  if (structured) return { content, structuredContent: structured }
  if (tool?.outputSchema) {
    // a client checks structuredContent against the declared outputSchema: without it (the output was
    // over the limit, or the tool broke its contract) the honest answer is an error that says so
    const why = result.truncated
      ? `its output was over yoke's output limit (the whole output is in ${result.truncated.spilled})`
      : 'it returned no structured output'
    content.push({ type: 'text', text: `yoke: ${tool.name} declares an outputSchema but ${why}` })
    return { content, isError: true }
  }
  return { content }
}

/** The runtime's content parts as MCP content blocks. */
export function blocks(parts: readonly ContentPart[]): Block[] {
  const out: Block[] = []
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!
    const next = parts[i + 1]
    if (part.type === 'text') {
      if (
        next &&
        (next.type === 'image' || next.type === 'audio') &&
        next.alt !== undefined &&
        part.text === next.alt
      )
        continue
      out.push({ type: 'text', text: part.text })
    } else if (part.type === 'image' || part.type === 'audio')
      out.push({ type: part.type, data: part.data, mimeType: part.mimeType })
    else if (part.type === 'resource')
      out.push({ type: 'resource', resource: part.resource as never })
    else if (part.type === 'resource_link')
      out.push({
        type: 'resource_link',
        uri: part.uri,
        name: part.name ?? part.uri,
        ...(part.mimeType && { mimeType: part.mimeType }),
      })
  }
  return out
}

const HINTS = [
  'title',
  'readOnlyHint',
  'destructiveHint',
  'idempotentHint',
  'openWorldHint',
] as const

/** A registered tool as tools/list shows it: the schemas exactly as registered (an upstream server's pass through untouched). */
export function toMcpTool(tool: RegisteredTool): Tool {
  const given = (tool.annotations ?? {}) as Record<string, unknown>
  const annotations = Object.fromEntries(
    HINTS.filter((k) => given[k] !== undefined).map((k) => [k, given[k]]),
  )
  return {
    name: tool.name,
    ...(typeof given.title === 'string' && { title: given.title }),
    description: tool.description ?? '',
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    ...(tool.outputSchema && { outputSchema: tool.outputSchema as Tool['outputSchema'] }),
    ...(Object.keys(annotations).length && { annotations }),
  }
}
