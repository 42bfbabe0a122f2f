/** Frontmatter fields as Claude Code reads them, apart from the YAML reader (the chat loads these). */

/** A list field written either way Claude Code accepts: `a, b` or a YAML list. */
export function listField(value: unknown): string[] {
  const items = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value : []
  return items.map((v) => String(v).trim()).filter(Boolean)
}

export const textField = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() ? value.trim() : undefined
