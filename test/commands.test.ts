// Commands are contributions: a project's own plugin adds a command that `yoke --help` lists
// without composing, that runs against a composition made for it, and that reaches a running
// `yoke dev` through the control API. A broken commands module is that plugin's problem only.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { execFileSync, spawn } from 'node:child_process'
import { DevProcess, runYoke, tempProject, YOKE, type Project } from './helpers/project.ts'
import { until } from './helpers/until.ts'

// a plugin with no dependencies: it counts its activations and answers the control `notes/count`
const PLUGIN = `
let activations = 0
export default {
  name: 'notes',
  apply(ctx) {
    activations++
    ctx.control('notes/count', ({ plus = 0 }) => ({ count: 3 + Number(plus), pid: process.pid, activations }))
    ctx.control('notes/throw', () => { throw new Error('the notes are locked') })
    ctx.control('notes/void', () => undefined)
    ctx.control('notes/summary', () => ({ title: 'notes', rows: 'not rows' }))
  },
}
`
// its commands module: plain objects are commands too (defineCommand only adds types)
const COMMANDS = `
export const commands = [
  {
    name: 'notes count',
    summary: 'how many notes the running dev holds',
    usage: 'yoke notes count [--plus N]',
    flags: { plus: { type: 'string' } },
    examples: ['yoke notes count --plus 2'],
    async run(args, _positionals, cli) {
      const reply = await cli.control('notes/count', { plus: args.plus ?? 0 })
      if (typeof reply === 'number') return reply
      process.stdout.write(JSON.stringify({ ...reply.answer, source: reply.source }) + '\\n')
      return 0
    },
  },
  {
    name: 'notes ask',
    summary: 'asks one control',
    async run(_args, [name], cli) {
      const reply = await cli.control(name)
      if (typeof reply === 'number') return reply
      process.stdout.write(JSON.stringify({ answer: reply.answer ?? null, source: reply.source }) + '\\n')
      return 0
    },
    positionals: 1,
  },
  { name: 'notes broken', summary: 'no run function' },
]
`

