// The bad-input corpus: broken presets, patches and plugin modules. Each must end with an error
// code from the catalogue, the file:line:col it points at, and a hint (composed in process; two
// cases also through `yoke config validate`, for exit 2 and the printed format); and none may harm
// a running `yoke dev` (checked in the last suite).
import assert from 'node:assert/strict'
import { truncateSync, writeFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { composeOptions, parseCommandArgs } from '../../src/cli/args.ts'
import { formatError } from '../../src/cli/output.ts'
import { Composition } from '../../src/config/composer.ts'
import { ModuleLoader } from '../../src/config/modules.ts'
import { resolveConfig } from '../../src/config/resolve.ts'
import { catalogue, YokeError } from '../../src/errors.ts'
import { DevProcess, runYoke, tempProject, type Project } from '../helpers/project.ts'

const ZOD = import.meta.resolve('zod')
const GOOD = `preset: minimal\nplugins:\n  ok:\n    use: ./ok.mjs\n  typed:\n    use: ./typed.mjs\n    config: { port: 8080, name: svc }\n`

interface Case {
  name: string
  /** the file the case writes (relative), its text, and where the error must point */
  file: string
  text: string | (() => void)
  code: keyof typeof catalogue
  at: RegExp | null
  /** how the broken file is used; default: as a --patch */
  as?: 'patch' | 'preset' | 'project' | 'module'
  args?: string[]
}

const billionLaughs = [
  'a: &a [x, x, x, x, x, x, x, x, x, x]',
  ...'bcdefgh'.split('').map(
    (c, i) =>
      `${c}: &${c} [${Array(10)
        .fill('*' + 'abcdefgh'[i])
        .join(', ')}]`,
  ),
  'plugins: {}',
].join('\n')

const CASES: Case[] = [
  {
    name: 'unclosed quote',
    file: 'bad.yaml',
    text: 'plugins:\n  ok:\n    use: "./ok.mjs\n',
    code: 'CONFIG_SYNTAX',
    at: /bad\.yaml:3:\d+$/,
  },
  {
    name: 'bad indentation',
    file: 'bad.yaml',
    text: 'plugins:\n  ok:\n      use: ./ok.mjs\n    config: {}\n',
    code: 'CONFIG_SYNTAX',
    at: /bad\.yaml:\d+:\d+$/,
  },
  {
    name: 'tab indentation',
    file: 'bad.yaml',
    text: 'plugins:\n\tok:\n\t\tuse: ./ok.mjs\n',
    code: 'CONFIG_SYNTAX',
    at: /bad\.yaml:2:\d+$/,
  },
  {
    name: 'an alias as a key (it would hide the key it names from trust and the schema)',
    file: 'bad.yaml',
    text: 'x-u: &u use\nplugins:\n  ok:\n    *u : ./ok.mjs\n',
    code: 'CONFIG_SYNTAX',
    at: /bad\.yaml:4:5$/,
  },
  {
    name: 'a collection as a key',
    file: 'bad.yaml',
    text: 'plugins:\n  ok:\n    ? [use]\n    : ./ok.mjs\n',
    code: 'CONFIG_SYNTAX',
    at: /bad\.yaml:3:\d+$/,
  },
  {
    name: 'duplicate key',
    file: 'bad.yaml',
    text: 'plugins:\n  ok:\n    use: ./ok.mjs\n    use: ./other.mjs\n',
    code: 'CONFIG_DUPLICATE_KEY',
    at: /bad\.yaml:4:5$/,
  },
  {
    name: 'duplicate instance',
    file: 'bad.yaml',
    text: 'plugins:\n  ok: { use: ./ok.mjs }\n  ok: { use: ./ok.mjs }\n',
    code: 'CONFIG_DUPLICATE_KEY',
    at: /bad\.yaml:3:3$/,
  },
  {
    name: 'unknown plugin',
    file: 'bad.yaml',
    text: 'plugins:\n  x:\n    use: no-such-plugin\n',
    code: 'PLUGIN_NOT_FOUND',
    at: /bad\.yaml:3:10$/,
  },
  {
    name: 'missing plugin file',
    file: 'bad.yaml',
    text: 'plugins:\n  x:\n    use: ./missing.ts\n',
    code: 'PLUGIN_NOT_FOUND',
    at: /bad\.yaml:3:10$/,
  },
  {
    name: 'wrong config type',
    file: 'bad.yaml',
    text: 'plugins:\n  typed:\n    config:\n      port: eighty\n',
    code: 'CONFIG_INVALID',
    at: /bad\.yaml:4:13$/,
  },
  {
    name: 'missing required config',
    file: 'bad.yaml',
    text: 'plugins:\n  typed:\n    config:\n      name: null\n',
    code: 'CONFIG_INVALID',
    at: /\.yaml:\d+:\d+$/,
  },
  {
    name: 'enabled is not a boolean',
    file: 'bad.yaml',
    text: 'plugins:\n  ok:\n    enabled: "yes"\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:3:14$/,
  },
  {
    name: 'plugins is a list',
    file: 'bad.yaml',
    text: 'plugins:\n  - use: ./ok.mjs\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:1:1$/,
  },
  {
    name: 'layer is a list',
    file: 'bad.yaml',
    text: '- plugins\n- more\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:1:1$/,
  },
  {
    name: 'layer is a scalar',
    file: 'bad.yaml',
    text: 'just a string\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:1:1$/,
  },
  {
    name: 'unknown top-level key',
    file: 'bad.yaml',
    text: 'plugin:\n  ok: { use: ./ok.mjs }\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:1:1$/,
  },
  {
    name: 'unknown instance key',
    file: 'bad.yaml',
    text: 'plugins:\n  ok:\n    usee: ./ok.mjs\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:3:5$/,
  },
  {
    name: 'instance key with a dot',
    file: 'bad.yaml',
    text: 'plugins:\n  my.plugin:\n    use: ./ok.mjs\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:2:3$/,
  },
  {
    name: 'config is a string',
    file: 'bad.yaml',
    text: 'plugins:\n  ok:\n    config: "port=1"\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:3:13$/,
  },
  {
    name: 'instance without use',
    file: 'bad.yaml',
    text: 'plugins:\n  fresh:\n    config: { a: 1 }\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:2:3$/,
  },
  {
    name: 'empty use',
    file: 'bad.yaml',
    text: 'plugins:\n  ok:\n    use: ""\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:3:10$/,
  },
  {
    // inside an instance's entry it makes that instance wait instead (test/config/env-wait.test.ts)
    name: 'missing environment variable at a top-level key',
    file: 'bad.yaml',
    text: 'runtime:\n  timeoutMs: ${YOKE_SURELY_UNSET_VAR}\n',
    code: 'CONFIG_ENV_MISSING',
    at: /bad\.yaml:2:14$/,
  },
  {
    name: 'alias bomb',
    file: 'bad.yaml',
    text: billionLaughs,
    code: 'CONFIG_ALIAS_LIMIT',
    at: /bad\.yaml:1:1$/,
  },
  {
    name: 'deep flow nesting',
    file: 'bad.yaml',
    text: 'plugins:\n  ok:\n    config:\n      x: ' + '['.repeat(5000) + ']'.repeat(5000) + '\n',
    code: 'CONFIG_TOO_DEEP',
    at: /bad\.yaml:4:\d+$/,
  },
  {
    name: 'deep block nesting',
    file: 'bad.yaml',
    text:
      'plugins:\n  ok:\n    config:\n' +
      Array.from({ length: 40 }, (_, i) => ' '.repeat(6 + 2 * i) + `k${i}:`).join('\n') +
      ' 1\n',
    code: 'CONFIG_TOO_DEEP',
    at: /bad\.yaml:\d+:\d+$/,
  },
  {
    name: 'a 50 MB file',
    file: 'big.yaml',
    text: () => {},
    code: 'CONFIG_TOO_LARGE',
    at: /big\.yaml$/,
  },
  {
    name: 'binary garbage',
    file: 'garbage.yaml',
    text: () => {},
    code: 'CONFIG_NOT_TEXT',
    at: /garbage\.yaml:1:1$/,
  },
  {
    name: 'NUL bytes in text',
    file: 'bad.yaml',
    text: 'plugins:\n  ok:\u0000\n',
    code: 'CONFIG_NOT_TEXT',
    at: /bad\.yaml:2:6$/,
  },
  {
    name: 'extends cycle',
    file: 'cyc-a.yaml',
    text: 'extends: ./cyc-b.yaml\nplugins: {}\n',
    code: 'CONFIG_EXTENDS_CYCLE',
    at: /cyc-b\.yaml:1:10$/,
    as: 'preset',
  },
  {
    name: 'extends itself',
    file: 'self.yaml',
    text: 'extends: [./self.yaml]\n',
    code: 'CONFIG_EXTENDS_CYCLE',
    at: /self\.yaml:1:11$/,
    as: 'preset',
  },
  {
    name: 'extends an unknown preset',
    file: 'ext.yaml',
    text: 'extends: no-such-preset\n',
    code: 'CONFIG_NOT_FOUND',
    at: /ext\.yaml:1:10$/,
    as: 'preset',
  },
  {
    name: 'project config names an unknown preset',
    file: 'yoke.config.yaml',
    text: 'preset: nope\n',
    code: 'CONFIG_NOT_FOUND',
    at: /yoke\.config\.yaml:1:9$/,
    as: 'project',
  },
  {
    name: 'module throws on import',
    file: 'throws.mjs',
    text: 'throw new Error("no import for you")\n',
    code: 'PLUGIN_IMPORT_FAILED',
    at: /yoke\.config\.yaml:\d+:10$/,
    as: 'module',
  },
  {
    name: 'module with a syntax error',
    file: 'syntax.ts',
    text: 'export default { name: "s", apply( {\n',
    code: 'PLUGIN_IMPORT_FAILED',
    at: /yoke\.config\.yaml:\d+:10$/,
    as: 'module',
  },
  {
    name: 'module exports no plugin',
    file: 'notplugin.mjs',
    text: 'export default 42\n',
    code: 'PLUGIN_INVALID',
    at: /yoke\.config\.yaml:\d+:10$/,
    as: 'module',
  },
  {
    name: 'extends in a patch',
    file: 'bad.yaml',
    text: 'extends: [base]\nplugins: {}\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:1:1$/,
  },
  {
    name: 'preset: in a patch',
    file: 'bad.yaml',
    text: 'preset: minimal\n',
    code: 'CONFIG_SHAPE',
    at: /bad\.yaml:1:1$/,
  },
  {
    name: 'a device file',
    file: 'unused.yaml',
    text: 'plugins: {}\n',
    code: 'CONFIG_READ_FAILED',
    at: /\/dev\/zero$/,
    args: ['--patch', '/dev/zero'],
  },
  {
    name: 'a self-referencing --set',
    file: 'unused.yaml',
    text: 'plugins: {}\n',
    code: 'CONFIG_SET_INVALID',
    at: null,
    args: ['--set', 'plugins.ok.config.x=&a [*a]'],
  },
  {
    name: 'bad --set',
    file: 'unused.yaml',
    text: 'plugins: {}\n',
    code: 'CONFIG_SET_INVALID',
    at: null,
    args: ['--set', 'plugins.ok.enabled'],
  },
]

function project() {
  return tempProject({
    'ok.mjs': `export default { name: 'ok', apply() {} }\n`,
    'typed.mjs': `import { z } from '${ZOD}'\nexport default { name: 'typed', config: z.object({ port: z.number().int(), name: z.string() }), apply() {} }\n`,
    'yoke.config.yaml': GOOD,
    'cyc-b.yaml': 'extends: ./cyc-a.yaml\n',
  })
}

function place(p: ReturnType<typeof project>, c: Case): string[] {
  if (c.file === 'big.yaml') {
    writeFileSync(p.path('big.yaml'), '')
    truncateSync(p.path('big.yaml'), 50 * 1024 * 1024)
  } else if (c.file === 'garbage.yaml') {
    writeFileSync(
      p.path('garbage.yaml'),
      Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256)),
    )
  } else p.write(c.file, c.text as string)
  switch (c.as) {
    case 'preset':
      return ['--preset', `./${c.file}`]
    case 'project':
      return []
    case 'module':
      p.write('yoke.config.yaml', GOOD + `  broken:\n    use: ./${c.file}\n`)
      return []
    default:
      return c.args ?? ['--patch', c.file]
  }
}

