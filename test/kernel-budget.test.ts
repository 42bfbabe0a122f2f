// The kernel stays small: src/kernel, src/config (and src/runtime when it exists) under a line budget.
import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { it } from 'node:test'
import { ROOT } from './helpers/project.ts'

const BUDGET = 3400

/** Lines that hold code: not blank, not only a comment. */
function codeLines(file: string): number {
  let inBlock = false
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((raw) => {
      const line = raw.trim()
      if (inBlock) {
        if (line.includes('*/')) inBlock = false
        return false
      }
      if (line.startsWith('/*')) {
        inBlock = !line.includes('*/')
        return false
      }
      return line !== '' && !line.startsWith('//')
    }).length
}

it(`the kernel is under ${BUDGET} lines of code`, () => {
  const dirs = ['src/kernel', 'src/config', 'src/runtime']
    .map((d) => join(ROOT, d))
    .filter(existsSync)
  const files = dirs.flatMap((d) =>
    readdirSync(d, { recursive: true, encoding: 'utf8' })
      .filter((f) => /\.(ts|mjs)$/.test(f) && !f.endsWith('.test.ts'))
      .map((f) => join(d, f)),
  )
  const total = files.reduce((sum, f) => sum + codeLines(f), 0)
  console.log(`kernel: ${total} lines of code in ${files.length} files (budget ${BUDGET})`)
  assert.ok(total <= BUDGET, `the kernel has ${total} lines of code; the budget is ${BUDGET}`)
})
