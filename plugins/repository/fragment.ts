/**
 * @module repository/fragment
 * A preset fragment as a dynamic plugin: `plugins: { key: { use: <built-in>, config: … } }`, the
 * shape of a preset's `plugins:`, adding instances of plugins yoke already has (a new MCP server is
 * an mcp-client instance). define parses it and validates each config against its plugin's schema,
 * naming the line; nothing new is executed, but an instance may start processes (a stdio server),
 * so running a fragment asks for approval as a module does. `${VAR}` is not expanded: a fragment
 * written by a model does not read the environment.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { isMap, LineCounter, parseDocument, type Node as YamlNode } from 'yaml'
import { toPlugin, validateConfig, type Plugin } from 'yoke'
import { SourceProblem } from './check.ts'

export interface FragmentInstance {
  key: string
  use: string
  config: unknown
}

const KEY = /^[A-Za-z0-9_-]{1,64}$/
const EXTENSION = import.meta.url.endsWith('.ts') ? '.ts' : '.js'
/** plugins a fragment may not add: itself (no recursion) */
const REFUSED = new Set(['repository'])

/** A built-in plugin's entry module, beside this plugin's folder. */
function builtinEntry(name: string): URL | undefined {
  if (!/^[a-z][a-z0-9-]*$/.test(name) || REFUSED.has(name)) return undefined
  const url = new URL(`../${name}/index${EXTENSION}`, import.meta.url)
  return existsSync(fileURLToPath(url)) ? url : undefined
}

export async function loadBuiltin(name: string): Promise<Plugin> {
  const url = builtinEntry(name)
  const plugin = url && toPlugin((await import(url.href)).default)
  if (!plugin || typeof plugin === 'string') throw new Error(`"${name}" is not a built-in plugin`)
  return plugin
}

export async function checkFragment(file: string, source: string): Promise<FragmentInstance[]> {
  const lines = new LineCounter()
  const doc = parseDocument(source, { lineCounter: lines, prettyErrors: false, uniqueKeys: true })
  const at = (node: YamlNode | undefined | null) => {
    const { line, col } = lines.linePos(node?.range?.[0] ?? 0)
    return `${file}:${line}:${col}`
  }
  const [error] = doc.errors
  if (error) {
    const { line, col } = lines.linePos(error.pos[0])
    throw new SourceProblem(`${file}:${line}:${col}`, `YAML: ${error.message.split('\n')[0]}`)
  }
  const root = doc.contents
  const plugins = isMap(root) ? (root.get('plugins', true) as YamlNode | undefined) : undefined
  if (!isMap(root) || !isMap(plugins) || !plugins.items.length)
    throw new SourceProblem(
      at(root),
      'a fragment is `plugins:` with at least one instance: `plugins: { key: { use: <built-in>, config: … } }`',
    )
  const extra = root.items.find((p) => (p.key as { value?: unknown })?.value !== 'plugins')
  if (extra) throw new SourceProblem(at(extra.key as YamlNode), 'a fragment has only `plugins:`')
  const instances: FragmentInstance[] = []
  for (const pair of plugins.items) {
    const key = String((pair.key as { value?: unknown })?.value)
    const entry = pair.value as YamlNode | null
    if (!KEY.test(key))
      throw new SourceProblem(
        at(pair.key as YamlNode),
        `"${key}" is not an instance key (letters, digits, _ and -)`,
      )
    if (!isMap(entry))
      throw new SourceProblem(
        at(entry ?? (pair.key as YamlNode)),
        `${key}: an instance is { use, config }`,
      )
    const unknown = entry.items.find(
      (p) => !['use', 'config'].includes(String((p.key as { value?: unknown })?.value)),
    )
    if (unknown)
      throw new SourceProblem(
        at(unknown.key as YamlNode),
        `${key}: an instance in a fragment has only use and config`,
      )
    const useNode = entry.get('use', true) as YamlNode | undefined
    const use = (useNode as { value?: unknown } | undefined)?.value
    if (typeof use !== 'string' || !builtinEntry(use))
      throw new SourceProblem(
        at(useNode ?? entry),
        `${key}: use must name a built-in plugin (mcp-client, skills, exec-tools, …; not a path or a package${typeof use === 'string' && REFUSED.has(use) ? ', and not repository itself' : ''})`,
      )
    const plugin = await loadBuiltin(use)
    const raw = (entry.toJSON() as { config?: unknown }).config
    const checked = validateConfig(plugin, raw)
    if ('issues' in checked) {
      const [issue] = checked.issues
      const node =
        (entry.getIn(['config', ...issue!.path], true) as YamlNode | undefined) ??
        (entry.get('config', true) as YamlNode | undefined) ??
        entry
      throw new SourceProblem(
        at(node),
        `${key}: config${issue!.path.length ? `.${issue!.path.join('.')}` : ''}: ${issue!.message} (plugin ${use})`,
      )
    }
    instances.push({ key, use, config: raw ?? {} })
  }
  return instances
}