/** What `yoke config validate ...args` finds, in process: the composition's config and instance errors. */
async function compose(p: Project, args: string[]): Promise<YokeError[]> {
  const { values } = parseCommandArgs(args)
  const composition = new Composition({
    ...composeOptions({ ...values, cwd: p.dir }),
    home: p.home,
  })
  try {
    const event = await composition.start()
    return [...event.errors, ...event.failed.map((f) => f.error)]
  } finally {
    await composition.close()
  }
}

const CRASH = /at .*\.ts:\d+|TypeError|RangeError/

describe('bad input: each case, composed in process', () => {
  it('the corpus has at least 25 cases', () => assert.ok(CASES.length >= 25, String(CASES.length)))

  for (const c of CASES) {
    it(`${c.name} → ${c.code}`, async () => {
      const p = project()
      try {
        const errors = await compose(p, place(p, c))
        const err = errors.find((e) => e.code === c.code)
        assert.ok(err, `expected ${c.code}, got ${errors.map((e) => e.code).join(', ') || 'none'}`)
        for (const e of errors) {
          assert.ok(e instanceof YokeError && e.code in catalogue, `${e.code} is in the catalogue`)
          const cause = e.cause instanceof Error ? `${e.cause.name}: ${e.cause.message}` : ''
          assert.doesNotMatch(`${e.message}\n${e.hint}\n${cause}`, CRASH, 'no crash or stack trace')
        }
        if (c.at) assert.match(err.location ?? '', c.at)
        assert.ok(err.hint.length > 10, 'a hint that says what to do')
        assert.match(formatError(err), new RegExp(`^${c.code} [\\s\\S]*\\n {2}hint \\S`))
      } finally {
        p.cleanup()
      }
    })
  }
})

