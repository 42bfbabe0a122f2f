// The rephrase loop (issue 32): a tool_search that finds nothing scoring well answers "no tool
// matches", loads nothing, and names the closest tools as not matches with their one-line
// summaries; the model rephrases once in those tools' terms, finds the tool and calls it.
// Recorded against a real HTTP model server, then replayed offline from the cassette to the same end.
import assert from 'node:assert/strict'
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
      semantic: off
      rules: [{ tool: '*', source: native, level: deferred }]
  tools:
    use: ./tools.mjs
`
const SCRIPT: ScriptTurn[] = [
  // the user's words: only "text" is a tool's word, so nothing scores well
  {
    text: '',
    toolCalls: [{ id: 'c1', name: 'tool_search', args: { query: 'make my text loud and big' } }],
  },
  // rephrased once, in the closest tool's own terms
  {
    text: '',
    toolCalls: [{ id: 'c2', name: 'tool_search', args: { query: 'upper-case a text' } }],
  },
  { text: '', toolCalls: [{ id: 'c3', name: 'shout', args: { text: 'hi' } }] },
  { text: 'It is HI.' },
]
const offered = (body: any) =>
  (body.tools ?? [])
    .map((t: any) => t.function.name)
    .filter((n: string) => ['shout', 'whisper', 'tool_search'].includes(n))
    .sort()
const toolText = (body: any, id: string) =>
  body.messages.find((m: any) => m.role === 'tool' && m.tool_call_id === id)?.content

describe('tool_search finds nothing that scores well: the model rephrases', () => {
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

  it('is told no tool matches, with the closest named as not matches; rephrased, it finds and calls the tool', async () => {
    server.push(...SCRIPT)
    const r = await runYoke(['run', 'make hi loud', '--record', 'cassette.jsonl', '--json'], {
      cwd: p.dir,
      env: ENV,
    })
    assert.equal(r.code, 0, r.stderr)
    assert.equal(JSON.parse(r.stdout).text, 'It is HI.')
    const turns = server.requests.map((q) => q.body)
    assert.equal(turns.length, 4)
    const none = toolText(turns[1], 'c1')
    assert.match(none, /^No tool matches "make my text loud and big"\. /)
    assert.match(none, /nothing was loaded/)
    assert.match(none, /The closest, which are NOT matches/)
    // each closest tool with its one-line summary, for the model to rephrase in its terms
    assert.match(none, /\n- shout \(native\): Upper-case a text\n/)
    assert.match(none, /\n- whisper \(native\): Lower-case a text\n/)
    assert.match(none, /Rephrase at most once/)
    assert.deepEqual(offered(turns[1]), ['tool_search'], 'nothing loaded by a no-match answer')
    assert.match(toolText(turns[2], 'c2'), /^Found .*\n- shout \(native, low risk;/)
    assert.deepEqual(offered(turns[2]), ['shout', 'tool_search', 'whisper'], 'found: offered')
    assert.equal(toolText(turns[3], 'c3'), 'HI')
  })

  it('replays offline from the cassette to the same answer', async () => {
    const replayed = await runYoke(['run', 'make hi loud', '--config', 'replay.yaml', '--json'], {
      cwd: p.dir,
      env: ENV,
    })
    assert.equal(replayed.code, 0, replayed.stderr)
    assert.equal(JSON.parse(replayed.stdout).text, 'It is HI.')
  })
})
