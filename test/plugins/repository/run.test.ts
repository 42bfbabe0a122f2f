// The DSH self-modification loop through the agent loop: the model defines a dynamic plugin, runs
// it (the user approves at the prompt), calls its tool, reads its source, defines a new version,
// updates to it, calls it again (new behaviour), rolls back to version 1 (approved before: not asked
// again) and undefines it — recorded against a real HTTP model server, then replayed offline to the
// same end. And `@name` in a chat prompt brings the plugin's context to the model.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { modelServer, type ModelServer, type ScriptTurn } from '../../helpers/model-server.ts'
import { runYokeWithInput, tempProject, type Project } from '../../helpers/project.ts'

const ENV = { TEST_OPENAI_KEY: 'sk-test' }
const greeter = (greeting: string) => `export default {
  name: 'greeter',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({
      name: 'greet',
      description: 'Greet someone by name',
      inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
      execute: (args) => '${greeting}, ' + args.who + '!',
    })
  },
}
`
const config = (model: string) => `preset: base
plugins:
  model:
${model}
  agent:
    use: agent-loop
    config: { spawn: false }
  repository:
    use: repository
`
const call = (id: string, name: string, args: Record<string, unknown>): ScriptTurn => ({
  text: '',
  toolCalls: [{ id, name, args }],
})
const SCRIPT: ScriptTurn[] = [
  call('c1', 'repository_define', {
    name: 'greeter',
    purpose: 'greets people',
    source: greeter('Hello'),
  }),
  call('c2', 'repository_run', { plugin: 'greeter' }),
  call('c3', 'greet', { who: 'Ada' }),
  call('c4', 'repository_self', { plugin: 'greeter', version: 1 }),
  call('c5', 'repository_define', {
    name: 'greeter',
    purpose: 'greets people warmly',
    source: greeter('Good morning'),
  }),
  call('c6', 'repository_run', { plugin: 'greeter', version: 2, mode: 'update' }),
  call('c7', 'greet', { who: 'Ada' }),
  call('c8', 'repository_run', { plugin: 'greeter', version: 1, mode: 'update' }),
  call('c9', 'greet', { who: 'Ada' }),
  call('c10', 'repository_undefine', { plugin: 'greeter' }),
  { text: 'The greeter is gone.' },
]
const TASK = 'Make yourself a greeter tool, then improve it.'

