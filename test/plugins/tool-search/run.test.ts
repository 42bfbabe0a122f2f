// An agent run that finds a deferred tool with tool_search, gets it offered from the next turn and
// calls it — recorded against a real HTTP model server, then replayed offline to the same end, with
// the transcript saying what was searched, found and called.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { modelServer, type ModelServer, type ScriptTurn } from '../../helpers/model-server.ts'
import { runYoke, tempProject, type Project } from '../../helpers/project.ts'

const ENV = { TEST_OPENAI_KEY: 'sk-test' }

const TOOLS = `export default {
  name: 'text-tools',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({ name: 'shout', description: 'Upper-case a text', concurrency: 'safe', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, execute: (a) => a.text.toUpperCase() })
    ctx.runtime.register({ name: 'whisper', description: 'Lower-case a text', concurrency: 'safe', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, execute: (a) => a.text.toLowerCase() })
  },
}
`
const config = (model: string) => `preset: base
plugins:
  model:
${model}
  agent:
    use: agent-loop
  tool-search:
    use: tool-search
    config:
      rules: [{ tool: shout, level: deferred }]
  tools:
    use: ./tools.mjs
`
const SCRIPT: ScriptTurn[] = [
  // a deferred tool called before it is found is refused with the way to find it
  { text: '', toolCalls: [{ id: 'c0', name: 'shout', args: { text: 'hi' } }] },
  {
    text: '',
    toolCalls: [{ id: 'c1', name: 'tool_search', args: { query: 'upper-case a text' } }],
  },
  { text: '', toolCalls: [{ id: 'c2', name: 'shout', args: { text: 'hi' } }] },
  { text: 'It is HI.' },
]
/** the request's tools among ours (the base preset adds skill and spawn tools) */
const offered = (body: any) =>
  (body.tools ?? [])
    .map((t: any) => t.function.name)
    .filter((n: string) => ['shout', 'whisper', 'tool_search'].includes(n))
    .sort()

describe('an agent run with a deferred tool', () => {
  let server: ModelServer
  let p: Project
  before(async () => {
    server = await modelServer([])
    p = tempProject({ 'tools.mjs': TOOLS })
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

  it('finds it with tool_search, is offered it from the next turn, and calls it through the pipeline', async () => {
    server.push(...SCRIPT)
    const r = await runYoke(['run', 'shout hi', '--record', 'cassette.jsonl', '--json'], {
      cwd: p.dir,
      env: ENV,
    })
    assert.equal(r.code, 0, r.stderr)
    assert.equal(JSON.parse(r.stdout).text, 'It is HI.')
    const turns = server.requests.map((q) => q.body)
    assert.deepEqual(offered(turns[0]), ['tool_search', 'whisper'], 'shout is deferred: not sent')
    assert.deepEqual(offered(turns[1]), ['tool_search', 'whisper'], 'not found yet')
    assert.deepEqual(offered(turns[2]), ['shout', 'tool_search', 'whisper'], 'found: offered')
    const toolText = (body: any, id: string) =>
      body.messages.find((m: any) => m.role === 'tool' && m.tool_call_id === id)?.content
    assert.match(toolText(turns[1], 'c0'), /shout is not loaded: find it with tool_search first/)
    assert.match(toolText(turns[2], 'c1'), /Found .*\n- shout \(native, low risk;/)
    assert.equal(toolText(turns[3], 'c2'), 'HI')

    // the transcript has the search, what it found, and the call
    const runs = join(p.dir, '.yoke', 'runs')
    const [file] = readdirSync(runs)
    const lines = readFileSync(join(runs, file!), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    const results = lines.filter((l) => l.type === 'tool-result')
    assert.deepEqual(
      results.map((l) => [l.name, l.status]),
      [
        ['shout', 'UNKNOWN_TOOL'],
        ['tool_search', 'ok'],
        ['shout', 'ok'],
      ],
    )
  })

  it('replays offline to the same answer: the offered tools are the recorded ones', async () => {
    const replayed = await runYoke(['run', 'shout hi', '--config', 'replay.yaml', '--json'], {
      cwd: p.dir,
      env: ENV,
    })
    assert.equal(replayed.code, 0, replayed.stderr)
    assert.equal(JSON.parse(replayed.stdout).text, 'It is HI.')
  })
})
