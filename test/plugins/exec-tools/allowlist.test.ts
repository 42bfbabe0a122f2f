// Executables and shell hooks get an allowlist environment (issue 14, item 6), checked with real
// processes that print what they received. With no `env` list a tool used to receive PGPASSWORD,
// MYSQL_PWD, DATABASE_URL (password included), APITOKEN, NPM_CONFIG__AUTH and PS4.
import assert from 'node:assert/strict'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import shellHooks from '../../../plugins/shell-hooks/index.ts'
import { execHarness, nodeExe, type ExecHarness } from '../../helpers/exec.ts'
import { until } from '../../helpers/until.ts'
import { toPlugin, validateConfig, type Plugin } from '../../../src/index.ts'

const text = (r: { content: readonly { type: string; text?: string }[] }) =>
  r.content.map((c) => c.text ?? '').join('')

const LEAKS = {
  PGPASSWORD: 'pg-secret',
  MYSQL_PWD: 'mysql-secret',
  DATABASE_URL: 'postgres://app:hunter2@db.internal:5432/app',
  APITOKEN: 'api-secret',
  NPM_CONFIG__AUTH: 'bnBtOnNlY3JldA==',
  PS4: '$(echo hijacked >&2)',
}
const BASH = ['/bin/bash', '/usr/bin/bash'].find((p) => existsSync(p))

/** A hook program that appends the environment it got, as one JSON line, to `<root>/<name>.env`. */
const envHook = (root: string, name: string) =>
  `#!${process.execPath}\nlet s = ''\nprocess.stdin.on('data', (d) => (s += d)).on('end', () => {\n  require('node:fs').appendFileSync(${JSON.stringify(join(root, `${name}.env`))}, JSON.stringify({ env: process.env, cwd: process.cwd() }) + '\\n')\n})\n`

