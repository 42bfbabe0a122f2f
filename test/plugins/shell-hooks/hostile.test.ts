// octos-style shell hooks (shell-hooks) given hostile answers: 100 MB of stdout is stopped at the
// cap and said as the cap (not "killed by SIGKILL"); replacement arguments nested 100,000 deep are
// refused before anything walks them. Either way the hook's failure never blocks the call (octos:
// "errors never block") and the warning names the hook.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { stringify } from 'yaml'
import type { LogRecord, ToolResult, ToolRuntime } from '../../../src/index.ts'
import { composedProject, hookProgram } from '../../conformance/hooks.ts'
import { tempProject, type Project } from '../../helpers/project.ts'

const text = (r: ToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')

describe('shell-hooks: hostile answers never block a call', () => {
  let project: Project
  let rt: ToolRuntime
  let logs: LogRecord[]
  let close: () => Promise<void>
  let reload: () => Promise<void>
  const instances: Record<string, unknown> = {}
  let n = 0

  before(async () => {
    project = tempProject()
    const composed = await composedProject(project, () =>
      project.write('yoke.config.yaml', stringify({ preset: 'minimal', plugins: instances })),
    )
    rt = composed.composition.runtime!
    logs = composed.logs
    reload = composed.reload
    close = () => composed.composition.close()
  })
  after(async () => {
    await close?.()
    project?.cleanup()
  })

  /** A tool of its own with a before_tool_call hook running `body`; its runs are recorded. */
  const hooked = async (body: string) => {
    const name = `shell_hostile_${++n}`
    const ran: unknown[] = []
    rt.register({
      name,
      inputSchema: { type: 'object', properties: { msg: { type: 'string' } } },
      execute: (args) => {
        ran.push(args)
        return `${name} ran`
      },
    })
    const program = hookProgram(project.dir, `${name}.sh`, body)
    instances[name] = {
      use: 'shell-hooks',
      config: {
        hooks: [{ event: 'before_tool_call', command: [program.file], tool_filter: [name] }],
      },
    }
    await reload()
    return { name, ran, program }
  }
  const saidAbout = (from: number, file: string) =>
    logs
      .slice(from)
      .filter((l) => l.message.includes(file))
      .map((l) => l.message)

  it('100 MB on stdout: stopped at the cap and said so; the call goes on', async () => {
    const t = await hooked("head -c 100000000 /dev/zero | tr '\\0' a; exit 0")
    const from = logs.length
    const r = await rt.call(t.name, { msg: 'x' })
    assert.equal(r.status, 'ok', text(r))
    const said = saidAbout(from, t.program.file)
    assert.ok(
      said.some((m) => /output over 1048576 bytes, stopped/.test(m)),
      said.join('\n'),
    )
    assert.ok(!said.some((m) => /SIGKILL/.test(m)), said.join('\n'))
  })

  it('replacement arguments nested 100,000 deep: refused with a warning, the call keeps its own', async () => {
    const deep = '{"x":'.repeat(100_000) + '1' + '}'.repeat(100_000)
    project.write('deep-args.json', `{"msg":"swapped","more":${deep}}`)
    const t = await hooked(`cat '${project.path('deep-args.json')}'; exit 2`)
    const from = logs.length
    const r = await rt.call(t.name, { msg: 'own' })
    assert.equal(r.status, 'ok', text(r))
    assert.deepEqual(t.ran, [{ msg: 'own' }])
    const warned = logs.slice(from).filter((l) => l.level === 'warn')
    assert.ok(
      warned.some((l) => l.message.includes(t.name) && /deeper than 64 levels/.test(l.message)),
      warned.map((l) => l.message).join('\n'),
    )
  })
})
