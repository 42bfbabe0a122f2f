/**
 * TypeScript declarations of the `tools` object a program sees, from the tools' input (and output)
 * schemas: what the model reads before it writes a program. Only the tools given (those a scope
 * may call, as offered this turn) are declared.
 */
import { apiPath } from './api.ts'

/** What a declaration needs of a tool (a RegisteredTool or a model request's tool). */
export interface Declarable {
  name: string
  description?: string
  inputSchema?: Record<string, unknown>
  outputSchema?: Record<string, unknown>
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/
const MAX_DEPTH = 6
const MAX_DOC = 300

const key = (name: string) => (IDENT.test(name) ? name : JSON.stringify(name))
const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** A one-paragraph JSDoc line (`*\/` cannot close it early). */
function doc(text: unknown, indent: string): string {
  if (typeof text !== 'string' || !text.trim()) return ''
  let line = text.replace(/\s+/g, ' ').trim().replaceAll('*/', '*\\/')
  if (line.length > MAX_DOC) line = `${line.slice(0, MAX_DOC - 1)}…`
  return `${indent}/** ${line} */\n`
}

/** A JSON schema as a TypeScript type (what it cannot say is `unknown`). */
export function typeOf(schema: unknown, indent = '', depth = 0): string {
  if (schema === true || schema === undefined) return 'unknown'
  if (!isRecord(schema) || depth > MAX_DEPTH) return 'unknown'
  if ('const' in schema) return JSON.stringify(schema.const) ?? 'unknown'
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ')
  for (const k of ['anyOf', 'oneOf'] as const)
    if (Array.isArray(schema[k])) return union(schema[k].map((s) => typeOf(s, indent, depth + 1)))
  if (Array.isArray(schema.allOf))
    return schema.allOf.map((s) => typeOf(s, indent, depth + 1)).join(' & ') || 'unknown'
  const type = schema.type
  if (Array.isArray(type))
    return union(type.map((t) => typeOf({ ...schema, type: t }, indent, depth + 1)))
  switch (type) {
    case 'string':
      return 'string'
    case 'number':
    case 'integer':
      return 'number'
    case 'boolean':
      return 'boolean'
    case 'null':
      return 'null'
    case 'array': {
      const item = typeOf(schema.items, indent, depth + 1)
      return /^[\w"]+$/.test(item) ? `${item}[]` : `Array<${item}>`
    }
    case 'object':
      return objectType(schema, indent, depth)
    default:
      return isRecord(schema.properties) ? objectType(schema, indent, depth) : 'unknown'
  }
}

function union(types: string[]): string {
  const unique = [...new Set(types)]
  return unique.includes('unknown') ? 'unknown' : unique.join(' | ') || 'unknown'
}

function objectType(schema: Record<string, unknown>, indent: string, depth: number): string {
  const props = isRecord(schema.properties) ? schema.properties : {}
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : [])
  const inner = `${indent}  `
  const lines = Object.entries(props).map(([name, prop]) => {
    const opt = required.has(name) ? '' : '?'
    return `${doc(isRecord(prop) ? prop.description : undefined, inner)}${inner}${key(name)}${opt}: ${typeOf(prop, inner, depth + 1)}`
  })
  const extra = schema.additionalProperties
  if (isRecord(extra)) lines.push(`${inner}[key: string]: ${typeOf(extra, inner, depth + 1)}`)
  else if (!lines.length) return 'Record<string, unknown>'
  return `{\n${lines.join('\n')}\n${indent}}`
}

/** A tool's function signature: its arguments, and what a call resolves to. */
function signature(tool: Declarable, indent: string): string {
  const schema = tool.inputSchema ?? { type: 'object' }
  const args = typeOf(schema, indent)
  // arguments with nothing required may be left out
  const optional = !Array.isArray(schema.required) || !schema.required.length
  const out = tool.outputSchema ? typeOf(tool.outputSchema, indent) : 'string'
  return `(args${optional ? '?' : ''}: ${args}): Promise<${out}>`
}

/**
 * The `declare const tools: {…}` block for these tools: an MCP server's tools under its name, the
 * others at the top; a native tool whose name is also a server's is left to `callTool`.
 */
export function declarations(tools: readonly Declarable[]): string {
  const top: Declarable[] = []
  const servers = new Map<string, Array<[string, Declarable]>>()
  for (const tool of [...tools].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = apiPath(tool.name)
    if (path.length === 1) top.push(tool)
    else servers.set(path[0]!, [...(servers.get(path[0]!) ?? []), [path[1]!, tool]])
  }
  const lines: string[] = []
  for (const tool of top) {
    if (servers.has(tool.name)) continue
    lines.push(`${doc(tool.description, '  ')}  ${key(tool.name)}${signature(tool, '  ')}`)
  }
  for (const [server, entries] of servers) {
    const inner = entries.map(
      ([name, tool]) =>
        `${doc(tool.description, '    ')}    ${key(name)}${signature(tool, '    ')}`,
    )
    lines.push(`  ${key(server)}: {\n${inner.join('\n')}\n  }`)
  }
  return `declare const tools: {\n${lines.join('\n')}\n}`
}
