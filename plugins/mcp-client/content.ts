/**
 * An upstream tool result as runtime output. Every content block is kept as the server sent it:
 * each field (`annotations`, `_meta`, a link's `title`, `description`, `size`, `icons`, an
 * embedded resource's contents), each block boundary and the order. A gateway (mcp-server) then
 * serves the blocks unchanged, and a text-only reader (the agent loop, `yoke tools call`) reads
 * the text parts, which it joins itself.
 *
 * The one addition is for media: an image or audio block gets an `alt` (`[image image/png, 1234
 * bytes]`) and the same text as a part right before it, so a reader of text sees the placeholder
 * and not the base64. mcp-server's `blocks()` leaves exactly that pair's text out and drops `alt`,
 * which gives back the server's blocks (an upstream text that reads like a placeholder stays: only
 * the part right before the media is taken for its alternative).
 */
import type { ContentPart, ToolOutput } from 'yoke'

/** An MCP content block as it came (the SDK checked its shape; only spec fields arrive). */
type Block = Record<string, unknown> & { type?: unknown }

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** The alternative text of an image or audio part (its `alt`, also the text part before it), for readers of text only. */
export function mediaPlaceholder(part: { type: string; data?: string; mimeType?: string }): string {
  return `[${part.type} ${part.mimeType ?? ''}, ${Math.floor(((part.data ?? '').length * 3) / 4)} bytes]`
}

/**
 * An MCP call result as tool output: the content blocks as they came (media with its `alt`, see
 * above); structuredContent is kept; isError makes it an error result. A 2024-era `toolResult`
 * becomes its JSON text.
 */
export function toOutput(result: {
  content?: unknown
  structuredContent?: unknown
  isError?: unknown
  toolResult?: unknown
}): ToolOutput {
  if (!Array.isArray(result.content) && 'toolResult' in result)
    return { content: [{ type: 'text', text: JSON.stringify(result.toolResult) }] }
  const content = Array.isArray(result.content) ? (result.content as unknown[]) : []
  const parts: ContentPart[] = []
  for (const item of content) addParts(item, parts)
  return {
    content: parts,
    structured: result.structuredContent,
    isError: result.isError === true,
  }
}

/** One block as runtime content parts, added to `parts`: itself, or for media its alternative text and itself. */
function addParts(item: unknown, parts: ContentPart[]): void {
  if (!isRecord(item)) return void parts.push({ type: 'text', text: '[malformed content]' })
  const block = item as Block
  switch (block.type) {
    case 'text':
      if (typeof block.text === 'string') return void parts.push(block as ContentPart)
      break
    case 'image':
    case 'audio':
      if (typeof block.data === 'string' && typeof block.mimeType === 'string' && block.mimeType) {
        const alt = mediaPlaceholder(block as { type: string; data: string; mimeType: string })
        return void parts.push({ type: 'text', text: alt }, { ...block, alt } as ContentPart)
      }
      // media the runtime cannot hold (no data or type) is named, not passed on half-formed
      return void parts.push({
        type: 'text',
        text: mediaPlaceholder(block as { type: string; mimeType?: string }),
      })
    case 'resource':
      if (isRecord(block.resource)) return void parts.push(block as ContentPart)
      break
    case 'resource_link':
      if (typeof block.uri === 'string' && block.uri) return void parts.push(block as ContentPart)
      break
  }
  // a block the runtime's content shapes have no place for is named, so a reader sees it was there
  parts.push({ type: 'text', text: `[${String(block.type)} content]` })
}
