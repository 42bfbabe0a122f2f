import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { ModuleLoader } from '../../src/config/modules.ts'
import { resolveConfig } from '../../src/config/resolve.ts'
import { pathKey } from '../../src/config/yaml.ts'
import { runYoke, tempProject } from '../helpers/project.ts'

const PLUGIN = `export default { name: 'probe', apply() {} }\n`

function layeredProject() {
  return tempProject({
    'p.mjs': PLUGIN,
    'presets/parent.yaml': [
      'plugins:',
      '  a:',
      '    use: ../p.mjs',
      '    config:',
      '      x: 1',
      '      list: [1, 2]',
      '      nested: { keep: 1, drop: 2 }',
      '      fromParent: parent',
      '  b:',
      '    use: ../p.mjs',
      '',
    ].join('\n'),
    'presets/child.yaml': [
      'extends: parent',
      'plugins:',
      '  a:',
      '    config:',
      '      x: 2',
      '      token: ${YOKE_TEST_TOKEN}',
      '      region: ${YOKE_TEST_UNSET:-eu}',
      '      literal: $${NOT_EXPANDED}',
      '',
    ].join('\n'),
    'yoke.config.yaml': [
      'preset: child',
      'plugins:',
      '  a:',
      '    config:',
      '      list: [3]',
      '',
    ].join('\n'),
    '.home/patch.yaml': [
      'plugins:',
      '  a:',
      '    config:',
      '      nested:',
      '        drop: null',
      '',
    ].join('\n'),
    'patch1.yaml': ['plugins:', '  b:', '    enabled: false', ''].join('\n'),
    'patch2.yaml': [
      'plugins:',
      '  a:',
      '    config:',
      '      x: 3',
      '      fromParent: null',
      '',
    ].join('\n'),
  })
}

