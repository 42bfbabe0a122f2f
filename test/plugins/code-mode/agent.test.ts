// run_code in the agent loop: what each offer sends the model (direct, code, both), a run whose
// model writes one program instead of three tool calls (its transcript records the nested calls),
// recorded to a cassette and replayed offline with the same result. The model is scripted (no
// key here): it answers as a model would, from the request it gets.
import assert from 'node:assert/strict'
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import codeMode from '../../../plugins/code-mode/index.ts'
import type { ModelClient, ModelRequest } from '../../../plugins/models/api.ts'
import { CassetteWriter } from '../../../plugins/replay/api.ts'
import replay from '../../../plugins/replay/index.ts'
import { agentHarness, type AgentHarness } from '../../helpers/agent.ts'

const tools = {
  name: 'tools',
  inject: ['runtime'],
  apply(ctx: any) {
    ctx.runtime.register({
      name: 'mcp__notes__list',
      description: 'Lists the notes.',
      concurrency: 'safe',
      execute: () => ({ notes: ['alpha', 'beta', 'gamma'] }),
    })
    ctx.runtime.register({
      name: 'mcp__notes__read',
      description: 'Reads one note.',
      inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      concurrency: 'safe',
      execute: (args: { name: string }) => `${args.name}: ${args.name.length} letters`,
    })
  },
}

const PROGRAM = `const { notes } = await tools.notes.list({})
const texts = await Promise.all(notes.map((name) => tools.notes.read({ name })))
return texts.join('; ')`

/** A model that writes one program, then answers with what it returned. */
function scripted(seen: ModelRequest[]): ModelClient {
  return {
    provider: 'scripted',
    model: 'scripted-1',
    async complete(request) {
      seen.push(request)
      const result = request.messages.findLast((m) => m.role === 'tool')
      const usage = { inputTokens: JSON.stringify(request).length >> 2, outputTokens: 20 }
      if (result)
        return {
          text: `Summary: ${result.content.split('\n')[0]}`,
          toolCalls: [],
          stopReason: 'end',
          usage,
          model: 'scripted-1',
        }
      return {
        text: '',
        toolCalls: [{ id: 'c1', name: 'run_code', args: { code: PROGRAM } }],
        stopReason: 'tool_use',
        usage,
        model: 'scripted-1',
      }
    },
  }
}

const modelPlugin = (model: ModelClient) => ({
  name: 'scripted-model',
  provides: ['model'],
  apply: (ctx: any) => void ctx.provide('model', model),
})

const open: AgentHarness[] = []
after(async () => {
  for (const h of open) await h.close()
})

async function harness(model: [unknown, unknown], offer: string) {
  const h = await agentHarness({
    model,
    extra: [
      [tools, {}, 'tools'],
      [codeMode, { offer }, 'code'],
    ],
  })
  open.push(h)
  return h
}

describe('run_code in the agent loop', () => {
  it('each offer sends what it says: direct tools, run_code declaring them, or both', async () => {
    const names: Record<string, string[]> = {}
    for (const offer of ['direct', 'code', 'both']) {
      const seen: ModelRequest[] = []
      const h = await harness([modelPlugin(scripted(seen)), {}], offer)
      await h.run('read the notes')
      // the loop's own spawn tool is offered as any other
      names[offer] = seen[0]!.tools.map((t) => t.name).filter((n) => n !== 'spawn')
      if (offer !== 'direct') {
        const run = seen[0]!.tools.find((t) => t.name === 'run_code')!
        assert.match(run.description, /declare const tools: \{[\s\S]*\n {2}notes: \{/)
        assert.match(run.description, /read\(args: \{\n\s+name: string\n\s+\}\): Promise<string>/)
      }
    }
    assert.deepEqual(names.direct, ['mcp__notes__list', 'mcp__notes__read'])
    assert.deepEqual(names.code, ['run_code'])
    assert.deepEqual(names.both, ['mcp__notes__list', 'mcp__notes__read', 'run_code'])
  })

  it('a run with one program: the transcript records its nested calls; its cassette replays', async () => {
    const cassette = join(tmpdir(), `yoke-code-mode-${process.pid}.jsonl`)
    const writer = new CassetteWriter(cassette)
    const h = await harness([modelPlugin(writer.wrap(scripted([]), 'main')), {}], 'code')
    const live = await h.run('read the notes')
    writer.close()
    assert.equal(live.result.status, 'done', live.result.reason)
    assert.equal(live.result.turns, 2, 'one program instead of four tool turns')
    assert.equal(live.result.text, 'Summary: alpha: 5 letters; beta: 4 letters; gamma: 5 letters')
    const lines = readFileSync(live.result.transcript!, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    const step = lines.find((l) => l.type === 'tool-result')
    assert.equal(step.name, 'run_code')
    assert.match(
      step.text,
      /tool calls \(4\): mcp__notes__list ok, mcp__notes__read ok, mcp__notes__read ok, mcp__notes__read ok/,
    )
    // offline: the replay provider plays the cassette; the same requests, the same answer
    const again = await harness([replay, { cassette }], 'code')
    const replayed = await again.run('read the notes')
    assert.equal(replayed.result.status, 'done', replayed.result.reason)
    assert.equal(replayed.result.text, live.result.text)
    rmSync(cassette, { force: true })
  })
})
