// The CLI on projects of their own, each test its own (split from cli.test.ts, whose one file
// ran past the runner's bound on a loaded machine): a plugin outside yoke's tree importing yoke,
// yoke init's project running and type-checking, a TypeScript plugin outside an ESM package, and
// tools list / tools call through the full pipeline with the terminal bridge. Every yoke run is
// bounded by runYoke; nothing here waits on a clock.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, runYoke, runYokeWithInput, tempProject } from './helpers/project.ts'

describe('yoke CLI on projects of their own', () => {
  it("a plugin outside yoke's tree imports 'yoke' and 'yoke/cli' (the running yoke, one copy)", async () => {
    const outside = tempProject({
      'plugins/uses-api.ts': `import { definePlugin, YokeError } from 'yoke'
import { defineCommand } from 'yoke/cli'
import { YokeError as Same } from 'yoke'
export default definePlugin({
  name: 'uses-api',
  apply(ctx) {
    ctx.logger.warn(\`api ok: \${typeof defineCommand} \${YokeError === Same}\`)
  },
})
`,
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  api:\n    use: ./plugins/uses-api.ts\n',
    })
    try {
      const r = await runYoke(['config', 'validate'], { cwd: outside.dir, home: outside.home })
      assert.equal(r.code, 0, r.stderr)
      const inspect = await runYoke(['inspect', '--json'], { cwd: outside.dir, home: outside.home })
      assert.match(inspect.stderr, /api ok: function true/)
    } finally {
      outside.cleanup()
    }
  })

  it('yoke init makes a project that runs (a TypeScript plugin, an executable, a skill) and type-checks', async (t) => {
    const parent = tempProject({})
    t.after(() => parent.cleanup())
    const made = await runYoke(['init', 'agent', '--json'], { cwd: parent.dir, home: parent.home })
    assert.equal(made.code, 0, made.stderr)
    assert.ok(JSON.parse(made.stdout).made.includes('plugins/hello.ts'))
    const dir = parent.path('agent')
    // the MCP client snippets start this project's tools with absolute paths (a desktop app has no PATH)
    const clients = readFileSync(join(dir, 'MCP-CLIENTS.md'), 'utf8')
    assert.ok(clients.includes(JSON.stringify(process.execPath)), clients)
    assert.ok(clients.includes(`--cwd ${dir}`), clients)
    const at = { cwd: dir, home: parent.home }
    const list = JSON.parse((await runYoke(['tools', 'list', '--json'], at)).stdout)
    const names = list.tools.map((tool: any) => tool.name)
    for (const name of ['hello', 'shout', 'skills_list']) assert.ok(names.includes(name), name)
    const hello = await runYoke(['tools', 'call', 'hello', '--args', '{"name":"Ada"}'], at)
    assert.equal(hello.stdout, 'Hello, Ada!\n', hello.stderr)
    const shout = await runYoke(['tools', 'call', 'shout', '--args', '{"text":"hey"}'], at)
    assert.equal(shout.stdout.trim(), 'HEY', shout.stderr)
    const skills = await runYoke(['skills', 'list'], at)
    assert.match(skills.stdout, /hello-world\s+available/)
    const tsc = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', '.'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    })
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr)
    const again = await runYoke(['init', 'agent'], { cwd: parent.dir, home: parent.home })
    assert.match(again.stdout, /kept yoke\.config\.yaml \(it exists\)/)
  })

  it('a TypeScript plugin loads by path outside an ESM package', async () => {
    const plain = tempProject({
      'typed.ts':
        'const greeting: string = "hi"\nexport default { name: "typed", apply(ctx: { provide(n: string, v: unknown): void }) { ctx.provide("greeting", greeting) } }\n',
      'yoke.config.yaml': 'plugins:\n  typed:\n    use: ./typed.ts\n',
    })
    try {
      const result = await runYoke(['inspect', '--json', '--fresh'], {
        cwd: plain.dir,
        home: plain.home,
      })
      assert.equal(result.code, 0, result.stderr)
      assert.ok(
        JSON.parse(result.stdout).services.some((s: any) => s.name === 'greeting' && s.active),
      )
    } finally {
      plain.cleanup()
    }
  })

  it('tools list and tools call go through the full pipeline; the terminal bridge reads piped answers', async () => {
    const tools = tempProject({
      'yoke.config.yaml': `preset: base\nplugins:\n  notes:\n    use: ${JSON.stringify(ROOT + 'examples/plugins/notes/index.ts')}\n`,
    })
    const yoke = (args: string[], input?: string) =>
      runYokeWithInput(args, { cwd: tools.dir, home: tools.home }, input)
    try {
      const list = JSON.parse((await yoke(['tools', 'list', '--json'])).stdout)
      assert.deepEqual(
        list.tools.map((t: any) => [t.name, t.source, t.risk, t.concurrency]),
        [
          ['skills_list', 'skills', 'low', 'safe'],
          ['skill_read', 'skills', 'low', 'safe'],
          ['note_add', 'native', 'low', 'exclusive'],
          ['note_list', 'native', 'low', 'safe'],
          ['note_clear', 'native', 'high', 'exclusive'],
          ['note_wait', 'native', 'low', 'safe'],
        ],
      )
      const ok = await yoke(['tools', 'call', 'note_add', '--args', '{"text":"buy milk"}'])
      assert.equal(ok.code, 0, ok.stderr)
      assert.match(ok.stdout, /noted \(1 in all\)/)
      const invalid = await yoke(['tools', 'call', 'note_add', '--args', '{"text":""}', '--json'])
      assert.equal(invalid.code, 1)
      assert.equal(JSON.parse(invalid.stdout).status, 'INVALID_ARGS')
      const approved = await yoke(['tools', 'call', 'note_clear'], 'y\n')
      assert.equal(approved.code, 0, approved.stderr)
      assert.match(approved.stderr, /note_clear is high risk[\s\S]*allowed once/)
      const refused = await yoke(['tools', 'call', 'note_clear'], 'n\n')
      assert.equal(refused.code, 1)
      assert.match(
        refused.stderr,
        /DENIED: the call to note_clear was denied: approval needed \(note_clear is high risk\); refused through "terminal"/,
      )
      const noInput = await yoke(['tools', 'call', 'note_clear'], '')
      assert.equal(noInput.code, 1)
      assert.match(noInput.stderr, /no answer: the input ended/)
      const badArgs = await yoke(['tools', 'call', 'note_add', '--args', '{oops'])
      assert.equal(badArgs.code, 2)
      assert.match(badArgs.stderr, /USAGE --args is not JSON/)
      const snap = JSON.parse((await yoke(['inspect', '--json'])).stdout)
      assert.deepEqual([...new Set(snap.tools.map((t: any) => t.source))], ['skills', 'native'])
      assert.deepEqual(snap.hooks.find((h: any) => h.hook === 'runtime.preExecute').taps, [
        'policy',
      ])
      assert.deepEqual(snap.hooks.find((h: any) => h.hook === 'runtime.around').taps, [])
    } finally {
      tools.cleanup()
    }
  })
})