describe('bad input: yoke config validate', () => {
  // two cases through the real CLI: a broken layer and a broken plugin module
  const cases = ['duplicate key', 'module throws on import'].map((name) => {
    const c = CASES.find((c) => c.name === name)
    if (!c) throw new Error(`no case named "${name}"`)
    return c
  })
  for (const c of cases) {
    it(`${c.name}: exit 2, the error as JSON and as text`, async () => {
      const p = project()
      try {
        const args = place(p, c)
        const options = { cwd: p.dir, home: p.home, timeoutMs: 30000 }
        const [json, human] = await Promise.all([
          runYoke(['config', 'validate', '--json', ...args], options),
          runYoke(['config', 'validate', ...args], options),
        ])
        assert.equal(json.code, 2, `exit code\n${json.stdout}\n${json.stderr}`)
        const out = JSON.parse(json.stdout)
        assert.equal(out.ok, false)
        const err = out.errors.find((e: any) => e.code === c.code)
        assert.ok(err, `expected ${c.code}, got ${out.errors.map((e: any) => e.code).join(', ')}`)
        assert.match(err.location, c.at!)
        assert.ok(err.hint.length > 10, 'a hint that says what to do')
        assert.doesNotMatch(json.stderr, CRASH, 'no crash or stack trace')
        assert.equal(human.code, 2)
        assert.equal(human.stdout, '')
        assert.match(
          human.stderr,
          new RegExp(
            `^${c.code} .+\\n {2}at .+:\\d+:\\d+.*\\n(?: {2}cause .+\\n)? {2}hint .+\\n\\d+ errors?\\n$`,
          ),
        )
      } finally {
        p.cleanup()
      }
    })
  }
})

