// The repository service's stop, as the capabilities plugin uses it on a withdrawn version: a
// dynamic plugin defined and run (approved) in one session is stopped from outside; its worker
// really ends (a TCP server its process holds, and never closes itself, stops answering), its tool
// is unregistered, the change event says who and why, and repository_self, repository_list and
// the service tell the model. A stop of nothing is false, and a stop in another session of the
// same name leaves this one running.
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, describe, it } from 'node:test'
import policy from '../../../plugins/policy/index.ts'
import repository from '../../../plugins/repository/index.ts'
import type { RepositoryApi, RepositoryChange } from '../../../plugins/repository/api.ts'
import { type ApprovalAnswer } from '../../../src/index.ts'
import { kernelWith } from '../../helpers/kernel.ts'

// it listens in its worker and closes nothing on stop: only the worker ending closes the port
const listener = `import { createServer } from 'node:net'
export default {
  name: 'listener',
  inject: ['runtime'],
  async apply(ctx) {
    const server = createServer((socket) => socket.end('hello\\n'))
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
    ctx.runtime.register({
      name: 'listener_port',
      description: 'The port the listener answers on',
      inputSchema: { type: 'object', properties: {} },
      execute: () => String(server.address().port),
    })
  },
}
`

async function compose() {
  const { kernel, rt } = await kernelWith([
    ['policy', policy],
    ['repository', repository],
  ])
  const answers: Array<ApprovalAnswer | Promise<ApprovalAnswer>> = []
  /** resolves when the next question is asked */
  let asked = () => {}
  rt.approvals.register({
    name: 'test',
    ask: async () => (asked(), answers.shift() ?? 'deny'),
  })
  const nextQuestion = () => new Promise<void>((resolve) => (asked = resolve))
  const call = async (name: string, args: Record<string, unknown>, scope: string) => {
    const r = await rt.call(name, args, { scope, caller: 'test' })
    return { ...r, text: r.content.map((c) => (c as { text: string }).text).join('\n') }
  }
  const repo = kernel.services.get('repository')!.value as RepositoryApi
  const changes: RepositoryChange[] = []
  repo.hooks.change.tap('test', (change) => void changes.push(change))
  /** defines and runs the listener in `scope` (approved); its port */
  const start = async (scope: string) => {
    rt.registry.createScope(scope)
    const defined = await call(
      'repository_define',
      { name: 'listener', purpose: 'listens', source: listener },
      scope,
    )
    assert.equal(defined.status, 'ok', defined.text)
    answers.push('allow-once')
    const ran = await call('repository_run', { plugin: 'listener' }, scope)
    assert.match(ran.text, /repo:listener@1 is running; its tools: listener_port/)
    return Number((await call('listener_port', {}, scope)).text)
  }
  const logs: string[] = []
  kernel.hooks.log.tap('test', (r) => void logs.push(r.message))
  return {
    rt,
    call,
    repo,
    changes,
    answers,
    nextQuestion,
    start,
    logs,
    close: () => kernel.dispose(),
  }
}

/** What a connection to the port gets: the greeting, or the error code (ECONNREFUSED). */
function knock(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk) => (text += chunk))
    socket.on('end', () => resolve(text))
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
  })
}

const WHY = 'CAPABILITY_WITHDRAWN: repo:listener@1 was withdrawn'

