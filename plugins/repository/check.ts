/**
 * @module repository/check
 * What define checks in a plugin module without running it: the syntax (TypeScript's parser, for
 * JavaScript and TypeScript alike), the imports (Node's built-in modules only: the module is loaded
 * from memory, with nothing to resolve a package from), the plugin shape read from the syntax tree
 * (`export default { name, apply, inject?, config? }` or a named function), and the config against
 * the JSON Schema the module declares. TypeScript is stripped here, so the worker runs JavaScript.
 */
import { createAjv, messageOf } from 'yoke'
import type * as TS from 'typescript'

export interface CheckedModule {
  /** what the worker imports: the source itself, or TypeScript's output for TypeScript */
  code: string
  /** the plugin's own name, from its default export */
  pluginName: string
  /** the services it injects: none, or `runtime` */
  inject: string[]
  /** the config after the declared schema's defaults */
  config: unknown
  notes: string[]
}

/** A refusal with where it is: `weather.ts:3:12`. */
export class SourceProblem extends Error {
  constructor(
    readonly where: string,
    reason: string,
  ) {
    super(reason)
  }
}

const ALLOWED_KEYS = new Set(['name', 'apply', 'inject', 'config'])
const ajv = createAjv({ useDefaults: true })

let typescript: Promise<typeof TS> | undefined
/** TypeScript's compiler, loaded the first time a module is defined (it is large). */
function loadTypeScript(): Promise<typeof TS> {
  return (typescript ??= import('typescript').then(
    (m) => (m as unknown as { default?: typeof TS }).default ?? (m as unknown as typeof TS),
    (err) => {
      typescript = undefined
      throw new SourceProblem(
        'the repository plugin',
        `checking a module needs the typescript package, which is not installed here (${messageOf(err)})`,
      )
    },
  ))
}

export async function checkModule(
  file: string,
  source: string,
  typed: boolean,
  config: unknown,
): Promise<CheckedModule> {
  const ts = await loadTypeScript()
  const at = (sf: TS.SourceFile, pos: number) => {
    const { line, character } = sf.getLineAndCharacterOfPosition(pos)
    return `${file}:${line + 1}:${character + 1}`
  }
  const out = ts.transpileModule(source, {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  })
  const first = out.diagnostics?.find((d) => d.category === ts.DiagnosticCategory.Error)
  if (first) {
    const where = first.file && first.start !== undefined ? at(first.file, first.start) : file
    throw new SourceProblem(where, ts.flattenDiagnosticMessageText(first.messageText, ' '))
  }
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.ES2022, true)
  checkImports(ts, sf, at)
  const shape = pluginShape(ts, sf, at)
  const checked = checkConfig(shape.schema, config, file)
  return { code: typed ? out.outputText : source, ...shape, config: checked, notes: shape.notes }
}

type At = (sf: TS.SourceFile, pos: number) => string

