// The layering rules (DESIGN §9): the kernel and the CLI frame never import a plugin; a plugin
// reaches another only through that plugin's public face, its api.ts; src/kernel has no import
// cycle, type-only edges included. Imports are read with TypeScript's own pre-processor, so
// static, type-only, re-exported and dynamic imports all count, and comments never do.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, realpathSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { describe, it } from 'node:test'
import ts from 'typescript'
import { ROOT } from './helpers/project.ts'

const SOURCE = /\.(ts|mts|cts|mjs|cjs|js)$/

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => SOURCE.test(f) && !f.split(sep).includes('fixtures'))
    .map((f) => join(dir, f))
}

/** Where a path really is: a symlink counts as the file it points to. */
const real = (file: string) => {
  try {
    return relative(ROOT, realpathSync(join(ROOT, file)))
  } catch {
    return file
  }
}

/** The repository-relative files `file` imports (relative specifiers only; packages are skipped). */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true)
  return info.importedFiles
    .map((i) => i.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => real(relative(ROOT, resolve(ROOT, dirname(file), spec))))
}

/** The npm packages `file` imports, by package name ('@scope/name' or 'name'). */
function packagesOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true)
  return info.importedFiles
    .map((i) => i.fileName)
    .filter((spec) => !spec.startsWith('.') && !spec.startsWith('node:') && !spec.startsWith('/'))
    .map((spec) =>
      spec
        .split('/')
        .slice(0, spec.startsWith('@') ? 2 : 1)
        .join('/'),
    )
}

/** String literals in `file` that name a path into plugins/ (a computed import, a require). */
function pluginPathsIn(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8')
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: string[] = []
  const visit = (node: ts.Node) => {
    if (
      (ts.isStringLiteral(node) ||
        ts.isNoSubstitutionTemplateLiteral(node) ||
        ts.isTemplateHead(node)) &&
      /(^|\/)plugins\//.test(node.text) &&
      node.text.includes('..')
    )
      found.push(node.text)
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/**
 * The repository-relative files `file` imports as values: `import type`, an import whose every
 * name is `type`, and `export type … from` are left out (they vanish when the code is compiled).
 */
function valueImportsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8')
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const specs: string[] = []
  const typeOnly = (bindings: ts.NamedImportBindings | ts.NamedExportBindings | undefined) =>
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((e) => e.isTypeOnly)
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause
      const onlyTypes =
        clause?.isTypeOnly ||
        (clause && !clause.name && typeOnly(clause.namedBindings)) ||
        (clause &&
          !clause.name &&
          clause.namedBindings &&
          ts.isNamedImports(clause.namedBindings) &&
          clause.namedBindings.elements.length === 0)
      if (!onlyTypes) specs.push(node.moduleSpecifier.text)
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const onlyTypes =
        node.isTypeOnly ||
        (node.exportClause !== undefined &&
          ts.isNamedExports(node.exportClause) &&
          node.exportClause.elements.every((e) => e.isTypeOnly))
      if (!onlyTypes) specs.push(node.moduleSpecifier.text)
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    )
      specs.push(node.arguments[0].text)
    ts.forEachChild(node, visit)
  }
  visit(source)
  return specs
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => real(relative(ROOT, resolve(ROOT, dirname(file), spec))))
}

/** The cycles of a directed graph, each as `a → b → a`. */
function cyclesOf(edges: Map<string, string[]>): string[] {
  const cycles: string[] = []
  const state = new Map<string, 'open' | 'done'>()
  const visit = (node: string, path: string[]) => {
    if (state.get(node) === 'done') return
    if (state.get(node) === 'open') {
      cycles.push([...path.slice(path.indexOf(node)), node].join(' → '))
      return
    }
    state.set(node, 'open')
    for (const next of edges.get(node) ?? []) visit(next, [...path, node])
    state.set(node, 'done')
  }
  for (const node of edges.keys()) visit(node, [])
  return cycles
}