describe('the repository service stops a dynamic plugin from outside', () => {
  const open: Array<() => Promise<void>> = []
  after(() => Promise.all(open.map((c) => c())))

  it('stops the running version for real, says who and why, and the model can read it', async () => {
    const y = await compose()
    open.push(y.close)
    const port = await y.start('session-a')
    assert.equal(await knock(port), 'hello\n', 'its worker answers while it runs')

    assert.equal(await y.repo.stop('session-a', 'listener', WHY, 'capabilities'), true)
    assert.equal(
      await knock(port),
      'ECONNREFUSED',
      'its worker thread is gone, and its port with it',
    )
    assert.ok(!y.rt.list('session-a').some((t) => t.name === 'listener_port'), 'its tool is gone')
    assert.equal((await y.call('listener_port', {}, 'session-a')).status, 'UNKNOWN_TOOL')

    assert.deepEqual(y.changes.at(-1), {
      action: 'stop',
      name: 'listener',
      session: 'session-a',
      from: 'repo:listener@1',
      by: 'capabilities',
      why: WHY,
    })
    const [info] = y.repo.plugins('session-a')
    assert.equal(info!.state, 'stopped')
    assert.equal(info!.current, 1, 'the current pointer stays')
    assert.equal(info!.versions.length, 1, 'the versions stay')
    assert.deepEqual(info!.lastStop, { version: 1, by: 'capabilities', why: WHY })

    const self = await y.call('repository_self', { plugin: 'listener' }, 'session-a')
    assert.match(
      self.text,
      new RegExp(`state: stopped \\(current version 1\\) by capabilities: ${WHY}`),
    )
    const summary = await y.call('repository_self', {}, 'session-a')
    assert.match(
      summary.text,
      /^listener: stopped \(version 1 of 1\) by capabilities: CAPABILITY_WITHDRAWN/,
    )
    const listed = (await y.call('repository_list', {}, 'session-a')).structured as {
      dynamicPlugins: unknown[]
    }
    assert.deepEqual(listed.dynamicPlugins, [
      {
        name: 'listener',
        state: 'stopped',
        current: 1,
        lastStop: { version: 1, by: 'capabilities', why: WHY },
      },
    ])

    assert.equal(
      await y.repo.stop('session-a', 'listener', WHY),
      false,
      'a second stop: nothing runs',
    )
    assert.equal(y.changes.filter((c) => c.action === 'stop').length, 1)
  })

  it('a stop of nothing is false; one in another session leaves this session’s plugin running', async () => {
    const y = await compose()
    open.push(y.close)
    assert.equal(await y.repo.stop('session-a', 'listener', WHY), false, 'nothing defined')
    const port = await y.start('session-a')
    const before = y.changes.length
    y.rt.registry.createScope('session-b')
    y.rt.registry.createScope('session-a/spawn-1')
    assert.equal(await y.repo.stop('session-b', 'listener', WHY), false, 'another session')
    assert.equal(
      await y.repo.stop('session-a/spawn-1', 'listener', WHY),
      false,
      'a subagent’s scope',
    )
    assert.equal(await y.repo.stop('session-a', 'other', WHY), false, 'another name')
    assert.equal(y.changes.length, before, 'no change reported')
    assert.equal(await knock(port), 'hello\n', 'it still runs')
    assert.equal((await y.call('listener_port', {}, 'session-a')).text, String(port))
    assert.equal(y.repo.plugins('session-a')[0]!.state, 'running')

    // the model's own repository_stop: its caller, and no why
    await y.call('repository_stop', { plugin: 'listener' }, 'session-a')
    assert.equal(y.changes.at(-1)!.by, 'test')
    assert.ok(!('why' in y.changes.at(-1)!))
    const self = await y.call('repository_self', { plugin: 'listener' }, 'session-a')
    assert.match(self.text, /state: stopped \(current version 1\) by test\n/)
  })

  it(
    'does not wait for a person: it stops what runs now, and a run still waiting for its approval does not start',
    { timeout: 60_000 },
    async () => {
      const y = await compose()
      open.push(y.close)
      const port = await y.start('session-a')
      await y.call(
        'repository_define',
        { name: 'listener', purpose: 'listens', source: listener },
        'session-a',
      )
      let approve!: (answer: ApprovalAnswer) => void
      y.answers.push(new Promise((resolve) => (approve = resolve)))
      const asked = y.nextQuestion()
      const update = y.call('repository_run', { plugin: 'listener', version: 2 }, 'session-a')
      await asked
      // the update waits for a person; the stop (by default "service") does not wait for it
      assert.equal(await y.repo.stop('session-a', 'listener', WHY), true)
      assert.equal(await knock(port), 'ECONNREFUSED')
      approve('allow-once')
      const r = await update
      assert.equal(r.status, 'TOOL_ERROR', r.text)
      assert.match(
        r.text,
        /repo:listener@2 did not start: listener was stopped by service \(CAPABILITY_WITHDRAWN.*\) while this run waited for its approval/,
      )
      const [info] = y.repo.plugins('session-a')
      assert.equal(info!.state, 'stopped')
      assert.deepEqual(info!.lastStop, { version: 1, by: 'service', why: WHY })
      assert.equal(y.changes.at(-1)!.action, 'stop')
      assert.ok(!y.rt.list('session-a').some((t) => t.name === 'listener_port'))

      // a stop of one version leaves a waiting run of another to start (version 2 was approved)
      await y.call(
        'repository_define',
        { name: 'listener', purpose: 'listens', source: listener },
        'session-a',
      )
      y.answers.push(new Promise((resolve) => (approve = resolve)))
      const again = y.nextQuestion()
      const run = y.call('repository_run', { plugin: 'listener', version: 3 }, 'session-a')
      await again
      assert.equal(await y.repo.stop('session-a', 'listener', WHY, 'capabilities', 2), false)
      approve('allow-once')
      assert.match((await run).text, /repo:listener@3 is running/)
    },
  )

  it("hears the worker's cleanup as it stops (its word is not dropped while it ends)", async () => {
    const y = await compose()
    open.push(y.close)
    const source = `export default {
  name: 'tidy',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({ name: 'tidy_up', description: 'Tidy', inputSchema: { type: 'object', properties: {} }, execute: () => 'ok' })
    return () => ctx.logger.info('tidied up before the end')
  },
}
`
    y.rt.registry.createScope('session-t')
    await y.call('repository_define', { name: 'tidy', purpose: 'tidy', source }, 'session-t')
    y.answers.push('allow-once')
    assert.match((await y.call('repository_run', { plugin: 'tidy' }, 'session-t')).text, /running/)
    assert.match(
      (await y.call('repository_stop', { plugin: 'tidy' }, 'session-t')).text,
      /^Stopped/,
    )
    assert.ok(
      y.logs.some((m) => m.includes('tidied up before the end')),
      `the cleanup's log line reached yoke: ${JSON.stringify(y.logs)}`,
    )
  })
})
