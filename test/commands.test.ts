// Commands are contributions: a project's own plugin adds a command that `yoke --help` lists
// without composing, that runs against a composition made for it, and that reaches a running
// `yoke dev` through the control API. A broken commands module is that plugin's problem only.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { DevProcess, runYoke, tempProject, type Project } from './helpers/project.ts'

// a plugin with no dependencies: it counts its activations and answers the control `notes-count`
const PLUGIN = `
let activations = 0
export default {
  name: 'notes',
  apply(ctx) {
    activations++
    ctx.control('notes-count', ({ plus = 0 }) => ({ count: 3 + Number(plus), pid: process.pid, activations }))
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
      const reply = await cli.control('notes-count', { plus: args.plus ?? 0 })
      if (typeof reply === 'number') return reply
      process.stdout.write(JSON.stringify({ ...reply.answer, source: reply.source }) + '\\n')
      return 0
    },
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
    assert.match(stderr, /notes\/commands\.mjs\): an entry is not a command/)
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
    } finally {
      await dev.stop()
    }
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
