/**
 * The README's preset example, used as a newcomer uses it: inside the repository (where the
 * search finds the repository's own config/yoke.yaml), with `--preset` naming the file. It once
 * failed with `CONFIG_SHAPE instance "serve" has no use` at config/yoke.yaml:37, a file the user
 * never touched: that config left `serve`'s `use:` to the default preset and did not say so. The
 * example is read from the README itself, so the test follows what the README shows.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { ROOT, runYoke, suiteProjects } from './helpers/project.ts'

const projects = suiteProjects()

/** The ```yaml block of the README that starts with `# presets/my-preset.yaml`. */
function readmePreset(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const block = /```yaml\n(# presets\/my-preset\.yaml\n[\s\S]*?)```/.exec(readme)
  assert.ok(block, 'the README shows presets/my-preset.yaml')
  return block[1]!
}

test("the README's preset example composes inside the repository with --preset", async () => {
  const yaml = readmePreset()
  // the plugins it names, beside it (as `use: ./plugins/…` says: relative to the preset's file)
  const p = projects({
    'presets/my-preset.yaml': yaml,
    'presets/plugins/audit.ts':
      "export default { name: 'audit', configSchema: { type: 'object' }, apply() {} }\n",
    'presets/plugins/greeter.mjs': "export default { name: 'greeter', apply() {} }\n",
  })
  // from the repository's root: its config/yoke.yaml is the project config the search finds
  const r = await runYoke(['config', 'validate', '--preset', p.path('presets/my-preset.yaml')], {
    cwd: ROOT,
    home: p.home,
    timeoutMs: 90_000,
  })
  assert.equal(r.code, 0, r.stdout + r.stderr)
  assert.doesNotMatch(r.stdout + r.stderr, /CONFIG_SHAPE|config\/yoke\.yaml:\d+/)
  assert.match(r.stdout, /^valid: /m)
})

test('every instance of the repository config names its use (it does not lean on a preset unsaid)', () => {
  const text = readFileSync(join(ROOT, 'config/yoke.yaml'), 'utf8')
  // instance keys at two spaces under plugins:, each followed (before the next key) by `use:`,
  // except those of the base preset every preset extends (skills)
  const keys = [...text.matchAll(/^ {2}([\w-]+):\s*$/gm)].map((m) => m[1]!)
  const base = readFileSync(join(ROOT, 'presets/base.yaml'), 'utf8')
  const inBase = new Set([...base.matchAll(/^ {2}([\w-]+):\s*$/gm)].map((m) => m[1]!))
  for (const key of keys) {
    if (inBase.has(key)) continue
    const after = text.slice(text.indexOf(`\n  ${key}:`) + 1)
    const entry = after.split(/\n {2}[\w-]+:\s*\n/)[0]!
    assert.match(entry, /^ {4}use: /m, `instance "${key}" has no use: of its own`)
  }
})
