/**
 * Slash commands (`commands/*.md`) as prompts: the body, with the arguments put in as Claude
 * Code does today — `$ARGUMENTS` is the text as typed, `$ARGUMENTS[N]` and `$N` the N-th word
 * (from 0, split as a shell splits, quotes removed), a missing word stays as written; a body
 * with no placeholder gets `ARGUMENTS: …` after it. `!`cmd`` lines (shell output pasted in by
 * Claude Code) are not run here: the text says so where they stood.
 */
import type { PluginCommand } from './api.ts'
import { listField, textField } from './fields.ts'
import type { MarkdownFile } from './markdown.ts'

/** A command is named by its file (a subfolder only groups, as in Claude Code): `plugin:name`. */
export function toCommand(plugin: string, md: MarkdownFile): PluginCommand {
  const { meta, body } = md
  return {
    name: `${plugin}:${md.id.split(':').at(-1)}`,
    plugin,
    file: md.file,
    description: textField(meta.description) ?? firstLine(body),
    ...(textField(meta['argument-hint']) && { argumentHint: textField(meta['argument-hint']) }),
    allowedTools: listField(meta['allowed-tools']),
    body,
  }
}

const PLACEHOLDER = /\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS\b|\$(\d+)\b/g
const SHELL_LINE = /^!`([^`]+)`/gm

/** The command's prompt with `args` put in. */
export function expandCommand(command: PluginCommand, args: string): string {
  const words = splitWords(args)
  let placed = false
  const text = command.body
    .replace(PLACEHOLDER, (match, indexed?: string, bare?: string) => {
      placed = true
      if (indexed === undefined && bare === undefined) return args
      return words[Number(indexed ?? bare)] ?? match
    })
    .replace(SHELL_LINE, (_m, cmd: string) => `[not run here: the shell command \`${cmd}\`]`)
  return !placed && args.trim() ? `${text}\n\nARGUMENTS: ${args}` : text
}

/** Words as a shell splits them: spaces part them, quotes group and are removed, `\` escapes. */
export function splitWords(text: string): string[] {
  const words: string[] = []
  let word = ''
  let quote: string | undefined
  let inWord = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quote) {
      if (c === quote) quote = undefined
      else if (c === '\\' && quote === '"' && i + 1 < text.length) word += text[++i]
      else word += c
    } else if (c === '"' || c === "'") {
      quote = c
      inWord = true
    } else if (c === '\\' && i + 1 < text.length) {
      word += text[++i]
      inWord = true
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word)
      word = ''
      inWord = false
    } else {
      word += c
      inWord = true
    }
  }
  if (inWord) words.push(word)
  return words
}

const firstLine = (body: string) =>
  body
    .split('\n')
    .map((l) => l.replace(/^#+\s*/, '').trim())
    .find(Boolean)
    ?.slice(0, 200) ?? ''
