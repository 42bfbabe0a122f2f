// Every config file is checked before anything reads it, project config discovery included: a
// FIFO (which blocks a reader forever), a link to /dev/zero (endless bytes) and a huge file each
// end with a clear error that names the file, at once. The FIFO and device cases run the real CLI
// in a child process that is killed after a bound, so a regression that blocks in a read fails
// the test instead of hanging it.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { ModuleLoader } from '../../src/config/modules.ts'
import { resolveConfig } from '../../src/config/resolve.ts'
import { runYoke, suiteProjects, type Project, type RunResult } from '../helpers/project.ts'

const BOUND_MS = 20_000 // the child is killed after this: a blocked read fails the test
const STACK = /^ {4,}at \S|RangeError|heap out of memory/m

function mkfifo(path: string) {
  const r = spawnSync('mkfifo', [path])
  assert.equal(r.status, 0, `mkfifo: ${r.stderr}`)
}

describe('hostile config files: checked before they are read', () => {
  const project = suiteProjects()
  const yoke = (p: Project, ...args: string[]) =>
    runYoke(args, { cwd: p.dir, home: p.home, timeoutMs: BOUND_MS })
  /** exit 2, the error code and the file named, why, and no crash */
  const named = (r: RunResult, code: string, file: string, why: RegExp) => {
    assert.equal(r.code, 2, `exit code\n${r.stdout}\n${r.stderr}`)
    const line = r.stderr.split('\n').find((l) => l.startsWith(`${code} `)) ?? ''
    assert.ok(line, `expected ${code} on stderr:\n${r.stderr}`)
    assert.ok(line.includes(file), `the error names ${file}: ${line}`)
    assert.match(line, why)
    assert.doesNotMatch(r.stderr, STACK, 'no crash')
  }

  it('a yoke.config.yaml that is a FIFO: every command fails at once, naming it', async () => {
    const p = project()
    mkfifo(p.path('yoke.config.yaml'))
    for (const args of [
      ['config', 'validate'],
      ['inspect', '--fresh'],
      ['tools', 'list'],
      ['mcp', 'add', 'mem', '--', 'node'],
    ]) {
      named(
        await yoke(p, ...args),
        'CONFIG_READ_FAILED',
        p.path('yoke.config.yaml'),
        /not a regular file \(a FIFO\)/,
      )
    }
  })

  it('a yoke.config.yaml linked to /dev/zero fails at once, naming it', async () => {
    const p = project()
    symlinkSync('/dev/zero', p.path('yoke.config.yaml'))
    for (const args of [
      ['config', 'validate'],
      ['inspect', '--fresh'],
      ['mcp', 'remove', 'x'],
    ]) {
      named(
        await yoke(p, ...args),
        'CONFIG_READ_FAILED',
        p.path('yoke.config.yaml'),
        /not a regular file \(a character device\)/,
      )
    }
  })

  it('a huge yoke.config.yaml (600 MB, sparse) is refused by its size, unread', async () => {
    const p = project()
    writeFileSync(p.path('yoke.config.yaml'), '')
    truncateSync(p.path('yoke.config.yaml'), 600 * 1024 ** 2)
    named(
      await yoke(p, 'config', 'validate'),
      'CONFIG_TOO_LARGE',
      p.path('yoke.config.yaml'),
      /629145600 bytes; a config file may be at most 1048576/,
    )
    // in process too: the search and the reader never allocate it
    const before = process.memoryUsage().rss
    const resolved = await resolveConfig({ cwd: p.dir, home: p.home }, new ModuleLoader())
    assert.equal(resolved.errors[0]?.code, 'CONFIG_TOO_LARGE')
    assert.equal(resolved.errors[0]?.location, p.path('yoke.config.yaml'))
    assert.ok(process.memoryUsage().rss - before < 200 * 1024 ** 2, 'the file was not read')
  })

  it('later places and package.json are checked the same way', async () => {
    const dot = project()
    mkdirSync(dot.path('.config'))
    mkfifo(dot.path('.config/yoke.yaml'))
    named(
      await yoke(dot, 'config', 'validate'),
      'CONFIG_READ_FAILED',
      dot.path('.config/yoke.yaml'),
      /a FIFO/,
    )
    // package.json is read (to see its yoke key) only through the same reader
    const pkg = project()
    mkfifo(pkg.path('package.json'))
    named(
      await yoke(pkg, 'config', 'validate'),
      'CONFIG_READ_FAILED',
      pkg.path('package.json'),
      /a FIFO/,
    )
  })

  it('a FIFO named by --config, --patch or --preset fails at once too', async () => {
    const p = project({ 'yoke.config.yaml': 'preset: minimal\n' })
    mkfifo(p.path('fifo.yaml'))
    for (const flag of ['--config', '--patch', '--preset'])
      named(
        await yoke(p, 'config', 'validate', flag, './fifo.yaml'),
        'CONFIG_READ_FAILED',
        p.path('fifo.yaml'),
        /a FIFO/,
      )
  })

  it('the search finds what cosmiconfig found: a directory is passed over, parents are searched up to package.json', async () => {
    const p = project({
      '.yokerc.yaml': 'preset: minimal\nplugins:\n  found: { use: ./p.mjs }\n',
      'p.mjs': `export default { name: 'p', apply() {} }\n`,
      'sub/deeper/.keep': '',
      'pkg/package.json': '{"name": "pkg"}',
    })
    mkdirSync(p.path('yoke.config.yaml')) // a directory with a config's name
    const keys = async (cwd: string) =>
      (await resolveConfig({ cwd, home: p.home }, new ModuleLoader())).instances.map((i) => i.key)
    assert.deepEqual(await keys(p.dir), ['found'])
    assert.deepEqual(await keys(p.path('sub/deeper')), ['found'], 'found in a parent')
    const stopped = await resolveConfig({ cwd: p.path('pkg'), home: p.home }, new ModuleLoader())
    assert.equal(stopped.stack.projectFile, undefined, 'the search stops at a package.json')
  })
})