describe('layered config', () => {
  const project = layeredProject()
  after(() => project.cleanup())
  const env = { YOKE_TEST_TOKEN: 's3cret' }

  it('each layer overrides the one below; arrays replace; null deletes; enabled:false disables', async () => {
    const resolved = await resolveConfig(
      {
        cwd: project.dir,
        home: project.home,
        env,
        patches: ['patch1.yaml', 'patch2.yaml'],
        sets: ['plugins.a.config.x=4', 'plugins.a.config.added=[a, b]'],
      },
      new ModuleLoader(),
    )
    assert.deepEqual(resolved.errors, [])
    assert.deepEqual(
      resolved.stack.layers.map((l) => l.kind),
      ['preset', 'preset', 'project', 'user', 'patch', 'patch', 'set', 'set'],
    )
    const a = resolved.instances.find((i) => i.key === 'a')!
    assert.deepEqual(a.raw, {
      x: 4,
      list: [3],
      nested: { keep: 1 },
      token: 's3cret',
      region: 'eu',
      literal: '${NOT_EXPANDED}',
      added: ['a', 'b'],
    })
    const b = resolved.instances.find((i) => i.key === 'b')!
    assert.equal(b.enabled, false)
    const where = (...path: string[]) => {
      const pos = resolved.merged.origins.get(pathKey(['plugins', ...path]))
      return pos && `${pos.file.replace(project.dir, '')}:${pos.line}:${pos.col}`
    }
    assert.equal(where('a', 'use'), '/presets/parent.yaml:3:10')
    assert.equal(where('a', 'config', 'list'), '/yoke.config.yaml:5:7')
    assert.equal(where('a', 'config', 'list', '0'), '/yoke.config.yaml:5:14')
    assert.equal(
      where('a', 'config', 'list', '1'),
      undefined,
      'a replaced array forgets its old elements',
    )
    assert.equal(where('a', 'config', 'nested', 'keep'), '/presets/parent.yaml:7:23')
    // a null removes the value, and is where it was removed (trust reads who removed what)
    assert.equal(where('a', 'config', 'nested', 'drop'), '/.home/patch.yaml:5:15')
    assert.equal(where('a', 'config', 'fromParent'), '/patch2.yaml:5:19')
    assert.equal(where('a', 'config', 'x'), '--set plugins.a.config.x=4:0:0')
    assert.equal(where('a', 'config', 'token'), '/presets/child.yaml:6:14')
    assert.equal(where('b', 'enabled'), '/patch1.yaml:3:14')
    assert.ok(resolved.merged.fromEnv.has(pathKey(['plugins', 'a', 'config', 'token'])))
    assert.ok(
      !resolved.merged.fromEnv.has(pathKey(['plugins', 'a', 'config', 'region'])),
      'a default is not a secret',
    )
  })

  it("a missing variable without default in an instance's entry makes it wait, at its file:line", async () => {
    const resolved = await resolveConfig(
      { cwd: project.dir, home: project.home, env: {} },
      new ModuleLoader(),
    )
    assert.deepEqual(resolved.errors, [])
    const err = resolved.instances.find((i) => i.key === 'a')!.waiting!
    assert.equal(err.code, 'PLUGIN_WAITING')
    assert.match(err.message, /YOKE_TEST_TOKEN is not set \(config\.token\)/)
    assert.equal(err.location, `${project.path('presets/child.yaml')}:6:14`)
    assert.match(err.hint, /\$\{YOKE_TEST_TOKEN:-…\}/)
    assert.equal(resolved.instances.find((i) => i.key === 'b')!.waiting, undefined)
  })

  it('--preset beats the project config, and the default preset is base', async () => {
    const picked = await resolveConfig(
      { cwd: project.dir, home: project.home, env, preset: 'parent' },
      new ModuleLoader(),
    )
    assert.equal(picked.stack.preset, project.path('presets/parent.yaml'))
    const empty = tempProject()
    after(() => empty.cleanup())
    const fallback = await resolveConfig(
      { cwd: empty.dir, home: empty.home, env },
      new ModuleLoader(),
    )
    assert.match(fallback.stack.preset, /presets[\\/]base\.yaml$/)
    assert.deepEqual(fallback.errors, [])
  })

  it('config print --explain shows the winning file:line of every value and redacts env values', async () => {
    const run = await runYoke(
      [
        'config',
        'print',
        '--explain',
        '--patch',
        'patch2.yaml',
        '--set',
        'plugins.b.enabled=false',
      ],
      { cwd: project.dir, home: project.home, env },
    )
    assert.equal(run.code, 0, run.stderr)
    const lines = run.stdout.split('\n')
    const line = (start: string) => lines.find((l) => l.trimStart().startsWith(start))
    assert.match(line('x: 3')!, /# patch2\.yaml:4:10$/)
    assert.match(line('list:')!, /# yoke\.config\.yaml:5:7$/)
    assert.match(line('use: ../p.mjs')!, /# presets\/parent\.yaml:3:10$/)
    assert.match(line('enabled: false')!, /# --set plugins\.b\.enabled=false$/)
    assert.match(line('token:')!, /«from env, redacted»/)
    assert.ok(!run.stdout.includes('s3cret'))
    assert.match(run.stdout, /# {3}1\. preset {2}presets\/parent\.yaml/)
    const json = await runYoke(['config', 'print', '--json', '--explain'], {
      cwd: project.dir,
      home: project.home,
      env,
    })
    const parsed = JSON.parse(json.stdout)
    assert.equal(parsed.config.plugins.a.config.token, '«from env, redacted»')
    assert.equal(parsed.origins['plugins.a.config.x'], 'presets/child.yaml:5:10')
  })

  it('the layers are never mutated by merging', async () => {
    const loader = new ModuleLoader()
    const once = await resolveConfig(
      { cwd: project.dir, home: project.home, env, patches: ['patch2.yaml'] },
      loader,
    )
    const snapshot = JSON.stringify(once.stack.layers.map((l) => l.value))
    const { mergeLayers } = await import('../../src/config/merge.ts')
    mergeLayers(once.stack.layers)
    mergeLayers([...once.stack.layers].reverse())
    assert.equal(JSON.stringify(once.stack.layers.map((l) => l.value)), snapshot)
  })

  it('finds the project config where cosmiconfig looks: package.json#yoke and .config/', async () => {
    const pkg = tempProject({
      'package.json': JSON.stringify(
        { name: 'x', yoke: { plugins: { fromPkg: { use: './p.mjs' } } } },
        null,
        2,
      ),
      'p.mjs': PLUGIN,
    })
    const dotConfig = tempProject({
      '.config/yoke.yaml': 'plugins:\n  fromDot:\n    use: ../p.mjs\n',
      'p.mjs': PLUGIN,
    })
    after(() => {
      pkg.cleanup()
      dotConfig.cleanup()
    })
    const a = await resolveConfig({ cwd: pkg.dir, home: pkg.home, env }, new ModuleLoader())
    assert.deepEqual(a.errors, [])
    assert.deepEqual(
      a.instances.map((i) => i.key),
      [
        'policy',
        'prompt',
        'skills',
        'mcp',
        'models',
        'installs',
        'claude-plugins',
        'capabilities',
        'fromPkg',
      ],
    )
    assert.equal(
      a.instances.find((i) => i.key === 'fromPkg')!.site.line,
      6,
      'positions inside package.json',
    )
    const b = await resolveConfig(
      { cwd: dotConfig.dir, home: dotConfig.home, env },
      new ModuleLoader(),
    )
    assert.deepEqual(
      b.instances.map((i) => i.key),
      [
        'policy',
        'prompt',
        'skills',
        'mcp',
        'models',
        'installs',
        'claude-plugins',
        'capabilities',
        'fromDot',
      ],
    )
    assert.equal(b.stack.projectDir, dotConfig.dir)
  })

  it('a diamond of extends applies the shared base once', async () => {
    const diamond = tempProject({
      'p.mjs': PLUGIN,
      'base2.yaml': 'plugins:\n  shared:\n    use: ./p.mjs\n    config: { v: base }\n',
      'left.yaml': 'extends: ./base2.yaml\nplugins:\n  shared:\n    config: { v: left }\n',
      'right.yaml': 'extends: [./base2.yaml]\nplugins:\n  right:\n    use: ./p.mjs\n',
      'top.yaml': 'extends: [./left.yaml, ./right.yaml]\n',
    })
    after(() => diamond.cleanup())
    const r = await resolveConfig(
      { cwd: diamond.dir, home: diamond.home, env, preset: './top.yaml' },
      new ModuleLoader(),
    )
    assert.deepEqual(r.errors, [])
    assert.deepEqual(
      r.stack.layers.map((l) => l.file.replace(diamond.dir + '/', '')),
      ['base2.yaml', 'left.yaml', 'right.yaml', 'top.yaml'],
    )
    assert.deepEqual(r.instances.find((i) => i.key === 'shared')!.raw, { v: 'left' })
  })
})
