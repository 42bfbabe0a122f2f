#!/usr/bin/env node
// Runs every *.test.ts under test/, plugins/ and examples/ with node's test runner, two files at a
// time (Node 20's --test does not expand globs). `node test/run.js kernel` runs the matching files.
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const filters = process.argv.slice(2)

function find(dir) {
  let entries
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return []
  }
  return entries.flatMap((e) => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'fixtures' ? [] : find(path)
    return e.name.endsWith('.test.ts') ? [relative(root, path)] : []
  })
}

const files = ['test', 'plugins', 'examples']
  .flatMap((d) => find(join(root, d)))
  .filter((f) => !filters.length || filters.some((x) => f.includes(x)))
  .sort()
if (!files.length) {
  console.error(`no test files match ${filters.join(' ')}`)
  process.exit(1)
}
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--conditions=yoke-source',
    '--test',
    '--test-concurrency=2',
    '--test-timeout=180000',
    ...files,
  ],
  {
    cwd: root,
    stdio: 'inherit',
    // the suite's temp projects run their own plugins: it trusts them (the trust tests unset this)
    env: { ...process.env, NO_COLOR: '1', YOKE_TRUST: '1' },
  },
)
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