/** The built-in plugins (and plugin libraries): the folders under plugins/. */
const PLUGINS = readdirSync(join(ROOT, 'plugins'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)

/**
 * String literals under src/ that name a plugin: a plugin's name itself, a control or key under it
 * (`skills/list`, `summary:skills`), or a file only a plugin keeps (`yoke.lock`).
 */
function pluginNamesIn(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8')
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: string[] = []
  const names = (literal: string) =>
    PLUGINS.some(
      (p) => literal === p || literal.startsWith(`${p}/`) || literal.startsWith(`${p}:`),
    ) || /\byoke\.lock\b/.test(literal)
  const visit = (node: ts.Node) => {
    if (
      (ts.isStringLiteral(node) ||
        ts.isNoSubstitutionTemplateLiteral(node) ||
        ts.isTemplateHead(node)) &&
      names(node.text) &&
      !ts.isImportDeclaration(node.parent) &&
      !ts.isExportDeclaration(node.parent)
    ) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart())
      found.push(`${file}:${line + 1} '${node.text}'`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

const pluginOf = (file: string) =>
  file.startsWith(`plugins${sep}`) ? file.split(sep)[1] : undefined

describe('layering', () => {
  it('nothing under src/ imports from plugins/', () => {
    const offences = filesUnder('src').flatMap((file) => [
      ...importsOf(file)
        .filter((target) => target.startsWith(`plugins${sep}`))
        .map((target) => `${file} imports ${target}`),
      ...pluginPathsIn(file).map((path) => `${file} names ${path}`),
      ...(real(file).startsWith(`plugins${sep}`) ? [`${file} is a link into plugins/`] : []),
    ])
    assert.deepEqual(offences, [])
  })

  it("a plugin reaches the kernel only through its public API ('yoke', 'yoke/cli')", () => {
    const offences = filesUnder('plugins').flatMap((file) =>
      importsOf(file)
        .filter((target) => target.startsWith(`src${sep}`))
        .map((target) => `${file} imports ${target}`),
    )
    assert.deepEqual(offences, [])
  })

  it("a plugin imports another plugin's files only through its api.ts", () => {
    const offences = filesUnder('plugins').flatMap((file) =>
      importsOf(file)
        .filter((target) => {
          const owner = pluginOf(target)
          return owner && owner !== pluginOf(file) && target !== join('plugins', owner, 'api.ts')
        })
        .map((target) => `${file} imports ${target}`),
    )
    assert.deepEqual(offences, [])
  })

  it('src/ has no import cycle, type-only edges included', () => {
    const files = filesUnder('src')
    const edges = new Map(
      files.map((f) => [f, importsOf(f).filter((t) => t.startsWith(`src${sep}`))]),
    )
    assert.deepEqual(cyclesOf(edges), [])
  })

  it('no string under src/ names a plugin (a control, a plugin name, a file a plugin keeps)', () => {
    assert.deepEqual(filesUnder('src').flatMap(pluginNamesIn), [])
  })

  it('the plugins’ value imports form a DAG (a type-only import is no edge)', () => {
    const edges = new Map<string, string[]>(PLUGINS.map((p) => [p, []]))
    for (const file of filesUnder('plugins'))
      for (const target of valueImportsOf(file)) {
        const [from, to] = [pluginOf(file), pluginOf(target)]
        if (from && to && from !== to && !edges.get(from)!.includes(to)) edges.get(from)!.push(to)
      }
    assert.deepEqual(cyclesOf(edges), [])
  })

  it('plugins/builtins.ts brings in every api.ts (the types an embedder gets from yoke/builtins)', () => {
    const listed = importsOf(join('plugins', 'builtins.ts')).sort()
    const faces = PLUGINS.map((p) => join('plugins', p, 'api.ts'))
      .filter((file) => {
        try {
          return readFileSync(join(ROOT, file)) !== undefined
        } catch {
          return false
        }
      })
      .sort()
    assert.deepEqual(listed, faces)
  })

  it('api.ts exports contracts, never a plugin itself', () => {
    const offences = PLUGINS.flatMap((p) => {
      const file = join('plugins', p, 'api.ts')
      let text: string
      try {
        text = readFileSync(join(ROOT, file), 'utf8')
      } catch {
        return []
      }
      return /\bdefault as \w+/.test(text) || /export \{[^}]*\} from '\.\/index\.ts'/.test(text)
        ? [`${file} re-exports its plugin`]
        : []
    })
    assert.deepEqual(offences, [])
  })

  it('what src/, plugins/ and bin/ import is a runtime dependency (a devDependency is absent in an install)', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      name: string
      dependencies: Record<string, string>
    }
    const own = new Set([manifest.name, ...Object.keys(manifest.dependencies)])
    // the web console's front end is bundled at build time (esbuild, into dist/console; the
    // package build leaves its sources out): what it imports is in the bundle, not the install
    const bundled = (file: string) =>
      file.startsWith('plugins/console/ui/app/') || file === 'plugins/console/ui/build.ts'
    const offences = ['src', 'plugins', 'bin'].flatMap((dir) =>
      filesUnder(dir)
        .filter((file) => !bundled(file))
        .flatMap((file) =>
          packagesOf(file)
            .filter((name) => !own.has(name))
            .map((name) => `${file} imports ${name}`),
        ),
    )
    assert.deepEqual([...new Set(offences)], [])
  })

  it('there is no plugins/shared grab-bag', () => {
    const folders = readdirSync(join(ROOT, 'plugins'))
    assert.ok(!folders.includes('shared'), 'plugins/shared exists: give what it holds an owner')
  })
})
