// Project trust at the CLI: `yoke plugins list` gives the waiting reason; `yoke add` keeps a
// trusted project trusted (the lock it edits is covered by trust) and says when what it installed
// waits; `yoke trust --show` counts yoke.lock and its installs; `yoke chat` on a terminal asks what
// `yoke dev` asks; `yoke serve` never asks (its stdin may be the MCP channel).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { modelServer } from './helpers/model-server.ts'
import { ROOT, runYoke, suiteProjects, YOKE, type Project } from './helpers/project.ts'

// test/run.js trusts every project of the suite; these tests are about not being trusted
delete process.env.YOKE_TRUST

const INSTALLS = join(ROOT, 'test', 'fixtures', 'installs')
const HELLO = [
  `export default { name: 'hello', inject: ['runtime'], apply(ctx) {`,
  `  ctx.runtime.register({ name: 'hello_hi', description: 'hi', inputSchema: { type: 'object' }, execute: () => 'hi' })`,
  `} }`,
  '',
].join('\n')

const show = async (p: Project) =>
  JSON.parse((await runYoke(['trust', '--show', '--json'], { cwd: p.dir, home: p.home })).stdout)

/** `yoke ARGS` on a pseudo-terminal (`script`, util-linux): what it writes, and a way to type. */
function onTerminal(p: Project, args: string, env: Record<string, string> = {}) {
  const child = spawn('script', ['-qfec', `"${process.execPath}" "${YOKE}" ${args}`, '/dev/null'], {
    cwd: p.dir,
    env: { ...process.env, NO_COLOR: '1', YOKE_HOME: p.home, TERM: 'dumb', ...env },
  })
  let screen = ''
  child.stdout.on('data', (d) => (screen += d))
  const until = async (what: string, test: (screen: string) => boolean) => {
    for (let waited = 0; !test(screen); waited += 50) {
      if (waited > 20_000) throw new Error(`no ${what} on the terminal:\n${screen}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  return { child, until, screen: () => screen }
}

describe('trust at the CLI', () => {
  const project = suiteProjects()

  it('yoke plugins list lists what waits, naming the instance and `yoke trust`, not a missing plugin', async () => {
    const p = project({
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n  packages:\n    use: exec-tools\n    config: { dirs: [./packages] }\n',
    })
    const r = await runYoke(['plugins', 'list'], { cwd: p.dir, home: p.home })
    // listing runs no code: it lists (exit 0) and says what waits, and why
    assert.equal(r.code, 0, r.stderr)
    assert.doesNotMatch(r.stderr, /no exec-tools instance is running/)
    assert.match(r.stdout, /instance "packages" is waiting: the project .* is not trusted yet/)
    assert.match(r.stderr, /`yoke trust`/)
    assert.match(r.stdout, /yoke\.config\.yaml:4/)
  })

  it('yoke add keeps a trusted project trusted; in an untrusted one what it installed waits', async () => {
    const run = (p: Project, ...args: string[]) => runYoke(args, { cwd: p.dir, home: p.home })
    const trusted = project({ 'yoke.config.yaml': 'preset: base\n' })
    assert.equal((await run(trusted, 'trust')).code, 0)
    const added = await run(trusted, 'add', join(INSTALLS, 'echo-package'))
    assert.equal(added.code, 0, added.stderr)
    assert.doesNotMatch(added.stdout, /waits/)
    const after = await show(trusted)
    assert.equal(after.state, 'trusted')
    assert.deepEqual(Object.keys(after.files), ['yoke.config.yaml', 'yoke.lock'])

    const fresh = project({ 'yoke.config.yaml': 'preset: base\n' })
    const waits = await run(fresh, 'add', join(INSTALLS, 'echo-package'))
    assert.equal(waits.code, 0, waits.stderr)
    assert.match(waits.stdout, /waits the project is not trusted: .*`yoke trust`/)
    const state = await show(fresh)
    assert.equal(state.state, 'new')
    assert.deepEqual(state.waiting, [
      { instance: 'install echo-package', runs: 'exec-package (yoke.lock)' },
    ])
    // someone else's edit of a trusted lock (a pull) asks again
    assert.equal((await run(fresh, 'trust')).code, 0)
    const lock = readFileSync(fresh.path('yoke.lock'), 'utf8')
    fresh.write('yoke.lock', lock.replace('"installs"', '"marketplaces": {},\n  "installs"'))
    assert.deepEqual((await show(fresh)).changed, ['yoke.lock'])

    // a project with nothing of its own yet: the user's first install is theirs
    const empty = project()
    assert.equal((await run(empty, 'add', join(INSTALLS, 'echo-package'))).code, 0)
    assert.equal((await show(empty)).state, 'trusted')
  })

  it('yoke chat on a terminal asks about an untrusted project; yes starts its code', async () => {
    const server = await modelServer([])
    const p = project({
      'yoke.config.yaml': [
        'preset: base',
        'plugins:',
        '  model:',
        '    use: openai',
        `    config: { model: gpt-test, apiKeyEnv: TEST_OPENAI_KEY, baseUrl: "${server.openaiBaseUrl}", maxRetries: 0 }`,
        '  agent:',
        '    use: agent-loop',
        '  hello:',
        '    use: ./hello.mjs',
        '',
      ].join('\n'),
      'hello.mjs': HELLO,
    })
    const chat = onTerminal(p, 'chat', { TEST_OPENAI_KEY: 'sk-test' })
    try {
      await chat.until('the trust question', (s) => /\[y\/N\]/.test(s))
      assert.match(chat.screen(), /hello +the local module \.\/hello\.mjs/)
      chat.child.stdin.write('y\r')
      await chat.until('the chat prompt', (s) => s.includes('you> '))
      assert.match(chat.screen(), /trusted: starting it/)
      chat.child.stdin.write('/tools\r')
      await chat.until('the tools', (s) => s.includes('hello_hi'))
      chat.child.stdin.write('/exit\r')
      const [code] = await once(chat.child, 'exit')
      assert.equal(code, 0, chat.screen())
      assert.equal((await show(p)).state, 'trusted')
    } finally {
      chat.child.kill('SIGKILL')
      await server.close()
    }
  })

  it('yoke serve --stdio on a terminal never asks: its stdin is the MCP channel', async () => {
    const p = project({
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  hello:\n    use: ./hello.mjs\n',
      'hello.mjs': HELLO,
    })
    const serve = onTerminal(p, 'serve --stdio')
    try {
      const initialize = {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-03-26',
          capabilities: {},
          clientInfo: { name: 'test', version: '1' },
        },
      }
      serve.child.stdin.write(JSON.stringify(initialize) + '\r')
      await serve.until('the initialize answer', (s) => /"result":\{.*"serverInfo"/.test(s))
      assert.doesNotMatch(serve.screen(), /\[y\/N\]|trust .*\?/)
      assert.equal((await show(p)).state, 'new', 'nothing was answered for it')
    } finally {
      serve.child.kill('SIGKILL')
    }
  })
})
