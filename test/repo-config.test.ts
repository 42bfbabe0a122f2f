// The repository's own config (what `npm start` runs) and the examples it loads by path.
import assert from 'node:assert/strict'
import { after, it } from 'node:test'
import { ROOT, runYoke, tempProject } from './helpers/project.ts'

const home = tempProject()
after(() => home.cleanup())

it('config/yoke.yaml composes offline: the TypeScript example provides a service and taps a hook', async () => {
  const run = await runYoke(['inspect', '--json', '--fresh', '--config', 'config/yoke.yaml'], { cwd: ROOT, home: home.home })
  assert.equal(run.code, 0, run.stderr)
  const snap = JSON.parse(run.stdout)
  assert.deepEqual(
    snap.instances.map((i: any) => [i.key, i.plugin, i.state]),
    [
      ['policy', 'policy', 'active'],
      ['prompt', 'prompt', 'active'],
      ['skills', 'skills', 'active'],
      ['mcp', 'mcp', 'active'],
      ['audit', 'audit-log', 'active'],
      ['greeter', 'greeter', 'active'],
      ['notes', 'notes', 'active'],
      ['packages', 'exec-tools', 'active'],
      ['yoke:runtime', 'runtime', 'active'],
      ['yoke:project', 'project', 'active'],
      ['packages/house-rules', 'exec-package', 'active'],
      ['packages/sys-info', 'exec-package', 'active'],
      ['packages/text-tools', 'exec-package', 'active'],
      ['packages/house-rules/hooks', 'shell-hooks', 'active'],
    ],
  )
  assert.deepEqual(
    snap.services.filter((s: any) => !s.owner.startsWith('yoke:')).sort((a: any, b: any) => a.name.localeCompare(b.name)),
    [
      { name: 'auditLog', owner: 'audit', active: true },
      { name: 'execTools', owner: 'packages', active: true },
      { name: 'mcp', owner: 'mcp', active: true },
      { name: 'prompt', owner: 'prompt', active: true },
      { name: 'skillFilter', owner: 'skills', active: true },
      { name: 'skills', owner: 'skills', active: true },
    ],
  )
  assert.ok(snap.hooks.find((h: any) => h.hook === 'kernel.state').taps.includes('audit-log'))
  const validate = await runYoke(['config', 'validate', '--config', 'config/yoke.yaml'], { cwd: ROOT, home: home.home })
  assert.equal(validate.code, 0, validate.stderr)
})

it('the greeter waits for the audit log when it is disabled, and inspect says who would provide it', async () => {
  const run = await runYoke(['inspect', '--fresh', '--config', 'config/yoke.yaml', '--set', 'plugins.audit.enabled=false'], { cwd: ROOT, home: home.home })
  assert.equal(run.code, 0, run.stderr)
  assert.match(run.stdout, /greeter\s+pending/)
  assert.match(run.stdout, /waits for service "auditLog": provided by instance "audit" \(disabled\)/)
})

it('use: resolves an installed npm package (ESM exports) from the project', async () => {
  const project = tempProject({
    'node_modules/@acme/yoke-plugin-hello/package.json': JSON.stringify({ name: '@acme/yoke-plugin-hello', type: 'module', exports: { '.': { import: './dist/index.js' } } }),
    'node_modules/@acme/yoke-plugin-hello/dist/index.js': `export default { name: 'hello', provides: ['hello'], apply(ctx) { ctx.provide('hello', 'hi') } }\n`,
    'yoke.config.yaml': 'plugins:\n  hello:\n    use: "@acme/yoke-plugin-hello"\n',
  })
  try {
    const run = await runYoke(['inspect', '--json', '--fresh'], { cwd: project.dir, home: project.home })
    assert.equal(run.code, 0, run.stderr)
    assert.deepEqual(
      JSON.parse(run.stdout).services.filter((s: any) => s.owner === 'hello'),
      [{ name: 'hello', owner: 'hello', active: true }],
    )
  } finally {
    project.cleanup()
  }
})