describe('the repository loop through the agent loop', () => {
  let server: ModelServer
  let p: Project
  before(async () => {
    server = await modelServer([])
    p = tempProject()
    p.write(
      'yoke.config.yaml',
      config(
        `    use: openai\n    config: { model: gpt-test, apiKeyEnv: TEST_OPENAI_KEY, baseUrl: "${server.openaiBaseUrl}", maxRetries: 0 }`,
      ),
    )
    p.write('replay.yaml', config('    use: replay\n    config: { cassette: ./cassette.jsonl }'))
  })
  after(async () => {
    await server?.close()
    p?.cleanup()
  })

  it('define → run (approved) → call → inspect → define → update → new behaviour → rollback → undefine', async () => {
    server.push(...SCRIPT)
    // two approvals: versions 1 and 2; the rollback to version 1 is not asked again
    const r = await runYokeWithInput(
      ['run', TASK, '--record', 'cassette.jsonl', '--json'],
      { cwd: p.dir, env: ENV },
      'y\ny\n',
    )
    assert.equal(r.code, 0, r.stderr)
    assert.equal(JSON.parse(r.stdout).text, 'The greeter is gone.')
    assert.equal(r.stderr.match(/allow\? \[y\] once/g)?.length, 2, r.stderr)
    assert.match(r.stderr, /run_repo_s1_greeter_v1 .*"id":"repo:greeter@1"/)
    // the person sees the whole source before approving: down to its last line, numbered
    const lastLine = greeter('Hello').trimEnd().split('\n').length
    assert.match(r.stderr, new RegExp(`\\n +${lastLine} \\| \\}\\n`), r.stderr)
    assert.match(r.stderr, /execute: \(args\) => 'Hello, ' \+ args\.who/)
    const turns = server.requests.map((q) => q.body)
    const toolText = (n: number, id: string) =>
      turns[n].messages.find((m: any) => m.role === 'tool' && m.tool_call_id === id)?.content
    const offered = (n: number) => (turns[n].tools ?? []).map((t: any) => t.function.name)
    assert.ok(!offered(1).includes('greet'), 'not offered before it runs')
    assert.match(toolText(2, 'c2'), /repo:greeter@1 is running; its tools: greet/)
    assert.ok(offered(2).includes('greet'), 'offered from the next turn')
    assert.ok(
      !offered(2).some((n: string) => n.startsWith('run_repo_')),
      'the approval tool is hidden',
    )
    assert.equal(toolText(3, 'c3'), 'Hello, Ada!')
    assert.match(toolText(4, 'c4'), /```js\nexport default \{[\s\S]*'Hello, '/)
    assert.match(toolText(5, 'c5'), /Defined repo:greeter@2/)
    assert.match(toolText(6, 'c6'), /repo:greeter@2 is running \(was version 1\)/)
    assert.equal(toolText(7, 'c7'), 'Good morning, Ada!')
    assert.match(toolText(8, 'c8'), /repo:greeter@1 is running \(was version 2\)/)
    assert.equal(toolText(9, 'c9'), 'Hello, Ada!')
    assert.match(toolText(10, 'c10'), /Removed greeter and its 2 version/)
  })

  it('replays offline to the same end, approvals asked the same way', async () => {
    const replayed = await runYokeWithInput(
      ['run', TASK, '--config', 'replay.yaml', '--json'],
      { cwd: p.dir, env: ENV },
      'y\ny\n',
    )
    assert.equal(replayed.code, 0, replayed.stderr)
    assert.equal(JSON.parse(replayed.stdout).text, 'The greeter is gone.')
  })

  it('a refused approval is rejected: the model is told, and the tool never appears', async () => {
    server.push(
      call('c1', 'repository_define', { name: 'greeter', purpose: 'p', source: greeter('Hi') }),
      call('c2', 'repository_run', { plugin: 'greeter' }),
      { text: 'Refused.' },
    )
    const first = server.requests.length
    const r = await runYokeWithInput(['run', TASK, '--json'], { cwd: p.dir, env: ENV }, 'n\n')
    assert.equal(r.code, 0, r.stderr)
    const last = server.requests[first + 2]!.body
    const text = last.messages.find(
      (m: any) => m.role === 'tool' && m.tool_call_id === 'c2',
    )?.content
    assert.match(text, /rejected: running repo:greeter@1 was not approved/)
    assert.ok(!(last.tools ?? []).some((t: any) => t.function.name === 'greet'))
  })

  it('`@greeter` in a chat prompt brings its versions, state and source to the model', async () => {
    server.push(
      call('c1', 'repository_define', {
        name: 'greeter',
        purpose: 'greets people',
        source: greeter('Hello'),
      }),
      { text: 'Defined.' },
      { text: 'I see it.' },
    )
    const first = server.requests.length
    const r = await runYokeWithInput(
      ['chat'],
      { cwd: p.dir, env: ENV },
      'make a greeter\nwhat does @greeter do?\n/exit\n',
    )
    assert.equal(r.code, 0, r.stderr)
    const asked = server.requests[first + 2]!.body.messages
    const prompt = asked.filter((m: any) => m.role === 'user').at(-1).content
    assert.match(prompt, /^what does @greeter do\?\n\n\[@greeter\]\nDynamic plugin greeter/)
    assert.match(prompt, /versions: 1 repo:greeter@1 sha256:[0-9a-f]{12}/)
    assert.match(prompt, /'Hello, '/)
    assert.match(prompt, /To change it: repository_define/)
  })
})
