/**
 * The eval's corpus as the index sees it: the real MCP servers' tools (corpus/*.json, as their
 * `tools/list` gave them), the repository's exec packages (examples/packages) and skills
 * (examples/skills), each turned into the item yoke would index: an MCP tool is
 * `mcp__<server>__<tool>` from `mcp:<server>`, also named `<server>/<tool>` (and `.`, `__`) and
 * `<tool>`.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { publicToolName } from '../../plugins/mcp-client/config.ts'
import { readLines, splitFrontmatter } from '../../plugins/skills/parse.ts'
import type { Searchable } from '../../plugins/tool-search/rank.ts'
import { paramsOf } from '../../plugins/tool-search/finder.ts'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(HERE, '../..')
export const CORPUS_DIR = join(HERE, 'corpus')

export interface Tool extends Searchable {
  description: string
  source: string
  /** what the model gets: the tool's input schema (a skill's is none) */
  inputSchema: Record<string, unknown>
  /** the MCP server, for a clone the made-up one */
  server?: string
  /** the raw tool name on the wire */
  raw: string
  /** a distractor: the real tool it was cloned from */
  cloneOf?: string
  /** as mcp-client annotates an MCP tool (what tool-search's finder reads its aliases from) */
  annotations?: { mcpServer: string; mcpTool: string }
}

export interface ServerFixture {
  server: string
  package: string
  version: string
  tools: Array<{ name: string; description?: string; inputSchema?: unknown }>
}

export function readFixtures(): ServerFixture[] {
  return readdirSync(CORPUS_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(CORPUS_DIR, f), 'utf8')) as ServerFixture)
}

export function mcpTool(
  server: string,
  raw: string,
  description: string,
  inputSchema: unknown,
  cloneOf?: string,
): Tool {
  const schema = (inputSchema ?? { type: 'object' }) as Record<string, unknown>
  return {
    name: publicToolName(server, raw),
    description,
    source: `mcp:${server}`,
    params: paramsOf(schema),
    // the spellings tool-search's finder gives an MCP tool
    aliases: [...new Set([`${server}/${raw}`, `${server}.${raw}`, `${server}__${raw}`, raw])],
    inputSchema: schema,
    server,
    raw,
    cloneOf,
    annotations: { mcpServer: server, mcpTool: raw },
  }
}

function packageTools(): Tool[] {
  const dir = join(ROOT, 'examples/packages')
  return readdirSync(dir)
    .sort()
    .flatMap((pkg) => {
      const manifest = JSON.parse(readFileSync(join(dir, pkg, 'manifest.json'), 'utf8')) as {
        name: string
        tools: Array<{ name: string; description: string; input_schema: Record<string, unknown> }>
      }
      return manifest.tools.map((t) => ({
        name: t.name,
        description: t.description,
        source: `exec:${manifest.name}`,
        params: paramsOf(t.input_schema),
        inputSchema: t.input_schema,
        raw: t.name,
      }))
    })
}

function skills(): Tool[] {
  const dirs = [
    ...readdirSync(join(ROOT, 'examples/skills')).map((d) => join(ROOT, 'examples/skills', d)),
    join(ROOT, 'examples/packages/text-tools'),
  ]
  return dirs.sort().flatMap((dir) => {
    let text: string
    try {
      text = readFileSync(join(dir, 'SKILL.md'), 'utf8')
    } catch {
      return []
    }
    const fields = readLines(splitFrontmatter(text)?.frontmatter ?? '')
    if (!fields.name) return []
    return [
      {
        name: fields.name,
        description: fields.description ?? '',
        source: 'skills',
        inputSchema: {},
        raw: fields.name,
      },
    ]
  })
}

/** Every real thing: the servers' tools, then the exec packages' tools and the skills. */
export function realCorpus(): Tool[] {
  const tools = readFixtures().flatMap((f) =>
    f.tools.map((t) => mcpTool(f.server, t.name, t.description ?? '', t.inputSchema)),
  )
  const all = [...tools, ...packageTools(), ...skills()]
  const names = new Set<string>()
  for (const t of all) {
    if (names.has(t.name)) throw new Error(`two things are named ${t.name}`)
    names.add(t.name)
  }
  return all
}
