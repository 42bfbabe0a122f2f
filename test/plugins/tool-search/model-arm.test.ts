// The eval's model arm (bench/eval-tools/model-arm.ts, issue 32): without a key it says it skipped
// and which variable to set; with one, a model searches with tool_search (answered as the plugin
// answers), may rephrase when nothing matches, and picks a tool or none — here against the
// test model server speaking OpenAI's wire format, scripted, every request recorded.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { RegisteredTool } from 'yoke'
import { modelArm, modelFromEnv } from '../../../bench/eval-tools/model-arm.ts'
import { ToolFinder } from '../../../plugins/tool-search/finder.ts'
import { modelServer, type ModelServer } from '../../helpers/model-server.ts'

const tool = (name: string, description: string) =>
  ({
    name,
    description,
    source: 'mcp:mail',
    risk: 'low',
    inputSchema: { type: 'object' },
  }) as unknown as RegisteredTool
const TOOLS = [
  tool('send_email', 'Send an email to a recipient'),
  tool('list_inbox', 'List the emails in the inbox'),
  tool('delete_email', 'Delete an email'),
]

describe('the model arm', () => {
  let server: ModelServer
  before(async () => {
    server = await modelServer([
      // a served need: one search, then the pick
      { text: '', toolCalls: [{ id: 'a1', name: 'tool_search', args: { query: 'email Bob' } }] },
      { text: '', toolCalls: [{ id: 'a2', name: 'choose_tool', args: { name: 'send_email' } }] },
      // a need nothing serves: no match, rephrased once, then none
      {
        text: '',
        toolCalls: [{ id: 'b1', name: 'tool_search', args: { query: 'order a pizza' } }],
      },
      {
        text: '',
        toolCalls: [{ id: 'b2', name: 'tool_search', args: { query: 'food delivery' } }],
      },
      { text: '', toolCalls: [{ id: 'b3', name: 'choose_tool', args: { name: 'none' } }] },
    ])
  })
  after(async () => {
    await server?.close()
  })

  it('is skipped without a key, saying which to set', () => {
    const found = modelFromEnv({})
    assert.ok('skipped' in found)
    assert.match(found.skipped, /^skipped: no key \(set ANTHROPIC_API_KEY or OPENAI_API_KEY/)
  })

  it('with a key: the model searches, rephrases on no match, picks; scored as picks and "none"', async () => {
    const found = modelFromEnv({
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: server.openaiBaseUrl,
      YOKE_EVAL_MODEL: 'gpt-test',
    })
    assert.ok('client' in found)
    const s = await modelArm(
      found.client,
      new ToolFinder({ lexicon: null }),
      TOOLS,
      [
        { q: 'write to Bob that the build is green', gold: ['send_email'] },
        { q: 'order a pepperoni pizza', gold: [] },
      ],
      [new Set(['send_email']), new Set()],
    )
    assert.deepEqual(s, { accuracy: 1, nmP: 1, nmR: 1, nmF1: 1, searches: 1.5 })
    const bodies = server.requests.map((r) => r.body as any)
    assert.equal(bodies.length, 5)
    assert.equal(bodies[0].messages.at(-1).content, 'write to Bob that the build is green')
    const answer = (i: number) => bodies[i].messages.at(-1).content as string
    assert.match(answer(1), /^Found 3 .*\n(- .*\n)?- send_email /)
    assert.match(answer(3), /^No tool matches "order a pizza"\. /)
    assert.match(answer(4), /^No tool matches "food delivery"\. /)
  })
})