describe('exec-tools and shell hooks: the allowlist environment, with real processes', () => {
  let h: ExecHarness
  const saved = { ...process.env }
  before(async () => {
    Object.assign(process.env, LEAKS, {
      PLAIN_SETTING: 'plain',
      SHELLOPTS: 'xtrace',
      YOKE_SOMETHING: 'kept',
      YOKE_DB_LINK: 'mysql://root:pw@localhost/db',
    })
    h = await execHarness(
      {
        leaky: {
          manifest: {
            name: 'leaky',
            version: '1',
            tools: [
              { name: 'env_none', description: 'no env list' },
              { name: 'env_listed', description: 'lists them', env: Object.keys(LEAKS) },
            ],
            hooks: [
              {
                event: 'after_tool_call',
                command: ['./pkg-hook.js'],
                tool_filter: ['env_listed'],
                env: ['MYSQL_PWD'],
              },
            ],
          },
          exe: nodeExe(
            `process.stdout.write(JSON.stringify({ output: JSON.stringify({ env: process.env, cwd: process.cwd() }) }))`,
          ),
        },
        ...(BASH && {
          bashy: {
            manifest: {
              name: 'bashy',
              version: '1',
              tools: [{ name: 'bash_tool', description: 'a bash script' }],
            },
            exe: `#!${BASH}\necho "bash ran"\n`,
          },
        }),
      },
      {},
      [
        [
          shellHooks,
          {
            hooks: [
              { event: 'after_tool_call', command: ['./plain-hook.js'], tool_filter: ['env_none'] },
              {
                event: 'after_tool_call',
                command: ['./listing-hook.js'],
                tool_filter: ['env_none'],
                env: ['APITOKEN', 'PS4'],
              },
            ],
          },
          'guards',
        ],
      ],
      (root) => {
        for (const name of ['plain-hook', 'listing-hook'])
          writeFileSync(join(root, `${name}.js`), envHook(root, name), { mode: 0o755 })
        writeFileSync(join(root, 'packages/leaky/pkg-hook.js'), envHook(root, 'pkg-hook'), {
          mode: 0o755,
        })
      },
    )
  })
  /**
   * The after_tool_call hooks each tool's call starts, and how many runs each hook was started
   * for: they run beside the call (its result does not wait for them), so a test that reads a
   * hook's file waits for the run of its own call, and the suite's cleanup waits for every run
   * before it closes the kernel and removes the folder the hooks write in.
   */
  const HOOKS: Record<string, string[]> = {
    env_none: ['plain-hook', 'listing-hook'],
    env_listed: ['pkg-hook'],
  }
  const started = new Map<string, number>()
  const runs = (name: string) => {
    const file = join(h.root, `${name}.env`)
    return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').length : 0
  }
  after(async () => {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
    Object.assign(process.env, saved)
    if (h) {
      // a hook's process is not ended by the kernel's close: wait for every run to have written
      await until(
        () => `every hook run to end: ${[...started].map(([n, c]) => `${n} ${runs(n)}/${c}`)}`,
        () => [...started].every(([name, count]) => runs(name) >= count),
        { ms: 60_000 },
      ).finally(() => h.close())
    }
  })
  const seen = async (tool: string) => {
    const r = await h.rt.call(tool, {})
    for (const hook of HOOKS[tool] ?? []) started.set(hook, (started.get(hook) ?? 0) + 1)
    assert.equal(r.status, 'ok', text(r))
    return JSON.parse(text(r)) as { env: Record<string, string>; cwd: string }
  }
  /** What the hook saw in the run of the last call that started it. */
  const hookSaw = async (name: string) => {
    const count = started.get(name) ?? 0
    assert.ok(count > 0, `no call started ${name}`)
    // a process start on a loaded machine takes seconds: the bound only catches a hook that never runs
    await until(`${name} to run (run ${count})`, () => runs(name) >= count, { ms: 60_000 })
    const file = join(h.root, `${name}.env`)
    return JSON.parse(
      readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .at(count - 1)!,
    ) as {
      env: Record<string, string>
      cwd: string
    }
  }

  it('a tool with no env list receives none of PGPASSWORD, MYSQL_PWD, DATABASE_URL, APITOKEN, NPM_CONFIG__AUTH, PS4', async () => {
    const { env, cwd } = await seen('env_none')
    const leaked = [...Object.keys(LEAKS), 'PLAIN_SETTING', 'SHELLOPTS', 'YOKE_DB_LINK'].filter(
      (name) => name in env,
    )
    assert.deepEqual(leaked, [], 'these reached the tool')
    assert.equal(env.PATH, process.env.PATH)
    assert.equal(env.YOKE_SOMETHING, 'kept', 'YOKE_* is an essential')
    assert.equal(env.PWD, cwd, "PWD is the tool's own directory")
    assert.equal(env.YOKE_WORK_DIR, cwd)
    for (const name of Object.keys(env))
      assert.ok(
        /^(PATH|HOME|USER|LOGNAME|SHELL|TMPDIR|TMP|TEMP|LANG|LANGUAGE|TZ|TERM|PWD)$|^(LC|YOKE|OCTOS)_/.test(
          name,
        ),
        `${name} is not on the documented list`,
      )
  })

  it('each of them reaches a tool whose env lists it, the credential URL included', async () => {
    const { env } = await seen('env_listed')
    for (const [name, value] of Object.entries(LEAKS)) assert.equal(env[name], value, name)
    assert.equal(env.PLAIN_SETTING, undefined)
  })

  it('a bash tool is not hijacked through SHELLOPTS=xtrace and PS4 from the host', async (t) => {
    if (!BASH) return t.skip('no bash on this machine')
    const r = await h.rt.call('bash_tool', {})
    assert.equal(r.status, 'ok', text(r))
    assert.doesNotMatch(text(r), /hijacked/, 'PS4 ran under xtrace')
    assert.equal(text(r), 'bash ran')
  })

  it('shell hooks get the same rules: the essentials, PWD their own directory, and what their env lists', async () => {
    await seen('env_none')
    const plain = await hookSaw('plain-hook')
    const leaked = [...Object.keys(LEAKS), 'PLAIN_SETTING', 'SHELLOPTS'].filter(
      (name) => name in plain.env,
    )
    assert.deepEqual(leaked, [], 'these reached the hook')
    assert.equal(plain.env.PATH, process.env.PATH)
    assert.equal(plain.env.PWD, plain.cwd)
    const listing = await hookSaw('listing-hook')
    assert.equal(listing.env.APITOKEN, LEAKS.APITOKEN)
    assert.equal(listing.env.PS4, LEAKS.PS4)
    assert.equal(listing.env.PGPASSWORD, undefined)
    await seen('env_listed')
    const pkg = await hookSaw('pkg-hook')
    assert.equal(pkg.env.MYSQL_PWD, LEAKS.MYSQL_PWD, "a package hook's env list, from its manifest")
    assert.equal(pkg.env.APITOKEN, undefined)
    assert.equal(pkg.cwd, join(h.root, 'packages/leaky'))
  })
})

describe('shell hooks: the env list in config', () => {
  it("names are checked like a tool's: a hijack variable or a malformed name is a config error", () => {
    const plugin = toPlugin(shellHooks) as Plugin
    const check = (env: string[]) =>
      validateConfig(plugin, { hooks: [{ event: 'before_tool_call', command: ['./g'], env }] })
    assert.ok('value' in check(['GUARD_TOKEN', 'PS4']))
    const bad = check(['OK', 'LD_PRELOAD', 'A-B'])
    assert.ok('issues' in bad)
    assert.deepEqual(
      bad.issues.map((i) => i.message),
      [
        '"LD_PRELOAD": name is a known process-hijack env var',
        '"A-B": name must use only [A-Za-z0-9_]',
      ],
    )
  })
})