describe('bad input does not harm a running yoke dev', () => {
  const p = project()
  let dev: DevProcess
  let fibers: string
  const state = (e: any) => JSON.stringify(e.instances.map((i: any) => [i.key, i.state, i.fiber]))
  before(async () => {
    dev = new DevProcess([], { cwd: p.dir, home: p.home })
    await dev.ready()
    fibers = state(dev.events.find((e) => e.type === 'loaded'))
  })
  after(async () => {
    assert.equal(await dev.stop(), 0, dev.stderr)
    p.cleanup()
  })

  // each broken file becomes the user patch (or the edited preset) of the running dev
  for (const c of CASES.filter((c) => !c.as && !c.args && typeof c.text === 'string')) {
    it(`${c.name}: rejected, the running instances untouched`, async () => {
      const event = await dev.reloadAfter(() => p.write('.home/patch.yaml', c.text as string))
      assert.equal(event.ok, false)
      assert.equal(event.errors[0].code, c.code)
      assert.equal(state(event), fibers)
    })
  }

  it('a broken module fails only its own instance, and the fix recovers it', async () => {
    p.write('throws.mjs', 'throw new Error("no")\n')
    const bad = await dev.reloadAfter(() =>
      p.write('.home/patch.yaml', 'plugins:\n  broken:\n    use: ../throws.mjs\n'),
    )
    assert.equal(bad.ok, true)
    assert.equal(bad.failed[0].error.code, 'PLUGIN_IMPORT_FAILED')
    const states = Object.fromEntries(bad.instances.map((i: any) => [i.key, i.state]))
    assert.deepEqual(states, { ok: 'active', typed: 'active', broken: 'failed' })
    const fixed = await dev.reloadAfter(() =>
      p.write('throws.mjs', `export default { name: 'fixed', apply() {} }\n`),
    )
    assert.deepEqual(fixed.added, ['broken'])
    assert.equal(fixed.instances.find((i: any) => i.key === 'broken').state, 'active')
  })
})

describe('a layer written for another preset', () => {
  it('an instance with no use: that a built-in preset defines names that preset and how to choose it', async () => {
    const p = tempProject({
      'yoke.config.yaml': 'plugins:\n  serve:\n    config: { http: { port: 0 } }\n',
    })
    after(() => p.cleanup())
    const resolved = await resolveConfig({ cwd: p.dir, home: p.home, env: {} }, new ModuleLoader())
    const error = resolved.errors.find((e) => e.code === 'CONFIG_SHAPE')
    assert.ok(error, resolved.errors.map((e) => e.message).join('\n'))
    assert.match(error.message, /instance "serve" has no use/)
    assert.match(error.message, /the preset "default" defines it/)
    assert.match(
      error.message,
      /add `preset: default` to the project config, or pass --preset default/,
    )
    assert.equal(error.site.line, 2)
  })
})
