// A run's asker goes with each of its tool calls (asked before the global approval bridges), so
// the person who started the run answers for it; a run without one passes none. No kernel: a bare
// Run over a fake model and a fake tool layer.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { defineAgentHooks } from '../../../plugins/agent-loop/agent-loop.ts'
import { Run } from '../../../plugins/agent-loop/loop.ts'
import type { ModelClient } from '../../../plugins/models/api.ts'
import type { Asker, CallOptions } from '../../../src/index.ts'

async function runWith(asker?: Asker) {
  const calls: Array<CallOptions | undefined> = []
  let turn = 0
  const model: ModelClient = {
    provider: 'fake',
    model: 'fake-1',
    complete: async () => ({
      text: turn ? 'done' : '',
      toolCalls: turn++ ? [] : [{ id: 'c1', name: 'echo', args: { text: 'hi' } }],
      stopReason: turn === 1 ? 'tool_use' : 'end',
      usage: { inputTokens: 1, outputTokens: 1 },
      model: 'fake-1',
    }),
  }
  const tool = { id: 'echo#1', name: 'echo', description: 'echo', inputSchema: { type: 'object' } }
  const layer = {
    list: () => [tool],
    call: async (name: string, _args: unknown, options?: CallOptions) => {
      calls.push(options)
      return {
        callId: 'c1',
        tool: name,
        status: 'ok',
        ok: true,
        content: [{ type: 'text', text: 'hi' }],
        durationMs: 1,
      }
    },
  }
  const never = new AbortController().signal
  const quiet = () => {}
  const run = new Run(
    'run-1',
    {
      tasks: { wait: async () => undefined, cancel: () => false },
      prompt: () => undefined,
      hooks: defineAgentHooks(),
      logger: { debug: quiet, info: quiet, warn: quiet, error: quiet } as never,
    },
    model,
    {
      layer: layer as never,
      scope: 'global',
      lane: 'main',
      budget: { maxTurns: 5, maxTokens: 10_000, maxMs: 60_000 },
      cancelSignal: never,
      ...(asker && { asker }),
    },
    never,
    quiet,
  )
  const result = await run.execute('say hi')
  return { result, calls }
}

describe('agent loop: the asker travels with the calls', () => {
  it("each tool call carries the run's asker", async () => {
    const asker: Asker = { name: 'the cli', ask: async () => 'allow-once' }
    const { result, calls } = await runWith(asker)
    assert.equal(result.status, 'done')
    assert.equal(calls.length, 1)
    assert.equal(calls[0]?.asker, asker)
    assert.equal(calls[0]?.caller, 'agent:run-1')
  })

  it('a run without one passes none (the bridges answer)', async () => {
    const { calls } = await runWith()
    assert.equal(calls.length, 1)
    assert.equal(calls[0] && 'asker' in calls[0], false)
  })
})
