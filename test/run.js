#!/usr/bin/env node
// Runs every *.test.ts under test/, plugins/ and examples/ with node's test runner, two files at a
// time (Node 20's --test does not expand globs). `node test/run.js kernel` runs the matching files.
//
// The bound: under --test, Node 20 applies --test-timeout to each FILE as a whole (its process's
// one top-level test), not to each test in it. A file's time is the sum of its tests' work, and a
// loaded machine (CI, other jobs) multiplies it: a 180 s bound failed a CLI file that takes 75 s
// at a load of 11. So this bound is no measure of speed: it only ends a file that hangs, so the
// run finishes. Each test bounds its own waits (helpers/until.ts, runYoke, DevProcess), and names
// what it waited for when one runs out. YOKE_TEST_FILE_TIMEOUT_MS overrides it.
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

const FILE_TIMEOUT_MS = Number(process.env.YOKE_TEST_FILE_TIMEOUT_MS) || 20 * 60_000

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
    `--test-timeout=${FILE_TIMEOUT_MS}`,
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
