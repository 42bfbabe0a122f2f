import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { defineErrors, errorCatalogue, YokeError } from '../src/errors.ts'
import { ROOT } from './helpers/project.ts'

// the one catalogue: the kernel's codes and every built-in plugin's (declared in its errors.ts)
for (const plugin of readdirSync(join(ROOT, 'plugins'))) {
  const file = join(ROOT, 'plugins', plugin, 'errors.ts')
  if (existsSync(file)) await import(pathToFileURL(file).href)
}
const catalogue = Object.fromEntries(errorCatalogue())
const codes = Object.keys(catalogue)

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : /\.(ts|mjs)$/.test(e.name)
        ? [readFileSync(join(dir, e.name), 'utf8')]
        : [],
  )
}

describe('the error catalogue', () => {
  it('codes are unique UPPER_SNAKE names with a message and a hint', () => {
    assert.equal(new Set(codes).size, codes.length)
    for (const [code, spec] of Object.entries(catalogue)) {
      assert.match(code, /^[A-Z][A-Z_]+$/)
      assert.ok(spec.message.length > 3, code)
      assert.ok(spec.hint.length > 10, code)
    }
  })

  it("README's error table lists exactly the catalogue's codes", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const section = readme.slice(readme.indexOf('## Errors'))
    const table = [...section.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1])
    assert.deepEqual([...table].sort(), [...codes].sort())
    assert.equal(new Set(table).size, table.length, 'no code listed twice')
  })

  it('every code is raised somewhere in src or the built-in plugins', () => {
    const text = [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'plugins'))]
      .filter((s) => !s.includes('export const catalogue') && !s.includes('defineErrors('))
      .join('\n')
    for (const code of codes) assert.ok(text.includes(`'${code}'`), `${code} is never used`)
  })

  it('plugins add codes; a code taken by another owner is refused at once', () => {
    assert.equal(
      catalogue.MCP_VIEW_UNKNOWN?.owner,
      'mcp-server',
      'a plugin code joined the catalogue',
    )
    defineErrors('test-owner', {
      TEST_ONLY_CODE: { message: 'x {a}', hint: 'do the thing, please' },
    })
    assert.equal(new YokeError('TEST_ONLY_CODE' as never, { a: 1 }).message, 'x 1')
    assert.throws(
      () =>
        defineErrors('someone-else', { TEST_ONLY_CODE: { message: 'y', hint: 'another hint' } }),
      /already declared by test-owner/,
    )
    assert.throws(() => defineErrors('x', { lower: { message: 'y', hint: 'z' } }), /UPPER_SNAKE/)
  })

  it('an error fills its template and points at its site', () => {
    const err = new YokeError(
      'CONFIG_ENV_MISSING',
      { name: 'TOKEN' },
      { file: '/a.yaml', line: 3, col: 7, instance: 'x' },
    )
    assert.equal(err.message, 'environment variable TOKEN is not set')
    assert.equal(err.hint, 'Set TOKEN, or give a default with ${TOKEN:-default}.')
    assert.equal(err.location, '/a.yaml:3:7')
    assert.deepEqual(err.toJSON().instance, 'x')
  })
})
