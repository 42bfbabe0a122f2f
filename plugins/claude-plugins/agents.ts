/**
 * Subagent definitions (`agents/*.md`): frontmatter `name`, `description`, `tools` (a list or
 * `a, b`), `model`; the body is the subagent's instructions. Claude Code's own tool names (Read,
 * Bash…) name nothing in yoke unless a tool of that name exists: the spawn tool keeps the names
 * that match and says which did not.
 */
import type { SubagentDefinition } from './api.ts'
import { listField, textField } from './fields.ts'
import type { MarkdownFile } from './markdown.ts'

export function toAgent(
  plugin: string,
  md: MarkdownFile,
  problems: string[],
): SubagentDefinition | undefined {
  const { meta, body } = md
  const name = textField(meta.name) ?? md.id
  const description = textField(meta.description)
  if (!description) {
    problems.push(
      `${md.file}: an agent needs a "description" (the model picks agents by it); left out`,
    )
    return undefined
  }
  const tools = listField(meta.tools)
  return {
    name: `${plugin}:${name}`,
    plugin,
    file: md.file,
    description,
    tools: tools.includes('*') ? [] : tools,
    ...(textField(meta.model) && { model: textField(meta.model) }),
    instructions: body,
  }
}
