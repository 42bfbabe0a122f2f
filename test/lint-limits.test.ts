// The function-length limit (eslint.config.js): the lint fails on a function over the limit
// outside the allowlist, and this test keeps the allowlist honest: each listed file holds exactly
// as many long functions as listed, so splitting one forces the number down and the list shrinks.
import assert from 'node:assert/strict'
import { join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { ESLint } from 'eslint'
import tseslint from 'typescript-eslint'
import { ROOT } from './helpers/project.ts'

const { FUNCTION_LINES, LONG_FUNCTIONS } = (await import(join(ROOT, 'eslint.config.js'))) as {
  FUNCTION_LINES: Record<string, unknown>
  LONG_FUNCTIONS: Record<string, number>
}

/** The long functions of `files` with only the length rule on: `file:line name (n lines)`. */
async function longFunctions(files: string[]): Promise<Map<string, string[]>> {
  const eslint = new ESLint({
    cwd: ROOT,
    overrideConfigFile: true,
    overrideConfig: [
      {
        files: ['**/*.ts', '**/*.mts', '**/*.js', '**/*.mjs'],
        languageOptions: { parser: tseslint.parser },
        linterOptions: { reportUnusedDisableDirectives: 'off' },
        rules: { 'max-lines-per-function': ['error', FUNCTION_LINES] },
      },
    ],
  })
  const found = new Map<string, string[]>()
  for (const result of await eslint.lintFiles(files)) {
    const file = relative(ROOT, result.filePath)
    const long = result.messages.filter((m) => m.ruleId === 'max-lines-per-function')
    found.set(
      file,
      long.map((m) => `${file}:${m.line} ${m.message}`),
    )
  }
  return found
}

describe('function length', () => {
  it('each allowlisted file holds exactly the long functions listed (the list only shrinks)', async () => {
    const files = Object.keys(LONG_FUNCTIONS)
    const found = await longFunctions(files)
    const wrong = files.flatMap((file) => {
      const long = found.get(file) ?? []
      return long.length === LONG_FUNCTIONS[file]
        ? []
        : [
            `${file}: listed ${LONG_FUNCTIONS[file]}, holds ${long.length}${long.length ? `:\n  ${long.join('\n  ')}` : ''}`,
          ]
    })
    assert.deepEqual(
      wrong,
      [],
      'set the number in eslint.config.js LONG_FUNCTIONS to what the file holds (a split function lowers it)',
    )
  })

  it('the lint fails on a long function in a file that is not listed', async () => {
    const body = Array.from({ length: 90 }, (_, i) => `  const v${i} = ${i}`).join('\n')
    const eslint = new ESLint({ cwd: ROOT })
    const [result] = await eslint.lintText(`export function long() {\n${body}\n  return v0\n}\n`, {
      filePath: join(ROOT, 'src', 'kernel', 'not-listed.ts'),
    })
    assert.ok(
      result!.messages.some((m) => m.ruleId === 'max-lines-per-function'),
      JSON.stringify(result!.messages),
    )
  })
})
