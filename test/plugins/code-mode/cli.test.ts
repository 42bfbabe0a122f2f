// `yoke tools call run_code` from the shell (dist/): a program runs in a project that enables
// code-mode, its nested call that the policy asks about is put to the terminal (piped answers: y
// approves and the program goes on, n ends it CODE_DENIED), and a limit's code is the call's status.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { runYokeWithInput, suiteProjects } from '../../helpers/project.ts'

const project = suiteProjects()
const CONFIG = `plugins:
  code:
    use: code-mode
    config: { limits: { cpuMs: 3000 } }
  policy:
    config: { ask: [skills_list] }
`
const PROGRAM = 'const s = await tools.skills_list({}); return { listed: typeof s }'

describe('yoke tools call run_code', () => {
  it('runs a program; its nested call asks the terminal (y: it goes on, n: CODE_DENIED)', async () => {
    const p = project({ 'yoke.config.yaml': CONFIG })
    const call = (answer: string) =>
      runYokeWithInput(
        ['tools', 'call', 'run_code', '--args', JSON.stringify({ code: PROGRAM }), '--trust'],
        { cwd: p.dir, home: p.home },
        `${answer}\n`,
      )
    const yes = await call('y')
    assert.equal(yes.code, 0, yes.stderr)
    assert.match(yes.stdout, /"listed": "object"/)
    assert.match(yes.stdout, /tool calls \(1\): skills_list ok/)
    const no = await call('n')
    assert.equal(no.code, 1, no.stdout + no.stderr)
    assert.match(no.stdout + no.stderr, /CODE_DENIED: the program was ended at skills_list/)
  })

  it("a limit's code is the call's status", async () => {
    const p = project({ 'yoke.config.yaml': CONFIG })
    const r = await runYokeWithInput(
      ['tools', 'call', 'run_code', '--args', '{"code":"while (true) {}"}', '--trust'],
      { cwd: p.dir, home: p.home },
    )
    assert.equal(r.code, 1)
    assert.match(r.stdout + r.stderr, /CODE_TIMEOUT/)
  })
})