/** Imports and re-exports may name only `node:` modules; `require` does not exist in a module. */
function checkImports(ts: typeof TS, sf: TS.SourceFile, at: At) {
  const refuse = (node: TS.Node, spec: string) => {
    throw new SourceProblem(
      at(sf, node.getStart()),
      `it imports "${spec}": a dynamic plugin may import only Node's built-in modules (node:fs, node:path, …); it is loaded from memory, with no package to resolve from`,
    )
  }
  const visit = (node: TS.Node) => {
    const spec =
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier
        ? node.moduleSpecifier
        : ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword
          ? node.arguments[0]
          : undefined
    if (spec) {
      const type = ts.isImportDeclaration(node) && node.importClause?.isTypeOnly
      if (!ts.isStringLiteralLike(spec)) refuse(node, spec.getText(sf))
      else if (!type && !spec.text.startsWith('node:')) refuse(node, spec.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
}

interface Shape {
  pluginName: string
  inject: string[]
  schema?: Record<string, unknown>
  notes: string[]
}

/** The default export's shape, read from the syntax tree (an object literal, a const it names, or a named function). */
function pluginShape(ts: typeof TS, sf: TS.SourceFile, at: At): Shape {
  const exported = sf.statements.find(
    (s): s is TS.ExportAssignment => ts.isExportAssignment(s) && !s.isExportEquals,
  )
  const fn = sf.statements.find(
    (s): s is TS.FunctionDeclaration =>
      ts.isFunctionDeclaration(s) &&
      Boolean(s.modifiers?.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword)),
  )
  if (fn) {
    if (!fn.name)
      throw new SourceProblem(at(sf, fn.getStart()), 'the default export function needs a name')
    return { pluginName: fn.name.text, inject: [], notes: [] }
  }
  if (!exported)
    throw new SourceProblem(
      `${sf.fileName}:1:1`,
      'it has no default export: write `export default { name: "…", apply(ctx, config) { … } }`',
    )
  let value: TS.Expression = exported.expression
  while (
    ts.isParenthesizedExpression(value) ||
    ts.isSatisfiesExpression(value) ||
    ts.isAsExpression(value)
  )
    value = value.expression
  if (ts.isIdentifier(value)) value = constValue(ts, sf, value.text) ?? value
  if (ts.isFunctionExpression(value) && value.name)
    return { pluginName: value.name.text, inject: [], notes: [] }
  if (!ts.isObjectLiteralExpression(value))
    throw new SourceProblem(
      at(sf, value.getStart()),
      'the default export must be an object literal `{ name, apply(ctx, config) { … } }` (or a const holding one, or a named function)',
    )
  let pluginName: string | undefined
  let schema: Record<string, unknown> | undefined
  let apply = false
  let inject: string[] = []
  for (const prop of value.properties) {
    const key =
      prop.name && (ts.isIdentifier(prop.name) || ts.isStringLiteral(prop.name))
        ? prop.name.text
        : undefined
    const where = at(sf, prop.getStart())
    if (!key || !ALLOWED_KEYS.has(key))
      throw new SourceProblem(
        where,
        `${key ? `"${key}"` : 'this property'} is not part of a dynamic plugin: it has name, apply, inject (only ["runtime"]) and config (a JSON Schema)`,
      )
    const init = ts.isPropertyAssignment(prop) ? prop.initializer : undefined
    if (key === 'apply')
      apply =
        ts.isMethodDeclaration(prop) ||
        (init !== undefined && (ts.isFunctionExpression(init) || ts.isArrowFunction(init)))
    else if (key === 'name') {
      if (!init || !ts.isStringLiteralLike(init) || !init.text)
        throw new SourceProblem(where, 'name must be a non-empty string literal')
      pluginName = init.text
    } else if (key === 'inject') {
      const names = init && literal(ts, init)
      if (!Array.isArray(names) || names.some((n) => n !== 'runtime'))
        throw new SourceProblem(
          where,
          'inject may hold only "runtime": a dynamic plugin runs in a worker and reaches yoke through ctx.runtime alone',
        )
      inject = names as string[]
    } else schema = configSchema(ts, init, where)
  }
  if (!pluginName) throw new SourceProblem(at(sf, value.getStart()), 'the plugin has no name')
  if (!apply)
    throw new SourceProblem(
      at(sf, value.getStart()),
      'the plugin has no apply function: add apply(ctx, config) { … }',
    )
  return { pluginName, inject, ...(schema ? { schema } : {}), notes: [] }
}

/** `config`: a JSON Schema written as an object literal, that ajv compiles. */
function configSchema(
  ts: typeof TS,
  init: TS.Expression | undefined,
  where: string,
): Record<string, unknown> {
  const value = init && literal(ts, init)
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new SourceProblem(where, 'config must be a JSON Schema written as an object literal')
  try {
    ajv.compile(value as Record<string, unknown>)
  } catch (err) {
    throw new SourceProblem(where, `config is not a JSON Schema ajv compiles: ${messageOf(err)}`)
  }
  return value as Record<string, unknown>
}

/** The initializer of a top-level `const name = …`. */
function constValue(ts: typeof TS, sf: TS.SourceFile, name: string): TS.Expression | undefined {
  for (const s of sf.statements)
    if (ts.isVariableStatement(s))
      for (const d of s.declarationList.declarations)
        if (ts.isIdentifier(d.name) && d.name.text === name && d.initializer) return d.initializer
  return undefined
}

const NOT_LITERAL = Symbol('not a literal')
/** A JSON value written as a literal, or NOT_LITERAL. */
function literal(ts: typeof TS, node: TS.Expression): unknown {
  if (ts.isStringLiteralLike(node)) return node.text
  if (ts.isNumericLiteral(node)) return Number(node.text)
  if (node.kind === ts.SyntaxKind.TrueKeyword) return true
  if (node.kind === ts.SyntaxKind.FalseKeyword) return false
  if (node.kind === ts.SyntaxKind.NullKeyword) return null
  if (ts.isPrefixUnaryExpression(node) && node.operator === ts.SyntaxKind.MinusToken) {
    const n = literal(ts, node.operand)
    return typeof n === 'number' ? -n : NOT_LITERAL
  }
  if (ts.isArrayLiteralExpression(node)) {
    const items = node.elements.map((e) => literal(ts, e))
    return items.includes(NOT_LITERAL) ? NOT_LITERAL : items
  }
  if (ts.isObjectLiteralExpression(node)) {
    const out: Record<string, unknown> = {}
    for (const p of node.properties) {
      if (!ts.isPropertyAssignment(p) || !(ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)))
        return NOT_LITERAL
      const v = literal(ts, p.initializer)
      if (v === NOT_LITERAL) return NOT_LITERAL
      out[p.name.text] = v
    }
    return out
  }
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node))
    return literal(ts, node.expression)
  return NOT_LITERAL
}

/** The config against the declared schema, its defaults filled in; without a schema, any object. */
function checkConfig(
  schema: Record<string, unknown> | undefined,
  config: unknown,
  file: string,
): unknown {
  const value = structuredClone(config ?? {})
  if (!schema) return value
  const validate = ajv.compile(schema)
  if (validate(value)) return value
  const reason = (validate.errors ?? [])
    .map((e) => `config${e.instancePath.replace(/\//g, '.')} ${e.message}`)
    .join('; ')
  throw new SourceProblem(
    `${file} (config)`,
    `the config does not match the plugin's config schema: ${reason}`,
  )
}
