// Config edits (`yoke mcp add|remove|import --write`, through cli.editConfig) never damage the
// file: mode and owner kept, symlinks written through, read-only files refused, YAML that cannot be
// edited safely refused with a catalogue error (never a stack trace), the file read and edited
// under its lock, so concurrent edits all land, and a change by an editor that takes no lock fails
// the command instead of being lost. Everything through the real CLI on real files; the concurrent cases use a real lock
// holder (proper-lockfile in this process) and real concurrent yoke processes.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { describe, it } from 'node:test'
import lockfile from 'proper-lockfile'
import { parse } from 'yaml'
import { runYoke, suiteProjects, YOKE, type Project, type RunResult } from '../helpers/project.ts'
import { until } from '../helpers/until.ts'

const BASE =
  '# the project config\npreset: minimal\nplugins:\n  # servers\n  keep:\n    use: mcp-client\n    config: { serverName: keep, command: node } # stays\n'
// a stack frame (`    at fn (file:1:2)`); yoke's own `  at file:line:col` line is not one
const STACK = /^ {4,}at \S/m

describe('config edits never damage the file', () => {
  const made = suiteProjects()
  const project = (config: string | null = BASE) =>
    made(config === null ? {} : { 'yoke.config.yaml': config })
  const yoke = (p: Project, ...args: string[]) =>
    runYoke(args, { cwd: p.dir, home: p.home, timeoutMs: 30_000 })
  const add = (p: Project, name: string) => yoke(p, 'mcp', 'add', name, '--', 'node', 'srv.js')
  const config = (p: Project) => readFileSync(p.path('yoke.config.yaml'), 'utf8')
  /** the command failed with `code`, said so without a stack trace, and left the file as it was */
  const refused = (r: RunResult, code: string, exit: number, p: Project, before: string) => {
    assert.equal(r.code, exit, `exit code\n${r.stdout}\n${r.stderr}`)
    assert.match(r.stderr, new RegExp(`^${code} `, 'm'), r.stderr)
    assert.doesNotMatch(r.stderr, STACK, 'no stack trace')
    assert.equal(config(p), before, 'the file is as it was')
  }
  // write-file-atomic's temp file is FILE.<hash>, the lock FILE.lock
  const noLitter = (dir: string) =>
    assert.deepEqual(
      readdirSync(dir).filter((f) => /\.yaml\./.test(f)),
      [],
      'no lock or temp file is left behind',
    )

  it('an add and a remove give back the file byte for byte, however it spaces flow lists and long lines', async () => {
    const written =
      'preset: minimal\nplugins:\n  tight:\n    use: mcp-client\n    config: {serverName: tight, command: node, args: [a.js, b.js]}\n' +
      `  long:\n    use: mcp-client\n    config: { serverName: long, command: node, args: [${'x'.repeat(120)}.js] }\n`
    const p = project(written)
    assert.equal((await add(p, 'mem')).code, 0)
    assert.match(config(p), /args: \[a\.js, b\.js\]\}\n/)
    assert.equal((await yoke(p, 'mcp', 'remove', 'mem')).code, 0)
    assert.equal(config(p), written)
  })

  it('an edit keeps comments, layout and a 0600 mode; nothing is left beside the file', async () => {
    const p = project()
    chmodSync(p.path('yoke.config.yaml'), 0o600)
    const r = await add(p, 'mem')
    assert.equal(r.code, 0, r.stderr)
    const text = config(p)
    assert.ok(text.startsWith('# the project config\n'), text)
    assert.match(text, /# servers\n {2}keep:/)
    assert.match(text, /command: node \} # stays\n/)
    assert.deepEqual(parse(text).plugins['mcp-mem'], {
      use: 'mcp-client',
      config: { serverName: 'mem', command: 'node', args: ['srv.js'] },
    })
    assert.equal(statSync(p.path('yoke.config.yaml')).mode & 0o777, 0o600)
    const removed = await yoke(p, 'mcp', 'remove', 'mem')
    assert.equal(removed.code, 0, removed.stderr)
    assert.equal(config(p), BASE, 'add then remove gives back the file as it was')
    assert.equal(statSync(p.path('yoke.config.yaml')).mode & 0o777, 0o600)
    noLitter(p.dir)
  })

  it('an edit keeps the owner and group', async (t) => {
    if (process.getuid?.() !== 0)
      return t.skip('needs root to give the file another owner (an edit as its owner keeps it)')
    const p = project()
    chownSync(p.path('yoke.config.yaml'), 4242, 4343)
    const r = await add(p, 'mem')
    assert.equal(r.code, 0, r.stderr)
    const stat = statSync(p.path('yoke.config.yaml'))
    assert.deepEqual([stat.uid, stat.gid], [4242, 4343])
    assert.match(config(p), /mcp-mem:/)
  })

  it('a symlinked config is written through to its target; the link stays a link', async () => {
    const p = project(null)
    mkdirSync(p.path('shared'))
    writeFileSync(p.path('shared/yoke.yaml'), BASE, { mode: 0o640 })
    chmodSync(p.path('shared/yoke.yaml'), 0o640)
    symlinkSync('shared/yoke.yaml', p.path('yoke.config.yaml'))
    const r = await add(p, 'mem')
    assert.equal(r.code, 0, r.stderr)
    assert.ok(lstatSync(p.path('yoke.config.yaml')).isSymbolicLink(), 'still a symlink')
    assert.equal(readlinkSync(p.path('yoke.config.yaml')), 'shared/yoke.yaml')
    assert.match(readFileSync(p.path('shared/yoke.yaml'), 'utf8'), /mcp-mem:/)
    assert.equal(statSync(p.path('shared/yoke.yaml')).mode & 0o777, 0o640)
    noLitter(p.dir)
    noLitter(p.path('shared'))
  })

  it('a read-only file is refused and left as it is (even for root)', async () => {
    const p = project()
    chmodSync(p.path('yoke.config.yaml'), 0o444)
    refused(await add(p, 'mem'), 'CONFIG_NOT_WRITABLE', 2, p, BASE)
    refused(await yoke(p, 'mcp', 'remove', 'keep'), 'CONFIG_NOT_WRITABLE', 2, p, BASE)
    assert.equal(statSync(p.path('yoke.config.yaml')).mode & 0o777, 0o444)
  })

  it('a link that leads nowhere is refused, not replaced by a plain file', async () => {
    const p = project(null)
    symlinkSync('missing/yoke.yaml', p.path('yoke.config.yaml'))
    const r = await add(p, 'mem')
    assert.equal(r.code, 2, r.stderr)
    assert.match(r.stderr, /^CONFIG_NOT_WRITABLE .*a link that leads nowhere/m)
    assert.ok(lstatSync(p.path('yoke.config.yaml')).isSymbolicLink())
  })

  describe('YAML that cannot be edited safely: a clear error, the file untouched', () => {
    const cases: Array<{ name: string; text: string; args: string[]; code: string; at?: RegExp }> =
      [
        {
          name: 'an alias with no anchor',
          text: 'plugins:\n  keep: *nowhere\n',
          args: ['remove', 'keep'],
          code: 'CONFIG_SYNTAX',
          at: /yoke\.config\.yaml:2:9/,
        },
        {
          name: 'an alias with no anchor (add)',
          text: 'preset: minimal\nplugins:\n  a: { use: mcp-client, config: *nowhere }\n',
          args: ['add', 'mem', '--', 'node'],
          code: 'CONFIG_SYNTAX',
          at: /yoke\.config\.yaml:3:33/,
        },
        {
          name: 'plugins: is anchored and aliased elsewhere (adding would change both)',
          text: 'x-copy: &servers\n  keep: { use: mcp-client, config: { serverName: k, command: node } }\nplugins: *servers\n',
          args: ['add', 'mem', '--', 'node'],
          code: 'CONFIG_EDIT_UNSAFE',
        },
        {
          name: 'the plugins map is shared by an alias',
          text: 'plugins: &p\n  keep: { use: mcp-client, config: { serverName: k, command: node } }\nx-again: *p\n',
          args: ['add', 'mem', '--', 'node'],
          code: 'CONFIG_EDIT_UNSAFE',
        },
        {
          name: 'removing an entry whose anchor another entry aliases',
          text: 'plugins:\n  a: &s { use: mcp-client, config: { serverName: a, command: node } }\n  b: *s\n',
          args: ['remove', 'a'],
          code: 'CONFIG_EDIT_UNSAFE',
        },
        {
          name: 'removing an entry that comes in through a merge key',
          text: 'x-base: &base\n  a: { use: mcp-client, config: { serverName: a, command: node } }\nplugins:\n  <<: *base\n',
          args: ['remove', 'a'],
          code: 'CONFIG_EDIT_UNSAFE',
        },
        {
          name: 'several YAML documents',
          text: 'plugins: {}\n---\nplugins: {}\n',
          args: ['add', 'mem', '--', 'node'],
          code: 'CONFIG_EDIT_UNSAFE',
        },
        {
          name: 'a syntax error',
          text: 'plugins:\n  a: { use: "mcp-client\n',
          args: ['add', 'mem', '--', 'node'],
          code: 'CONFIG_SYNTAX',
        },
        {
          name: 'a duplicate key',
          text: 'plugins:\n  a: { use: mcp-client }\n  a: { use: mcp-client }\n',
          args: ['add', 'mem', '--', 'node'],
          code: 'CONFIG_DUPLICATE_KEY',
          at: /yoke\.config\.yaml:3:3/,
        },
        {
          name: 'a document that is a list',
          text: '- plugins\n',
          args: ['add', 'mem', '--', 'node'],
          code: 'CONFIG_EDIT_UNSAFE',
        },
      ]
    for (const c of cases) {
      it(`${c.name} → ${c.code}`, async () => {
        const p = project(c.text)
        // --config: the file is edited even when it does not compose
        const r = await yoke(p, 'mcp', ...c.args, '--config', 'yoke.config.yaml')
        refused(r, c.code, 2, p, c.text)
        if (c.at) assert.match(r.stderr, c.at)
        noLitter(p.dir)
      })
    }

    it('anchors the edit does not touch are fine: added beside them, kept as written', async () => {
      const text =
        'x-common: &common\n  use: mcp-client\n  enabled: true\nplugins:\n  keep:\n    <<: *common\n    config: { serverName: keep, command: node }\n'
      const p = project(text)
      const r = await add(p, 'mem')
      assert.equal(r.code, 0, r.stderr)
      assert.ok(config(p).startsWith(text), config(p))
      const printed = await yoke(p, 'config', 'print', '--json')
      assert.equal(printed.code, 0, printed.stderr)
      const plugins = JSON.parse(printed.stdout).config.plugins
      assert.equal(plugins.keep.use, 'mcp-client')
      assert.equal(plugins['mcp-mem'].config.serverName, 'mem')
    })
  })

  it('a change made while the edit waits for the lock is kept: the edit reads the file once it holds the lock', async () => {
    const p = project()
    const file = p.path('yoke.config.yaml')
    const release = await lockfile.lock(file) // another editor holds the lock, as a slow yoke would
    let child: ReturnType<typeof spawn> | undefined
    try {
      child = spawn(process.execPath, [YOKE, 'mcp', 'add', 'mem', '--', 'node', 'srv.js'], {
        cwd: p.dir,
        env: { ...process.env, NO_COLOR: '1', YOKE_HOME: p.home },
      })
      let stderr = ''
      child.stderr!.on('data', (d) => (stderr += d))
      const exited = new Promise<number | null>((resolve) => child!.on('exit', resolve))
      // the command waits for the lock; it has not read the file yet
      await until(
        () => `the command to wait for the lock; stderr: ${stderr}`,
        () => /waiting for .*yoke\.config\.yaml\.lock/.test(stderr),
        { ms: 20_000 },
      )
      const edited = config(p) + '  theirs:\n    use: mcp-client\n'
      writeFileSync(file, edited) // the other editor's change
      await release()
      const timer = setTimeout(() => child?.kill('SIGKILL'), 20_000)
      const code = await exited
      clearTimeout(timer)
      assert.equal(code, 0, stderr)
      assert.doesNotMatch(stderr, STACK)
      const plugins = parse(config(p)).plugins
      assert.ok(plugins.theirs && plugins['mcp-mem'], "the other editor's entry and this one's")
      assert.ok(config(p).startsWith(edited), "the other editor's lines are all there, as written")
      noLitter(p.dir)
    } finally {
      await release().catch(() => {})
      child?.kill('SIGKILL')
    }
  })

  it('a lock left by a crashed process goes stale and is taken over', async () => {
    const p = project()
    const lockDir = p.path('yoke.config.yaml.lock')
    mkdirSync(lockDir)
    const old = new Date(Date.now() - 60_000)
    utimesSync(lockDir, old, old)
    const r = await add(p, 'mem')
    assert.equal(r.code, 0, r.stderr)
    assert.match(config(p), /mcp-mem:/)
    assert.ok(!existsSync(lockDir), 'the lock is released')
  })

  it('concurrent edits: each one waits for the lock and is written on top of the others', async () => {
    const p = project()
    const names = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6']
    const results = await Promise.all(names.map((n) => add(p, n)))
    const plugins = parse(config(p)).plugins
    assert.ok(plugins.keep, 'the existing entry is kept')
    results.forEach((r, i) => {
      assert.equal(r.code, 0, r.stderr)
      assert.doesNotMatch(r.stderr, STACK)
      assert.ok(plugins[`mcp-${names[i]}`], `${names[i]} said it was added, so it is there`)
    })
    noLitter(p.dir)
  })

  it('mcp import --write goes through the same edit: mode kept, link kept', async () => {
    const p = project(null)
    writeFileSync(p.path('real.yaml'), BASE)
    chmodSync(p.path('real.yaml'), 0o600)
    symlinkSync('real.yaml', p.path('yoke.config.yaml'))
    writeFileSync(
      p.path('servers.mcp.json'),
      JSON.stringify({ mcpServers: { memory: { command: 'npx', args: ['-y', 'srv'] } } }),
    )
    const r = await yoke(p, 'mcp', 'import', 'servers.mcp.json', '--write')
    assert.equal(r.code, 0, r.stderr)
    assert.ok(lstatSync(p.path('yoke.config.yaml')).isSymbolicLink())
    assert.equal(statSync(p.path('real.yaml')).mode & 0o777, 0o600)
    assert.equal(
      parse(readFileSync(p.path('real.yaml'), 'utf8')).plugins['mcp-memory'].use,
      'mcp-client',
    )
    chmodSync(p.path('real.yaml'), 0o400)
    const before = readFileSync(p.path('real.yaml'), 'utf8')
    const ro = await yoke(p, 'mcp', 'import', 'servers.mcp.json', '--write')
    assert.equal(ro.code, 2, ro.stderr)
    assert.match(ro.stderr, /^CONFIG_NOT_WRITABLE /m)
    assert.equal(readFileSync(p.path('real.yaml'), 'utf8'), before)
  })
})
