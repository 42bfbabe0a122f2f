/**
 * A ToolResult as an MCP CallToolResult, and a registered tool as tools/list shows it. Content
 * parts pass through as they are, every field kept (an embedded resource keeps its text or blob,
 * a resource_link its title and annotations); the one thing left out is a text part right before
 * an image or audio part that is its alternative text (`alt`, for text-only readers).
 * Structured output becomes structuredContent, and a result that is not ok is isError with yoke's
 * message and hint.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/server'
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

/** The runtime's content parts as MCP content blocks: each as it came, less yoke's `alt`. */
export function blocks(parts: readonly ContentPart[]): Block[] {
  const out: Block[] = []
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!
    const next = parts[i + 1]
    if (
      part.type === 'text' &&
      next &&
      (next.type === 'image' || next.type === 'audio') &&
      next.alt !== undefined &&
      part.text === next.alt
    )
      continue
    if (part.type === 'image' || part.type === 'audio') {
      const { alt: _alt, ...media } = part
      out.push(media as Block)
    } else if (part.type === 'resource_link')
      out.push({ ...part, name: part.name ?? part.uri } as Block) // MCP requires a name
    else out.push(part as Block)
  }
  return out
}

/**
 * What a tool carries besides the runtime's fields, when its source has it (mcp-client registers
 * an upstream tool's `title` and `execution` as they came): passed through, never made up.
 */
interface McpExtras {
  title?: unknown
  execution?: unknown
}

/** How a tool may run as an MCP task: as its source declared, else `optional` for a spawnOnly tool. */
export function taskSupport(tool: RegisteredTool): 'forbidden' | 'optional' | 'required' {
  const declared = (tool as McpExtras).execution
  const given = isRecord(declared) ? declared.taskSupport : undefined
  if (given === 'optional' || given === 'required' || given === 'forbidden') return given
  return tool.spawnOnly ? 'optional' : 'forbidden'
}

/** MCP's tool annotations (ToolAnnotations): what a client reads there */
const HINTS = [
  'title',
  'readOnlyHint',
  'destructiveHint',
  'idempotentHint',
  'openWorldHint',
] as const

/**
 * The annotations a client sees: MCP's own keys, as the source gave them (an upstream server's
 * pass through). The rest is yoke's bookkeeping and stays inside: exec-tools keeps its package,
 * version and executable there, mcp-client the server and tool names (and a client's SDK drops
 * keys that are not MCP's anyway).
 */
function annotationsOf(tool: RegisteredTool): Record<string, unknown> | undefined {
  const given = tool.annotations
  if (!given) return undefined
  const hints = Object.fromEntries(HINTS.filter((k) => k in given).map((k) => [k, given[k]]))
  return Object.keys(hints).length ? hints : undefined
}

/**
 * A registered tool as tools/list shows it: the schemas, annotations and `execution` exactly as
 * registered (an upstream server's pass through as it sent them); yoke adds nothing, except
 * `execution.taskSupport: 'optional'` on its own spawnOnly tools, which it serves as tasks. Where
 * tasks are not served (`tasks` false: a 2025-era connection), no `taskSupport` is shown: such a
 * client calls every tool plainly, and one that read `required` would refuse to call it at all.
 * `description`: what the tool says of itself where it is listed (ToolDefinition.describe).
 */
export function toMcpTool(tool: RegisteredTool, tasks = true, description?: string): Tool {
  const extras = tool as McpExtras
  const annotations = annotationsOf(tool)
  let execution = isRecord(extras.execution)
    ? extras.execution
    : tool.spawnOnly
      ? { taskSupport: 'optional' }
      : undefined
  if (!tasks && execution && 'taskSupport' in execution) {
    const { taskSupport: _served, ...rest } = execution
    execution = Object.keys(rest).length ? rest : undefined
  }
  return {
    name: tool.name,
    ...(typeof extras.title === 'string' && { title: extras.title }),
    description: description ?? tool.description ?? '',
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    ...(tool.outputSchema && { outputSchema: tool.outputSchema as Tool['outputSchema'] }),
    ...(annotations && { annotations: annotations as Tool['annotations'] }),
    ...(execution && { execution: execution as Tool['execution'] }),
  }
}
