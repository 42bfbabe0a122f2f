/**
 * @module content
 * A content part as text, for readers of text only (a model's tool result, a terminal): media as
 * a marker, an embedded resource by its URI and text (bounded), a link by its URI.
 */
import type { ContentPart } from './runtime/types.ts'

/** how much of an embedded resource's text a reader gets; the output limits spill the rest */
const EMBEDDED_TEXT = 8000

export function partText(part: ContentPart): string {
  if (part.type === 'text') return part.text
  if (part.type === 'resource_link')
    return `[resource ${part.uri}${part.title ? ` "${part.title}"` : ''}]`
  // media: its alternative text, when it has one, is the text part a source puts right before it
  if (part.type !== 'resource') return `[${part.type}]`
  const r = part.resource
  const uri = typeof r.uri === 'string' ? r.uri : '?'
  if (typeof r.text === 'string')
    return r.text.length > EMBEDDED_TEXT
      ? `[resource ${uri}]\n${r.text.slice(0, EMBEDDED_TEXT)}… (${r.text.length} characters in all)`
      : `[resource ${uri}]\n${r.text}`
  if (typeof r.blob === 'string')
    return `[resource ${uri}, ${r.mimeType ?? 'binary'}, ${Math.floor((r.blob.length * 3) / 4)} bytes]`
  return `[resource ${uri}]`
}