describe('commands from a project plugin', () => {
  let project: Project
  before(() => {
    project = tempProject({
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  notes: { use: ./notes }\n',
      'notes/index.mjs': PLUGIN,
      'notes/commands.mjs': COMMANDS,
    })
  })

  it('yoke --help lists the command with its summary and owner', async () => {
    const { code, stdout, stderr } = await runYoke(['--help', '--cwd', project.dir], {
      home: project.home,
    })
    assert.equal(code, 0, stderr)
    assert.match(
      stdout,
      /^ {2}notes count +how many notes the running dev holds \(instance "notes"\)$/m,
    )
    assert.match(
      stderr,
      /notes\/commands\.mjs\): entry "notes broken" is not a command: it has no run function/,
    )
    assert.match(stdout, /^ {2}tools list/m, 'the kernel commands are still listed')
  })

  it('its --help shows the usage and the examples', async () => {
    const { code, stdout } = await runYoke(['notes', 'count', '--help', '--cwd', project.dir], {
      home: project.home,
    })
    assert.equal(code, 0)
    assert.match(stdout, /Usage: yoke notes count \[--plus N\]/)
    assert.match(stdout, /Examples:\n {2}yoke notes count --plus 2/)
  })

  it('runs against a composition of its own when no dev runs', async () => {
    const { code, stdout, stderr } = await runYoke(
      ['notes', 'count', '--plus', '2', '--cwd', project.dir],
      { home: project.home },
    )
    assert.equal(code, 0, stderr)
    const answer = JSON.parse(stdout)
    assert.equal(answer.count, 5)
    assert.equal(answer.source, 'composed now')
  })

  it('reaches the running yoke dev through the control API', async () => {
    const dev = new DevProcess([], { cwd: project.dir, home: project.home })
    try {
      await dev.ready()
      const { code, stdout, stderr } = await runYoke(['notes', 'count', '--cwd', project.dir], {
        home: project.home,
      })
      assert.equal(code, 0, stderr)
      const answer = JSON.parse(stdout)
      assert.equal(answer.source, 'live from yoke dev')
      assert.equal(answer.pid, dev.child.pid, 'the dev process answered')
      assert.equal(answer.count, 3)

      // the dev's answer is the answer: undefined is one, and its error is not retried elsewhere
      const empty = await runYoke(['notes', 'ask', 'notes/void', '--cwd', project.dir], {
        home: project.home,
      })
      assert.deepEqual(JSON.parse(empty.stdout), { answer: null, source: 'live from yoke dev' })
      const failed = await runYoke(['notes', 'ask', 'notes/throw', '--cwd', project.dir], {
        home: project.home,
      })
      assert.equal(failed.code, 1)
      assert.match(failed.stderr, /the notes are locked/)
      assert.doesNotMatch(failed.stderr, /composing/)

      // a second dev of the same project does not take the socket from the first
      const second = new DevProcess([], { cwd: project.dir, home: project.home })
      try {
        await second.ready()
        assert.match(second.stderr, /another yoke dev runs this project/)
      } finally {
        await second.stop()
      }
      const again = await runYoke(['notes', 'count', '--cwd', project.dir], { home: project.home })
      assert.equal(JSON.parse(again.stdout).pid, dev.child.pid, 'the first dev still answers')
    } finally {
      await dev.stop()
    }
  })

  it('a summary section of the wrong shape is reported in the summary, and yoke dev runs on', async () => {
    const child = spawn(process.execPath, [YOKE, 'dev', '--cwd', project.dir], {
      env: { ...process.env, NO_COLOR: '1', YOKE_HOME: project.home },
    })
    let stdout = ''
    child.stdout.on('data', (d) => (stdout += d))
    try {
      await until('the dev summary', () => / ready in /.test(stdout), { ms: 20_000 })
      assert.match(stdout, /^notes\n {2}could not be read: the answer is not a summary section/m)
    } finally {
      child.kill('SIGTERM')
    }
  })

  it('a commands module that never finishes importing or is a FIFO does not hang yoke --help', async () => {
    project.write('hang/index.mjs', "export default { name: 'hang', apply() {} }\n")
    project.write('hang/commands.mjs', 'await new Promise(() => {})\n')
    project.write('fifo/index.mjs', "export default { name: 'fifo', apply() {} }\n")
    execFileSync('mkfifo', [project.path('fifo/commands.mjs')])
    project.write(
      'yoke.config.yaml',
      'preset: minimal\nplugins:\n  notes: { use: ./notes }\n  hang: { use: ./hang }\n  fifo: { use: ./fifo }\n',
    )
    const started = performance.now()
    const { code, stdout, stderr } = await runYoke(['--help', '--cwd', project.dir], {
      home: project.home,
      timeoutMs: 20_000,
    })
    assert.equal(code, 0)
    assert.match(stdout, /notes count/, 'the healthy plugin still contributes')
    assert.match(stderr, /instance "hang".*did not load within 5000 ms/)
    assert.ok(performance.now() - started < 15_000)
    project.write('yoke.config.yaml', 'preset: minimal\nplugins:\n  notes: { use: ./notes }\n')
  })

  it('a commands module that fails to import is reported and the other commands still run', async () => {
    project.write('notes/commands.mjs', 'export const commands = [ syntax error')
    const { code, stdout, stderr } = await runYoke(['--help', '--cwd', project.dir], {
      home: project.home,
    })
    assert.equal(code, 0)
    assert.match(stderr, /warning: the commands of instance "notes"/)
    assert.doesNotMatch(stdout, /notes count/)
    const tools = await runYoke(['tools', 'list', '--json', '--cwd', project.dir], {
      home: project.home,
    })
    assert.equal(tools.code, 0, tools.stderr)
  })

  after(() => project.cleanup())
})
