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

  it('src/kernel has no import cycle', () => {
    const files = filesUnder(join('src', 'kernel'))
    const edges = new Map(
      files.map((f) => [f, importsOf(f).filter((t) => t.startsWith(join('src', 'kernel') + sep))]),
    )
    const cycles: string[] = []
    const state = new Map<string, 'open' | 'done'>()
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return
      if (state.get(file) === 'open') {
        cycles.push([...path.slice(path.indexOf(file)), file].join(' → '))
        return
      }
      state.set(file, 'open')
      for (const next of edges.get(file) ?? []) visit(next, [...path, file])
      state.set(file, 'done')
    }
    for (const file of files) visit(file, [])
    assert.deepEqual(cycles, [])
  })

  it('what src/, plugins/ and bin/ import is a runtime dependency (a devDependency is absent in an install)', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      name: string
      dependencies: Record<string, string>
    }
    const own = new Set([manifest.name, ...Object.keys(manifest.dependencies)])
    const offences = ['src', 'plugins', 'bin'].flatMap((dir) =>
      filesUnder(dir).flatMap((file) =>
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
