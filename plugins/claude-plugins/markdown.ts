/**
 * A command or agent file: YAML frontmatter between `---` lines, then the body. A broken
 * frontmatter is a problem naming file:line; the file is then left out (its intent is unknown).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { messageOf } from 'yoke'
import { parse, YAMLParseError } from 'yaml'
import { isObject } from './manifest.ts'

export interface MarkdownFile {
  file: string
  /** the path under its folder without `.md`, parts joined by `:` (`sub:name`) */
  id: string
  meta: Record<string, unknown>
  body: string
}

/** the most any one command or agent file may hold */
const MAX_BYTES = 1024 * 1024
const MAX_FILES = 1000

/** Every `.md` under `root` (or `root` itself when it is a file), in name order; problems say which were left out. */
export function readMarkdownFiles(root: string, problems: string[]): MarkdownFile[] {
  const files: Array<[string, string]> = []
  const walk = (dir: string, depth: number) => {
    if (depth > 4) return
    let names: string[]
    try {
      names = readdirSync(dir).sort()
    } catch (err) {
      problems.push(`${dir}: ${messageOf(err)}`)
      return
    }
    for (const name of names) {
      if (name.startsWith('.')) continue
      const full = join(dir, name)
      let stat
      try {
        stat = statSync(full)
      } catch {
        problems.push(`${full}: a link that leads nowhere`)
        continue
      }
      if (stat.isDirectory()) walk(full, depth + 1)
      else if (name.endsWith('.md') && stat.isFile()) files.push([full, relative(root, full)])
    }
  }
  let rootStat
  try {
    rootStat = statSync(root)
  } catch (err) {
    problems.push(`${root}: ${messageOf(err)}`)
    return []
  }
  if (rootStat.isFile()) files.push([root, root.split(sep).at(-1)!])
  else walk(root, 0)
  if (files.length > MAX_FILES) {
    problems.push(`${root}: ${files.length} files; the first ${MAX_FILES} are read`)
    files.length = MAX_FILES
  }
  const out: MarkdownFile[] = []
  for (const [file, rel] of files) {
    const read = readMarkdown(file)
    if ('problem' in read) problems.push(read.problem)
    else out.push({ file, id: rel.replace(/\.md$/, '').split(sep).join(':'), ...read })
  }
  return out
}

export function readMarkdown(
  file: string,
): { meta: Record<string, unknown>; body: string } | { problem: string } {
  let text: string
  try {
    if (statSync(file).size > MAX_BYTES) return { problem: `${file}: larger than 1 MiB; left out` }
    text = readFileSync(file, 'utf8').replace(/^\uFEFF/, '')
  } catch (err) {
    return { problem: `${file}: ${messageOf(err)}` }
  }
  const open = /^---\r?\n/.exec(text)
  if (!open) return { meta: {}, body: text.trim() }
  const close = /\r?\n---[ \t]*(?:\r?\n|$)/.exec(text.slice(open[0].length))
  if (!close) return { problem: `${file}:1: the frontmatter's closing --- is missing` }
  const yamlText = text.slice(open[0].length, open[0].length + close.index)
  try {
    const meta = parse(yamlText, { uniqueKeys: false }) ?? {}
    if (!isObject(meta)) return { problem: `${file}:2: the frontmatter is not a mapping` }
    return { meta, body: text.slice(open[0].length + close.index + close[0].length).trim() }
  } catch (err) {
    // Claude Code reads frontmatter leniently: its own plugins' agents hold unquoted `a: b` text
    const lenient = lenientFields(yamlText)
    if (lenient)
      return {
        meta: lenient,
        body: text.slice(open[0].length + close.index + close[0].length).trim(),
      }
    const line = err instanceof YAMLParseError ? (err.linePos?.[0].line ?? 0) + 1 : 2
    return { problem: `${file}:${line}: ${messageOf(err).split('\n')[0]}` }
  }
}

/** the fields a command or agent file has: a line that starts with one begins it */
const FIELDS = new Set([
  ...['name', 'description', 'tools', 'model', 'color', 'argument-hint', 'allowed-tools'],
  ...['disable-model-invocation', 'user-invocable', 'when_to_use'],
])

/**
 * Frontmatter that is not YAML, read line by line: a line starting with a known field begins
 * that field, any other line continues the field before it; undefined when no field is found.
 */
function lenientFields(text: string): Record<string, unknown> | undefined {
  const meta: Record<string, string> = {}
  let current: string | undefined
  for (const line of text.split(/\r?\n/)) {
    const field = /^([A-Za-z][\w-]*):\s?(.*)$/.exec(line)
    if (field && FIELDS.has(field[1]!) && !(field[1]! in meta)) {
      current = field[1]!
      meta[current] = field[2]!.trim()
    } else if (current) meta[current] += `\n${line}`
  }
  return Object.keys(meta).length ? meta : undefined
}
