// MCP servers in a running `yoke dev`: hot reload restarts only the edited server, a watched
// .mcp.json (mcp-json), and the CLI: yoke mcp list / restart / import.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { parse } from 'yaml'
import { FIXTURE } from '../../helpers/mcp.ts'
import { DevProcess, ROOT, runYoke, tempProject, type Project } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const server = (name: string, env: Record<string, string> = {}) =>
  `  ${name}:\n    use: mcp-client\n    config:\n      serverName: ${name}\n      command: ${JSON.stringify(process.execPath)}\n      args: [${JSON.stringify(FIXTURE)}]\n      env: ${JSON.stringify(env)}\n`
const mcpJson = (servers: Record<string, Record<string, string>>) =>
  JSON.stringify(
    {
      mcpServers: Object.fromEntries(
        Object.entries(servers).map(([name, env]) => [
          name,
          { command: process.execPath, args: [FIXTURE], env },
        ]),
      ),
    },
    null,
    2,
  )

describe('MCP servers in yoke dev', () => {
  let project: Project
  let dev: DevProcess
  const list = async () => {
    const r = await runYoke(['mcp', 'list', '--json', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(r.code, 0, r.stderr)
    const out = JSON.parse(r.stdout) as {
      source: string
      servers: Array<{ name: string; state: string; pid: number; tools: number }>
    }
    return { source: out.source, by: Object.fromEntries(out.servers.map((s) => [s.name, s])) }
  }
  const connected = async (names: string[], timeoutMs = 15_000) => {
    let by: Awaited<ReturnType<typeof list>>['by'] = {}
    await until(
      () => `${names.join(', ')} to be connected; the last list: ${JSON.stringify(by)}`,
      async () => {
        by = (await list()).by
        return names.every((n) => by[n]?.state === 'connected')
      },
      { ms: timeoutMs, every: 100 },
    )
    return by
  }

  before(async () => {
    project = tempProject({
      'yoke.config.yaml': `plugins:\n${server('alpha')}${server('beta')}  fromfile:\n    use: mcp-json\n`,
      '.mcp.json': mcpJson({ gamma: {} }),
    })
    dev = new DevProcess([], { cwd: project.dir, home: project.home })
    await dev.ready(30_000)
  })
  after(async () => {
    await dev.stop()
    project.cleanup()
  })

  it('yoke mcp list shows the live servers with their pids and tools', async () => {
    const { source } = await list()
    assert.equal(source, 'live from yoke dev')
    // --config names the same project (as npm start does): still the live dev
    const named = await runYoke(
      ['mcp', 'list', '--json', '--config', project.path('yoke.config.yaml')],
      { cwd: ROOT, home: project.home },
    )
    assert.equal(JSON.parse(named.stdout).source, 'live from yoke dev', named.stderr)
    const by = await connected(['alpha', 'beta', 'gamma'])
    assert.ok(by.alpha!.pid > 0 && by.alpha!.tools === 6)
    const text = await runYoke(['mcp', 'list', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.match(
      text.stdout,
      /alpha\s+connected\n\s+stdio · MCP 2025-11-25 \(legacy era\) · fixture 1\.0\.0 · pid \d+ · 6 tools · instance alpha/,
    )
  })

  it('editing one entry restarts that server only: the others keep their process', async () => {
    const before = await connected(['alpha', 'beta', 'gamma'])
    const event = await dev.reloadAfter(() =>
      project.writeAtomic(
        'yoke.config.yaml',
        `plugins:\n${server('alpha')}${server('beta', { EDITED: '1' })}  fromfile:\n    use: mcp-json\n`,
      ),
    )
    assert.deepEqual(event.restarted, ['beta'])
    const after = await connected(['alpha', 'beta', 'gamma'])
    assert.equal(after.alpha!.pid, before.alpha!.pid, 'alpha kept its process')
    assert.equal(after.gamma!.pid, before.gamma!.pid, 'gamma kept its process')
    assert.notEqual(after.beta!.pid, before.beta!.pid, 'beta restarted')
  })

  it('mcp-json: an edit restarts the changed server, adds new ones, and a broken file keeps them running', async () => {
    const before = await connected(['alpha', 'gamma'])
    project.writeAtomic('.mcp.json', mcpJson({ gamma: { EDITED: '1' }, delta: {} }))
    const after = await connected(['gamma', 'delta'])
    assert.notEqual(after.gamma!.pid, before.gamma!.pid)
    assert.equal(after.alpha!.pid, before.alpha!.pid)
    const seen = dev.events.length
    project.writeAtomic('.mcp.json', '{ "mcpServers": { "gamma": ')
    const error = await dev.next(
      (e) =>
        e.type === 'log' && e.level === 'error' && /\.mcp\.json was not loaded/.test(e.message),
      15_000,
      seen,
    )
    assert.match(JSON.stringify(error.error), /not valid JSON/)
    const still = await connected(['gamma', 'delta'])
    assert.equal(still.gamma!.pid, after.gamma!.pid)
  })

  it('yoke mcp restart NAME reconnects that server in the running dev', async () => {
    const before = await connected(['alpha'])
    const r = await runYoke(['mcp', 'restart', 'alpha', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /restarting alpha/)
    let now = before
    await until(
      'alpha to be connected again, as a new process',
      async () => {
        now = await connected(['alpha'])
        return now.alpha!.pid !== before.alpha!.pid
      },
      { ms: 15_000, every: 100 },
    )
    assert.notEqual(now.alpha!.pid, before.alpha!.pid)
    const wrong = await runYoke(['mcp', 'restart', 'nope', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(wrong.code, 2)
    assert.match(
      wrong.stderr,
      /no MCP server is named "nope"; the servers are: alpha, beta, delta, gamma/,
    )
  })
  it("yoke mcp transcript NAME shows the running dev's exchanges with that server, paired", async () => {
    await connected(['beta'])
    const call = await runYoke(
      [
        'tools',
        'call',
        'mcp__beta__echo',
        '--args',
        '{"text":"to the transcript"}',
        '--cwd',
        project.dir,
      ],
      { cwd: project.dir, home: project.home },
    )
    assert.equal(call.code, 0, call.stderr)
    const json = await runYoke(['mcp', 'transcript', 'beta', '--json', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(json.code, 0, json.stderr)
    const out = JSON.parse(json.stdout) as {
      source: string
      entries: Array<{ method: string; from: string; request?: any; response?: any }>
    }
    assert.equal(out.source, 'live from yoke dev')
    const echo = out.entries.find(
      (e) => e.method === 'tools/call' && e.request?.arguments?.text === 'to the transcript',
    )
    assert.ok(echo, JSON.stringify(out.entries.map((e) => e.method)))
    assert.equal(echo.from, 'yoke')
    assert.match(JSON.stringify(echo.response), /to the transcript/)
    const text = await runYoke(['mcp', 'transcript', 'beta', '--last', '3', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(text.code, 0, text.stderr)
    assert.match(text.stdout, /→ tools\/call #\S+ \d+ ms ok/)
    const wrong = await runYoke(['mcp', 'transcript', 'nope', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(wrong.code, 2)
    assert.match(wrong.stderr, /no MCP server is named "nope"; the servers are: alpha, beta/)
  })
})

describe('yoke mcp without a running dev', () => {
  let project: Project
  before(() => {
    project = tempProject({ 'yoke.config.yaml': `plugins:\n${server('solo')}` })
  })
  after(() => project.cleanup())

  it('mcp list composes once; mcp restart says a dev is needed', async () => {
    const r = await runYoke(['mcp', 'list', '--json', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(r.code, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.equal(out.source, 'composed now')
    assert.equal(out.servers[0].state, 'connected')
    assert.deepEqual(out.servers[0].protocol, { era: 'legacy', version: '2025-11-25' })
    const restart = await runYoke(['mcp', 'restart', 'solo', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(restart.code, 2)
    assert.match(restart.stderr, /no yoke dev is running in this project/)
  })

  it('mcp-json expands ${VAR} in its entries, as Claude Code does', async () => {
    const json = tempProject({
      'yoke.config.yaml': 'plugins:\n  fromfile:\n    use: mcp-json\n',
      '.mcp.json': JSON.stringify({
        mcpServers: {
          withenv: {
            command: process.execPath,
            args: [FIXTURE],
            env: { TOKEN: '${YOKE_TEST_TOKEN}', OTHER: '${YOKE_TEST_UNSET:-fallback}' },
          },
        },
      }),
    })
    try {
      const call = (name: string) =>
        runYoke(
          [
            'tools',
            'call',
            'mcp__withenv__env',
            '--args',
            JSON.stringify({ name }),
            '--cwd',
            json.dir,
          ],
          { cwd: json.dir, home: json.home, env: { YOKE_TEST_TOKEN: 'abc' } },
        )
      const token = await call('TOKEN')
      assert.equal(token.code, 0, token.stderr)
      assert.match(token.stdout, /^abc$/m)
      assert.match((await call('OTHER')).stdout, /^fallback$/m)
    } finally {
      json.cleanup()
    }
  })

  it('a failed instance shows in mcp list with why', async () => {
    const twice = tempProject({
      'yoke.config.yaml': `plugins:\n${server('solo')}${server('solo').replace('  solo:', '  again:')}`,
    })
    try {
      const r = await runYoke(['mcp', 'list', '--json', '--cwd', twice.dir], {
        cwd: twice.dir,
        home: twice.home,
      })
      assert.equal(r.code, 0, r.stderr)
      const servers = JSON.parse(r.stdout).servers as Array<{
        instance: string
        state: string
        detail: string
      }>
      const again = servers.find((s) => s.instance === 'again')!
      assert.equal(again.state, 'failed')
      assert.match(again.detail, /"solo" is used by instance "solo" and again by instance "again"/)
    } finally {
      twice.cleanup()
    }
  })

  it('tools call reaches an MCP tool in a one-shot composition', async () => {
    const r = await runYoke(
      ['tools', 'call', 'mcp__solo__echo', '--args', '{"text":"one shot"}', '--cwd', project.dir],
      { cwd: project.dir, home: project.home },
    )
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /one shot/)
  })

  it('mcp add writes a valid entry (keeping comments) that connects; mcp remove takes it out; bad input changes nothing', async () => {
    const p = tempProject({ 'yoke.config.yaml': '# mine\nplugins: {}\n' })
    try {
      const run = (...argv: string[]) =>
        runYoke([...argv, '--cwd', p.dir], { cwd: p.dir, home: p.home })
      const added = await run(
        'mcp',
        'add',
        'fx',
        '--env',
        'MARK=1',
        '--',
        process.execPath,
        FIXTURE,
      )
      assert.equal(added.code, 0, added.stderr)
      const text = readFileSync(p.path('yoke.config.yaml'), 'utf8')
      assert.match(text, /^# mine\nplugins:\n  mcp-fx:\n    use: mcp-client\n/)
      const list = JSON.parse((await run('mcp', 'list', '--json')).stdout)
      assert.equal(list.servers[0].state, 'connected')
      const again = await run('mcp', 'add', 'fx', '--', 'node')
      assert.equal(again.code, 2)
      assert.match(again.stderr, /already has an instance "mcp-fx"/)
      const invalid = await run('mcp', 'add', 'has space', '--url', 'http://x/')
      assert.equal(invalid.code, 2)
      assert.match(invalid.stderr, /serverName: serverName must be 1-64 characters/)
      assert.equal(
        readFileSync(p.path('yoke.config.yaml'), 'utf8'),
        text,
        'a refused add writes nothing',
      )
      const removed = await run('mcp', 'remove', 'fx')
      assert.equal(removed.code, 0, removed.stderr)
      assert.equal(readFileSync(p.path('yoke.config.yaml'), 'utf8'), '# mine\nplugins: {}\n')
      const missing = await run('mcp', 'remove', 'fx')
      assert.equal(missing.code, 2)
      assert.match(missing.stderr, /no MCP server "fx"; it has: none/)
    } finally {
      p.cleanup()
    }
  })

  it('mcp import prints entries, and --write adds them to the project config keeping its comments', async () => {
    const fixtures = `${ROOT}test/fixtures/mcp-import`
    const printed = await runYoke(
      ['mcp', 'import', `${fixtures}/config.toml`, '--cwd', project.dir],
      { cwd: project.dir, home: project.home },
    )
    assert.equal(printed.code, 0, printed.stderr)
    const yaml = parse(printed.stdout) as {
      plugins: Record<string, { use: string; config: { serverName: string } }>
    }
    assert.ok(
      Object.values(yaml.plugins).every((p) => p.use === 'mcp-client' && p.config.serverName),
    )
    project.write('yoke.config.yaml', `# my servers\nplugins:\n${server('solo')}`)
    const written = await runYoke(
      ['mcp', 'import', `${fixtures}/project.mcp.json`, '--write', '--cwd', project.dir],
      { cwd: project.dir, home: project.home },
    )
    assert.equal(written.code, 0, written.stderr)
    assert.match(written.stdout, /added mcp-/)
    const config = readFileSync(project.path('yoke.config.yaml'), 'utf8')
    assert.match(config, /^# my servers/)
    assert.ok(Object.keys((parse(config) as { plugins: object }).plugins).length > 1)
    const valid = await runYoke(['config', 'validate', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
      env: { GITHUB_TOKEN: 'x', API_KEY: 'y', DOCS_TOKEN: 'z' },
    })
    assert.equal(valid.code, 0, valid.stdout + valid.stderr)
    const broken = await runYoke(
      ['mcp', 'import', `${fixtures}/broken.json`, '--cwd', project.dir],
      { cwd: project.dir, home: project.home },
    )
    assert.equal(broken.code, 2)
    assert.match(broken.stderr, /broken\.json:\d+:\d+/)
  })

  it("mcp import guards the URLs of someone else's file; --trust-urls takes them as the user's own", async () => {
    project.write(
      'theirs.mcp.json',
      JSON.stringify({ mcpServers: { local: { url: 'http://127.0.0.1:9/mcp' } } }),
    )
    const imported = async (...flags: string[]) => {
      const r = await runYoke(['mcp', 'import', 'theirs.mcp.json', '--json', ...flags], {
        cwd: project.dir,
        home: project.home,
      })
      assert.equal(r.code, 0, r.stderr)
      return JSON.parse(r.stdout) as {
        servers: Array<{ config: Record<string, unknown> }>
        warnings: string[]
      }
    }
    const guarded = await imported()
    assert.equal(guarded.servers[0]!.config.ssrfGuard, true)
    assert.match(guarded.warnings.join('\n'), /127\.0\.0\.1.*--trust-urls/)
    const trusted = await imported('--trust-urls')
    assert.equal(trusted.servers[0]!.config.ssrfGuard, undefined)
    assert.deepEqual(trusted.warnings, [])
  })
})
