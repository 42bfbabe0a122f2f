// Agent spans: an agent run (invoke_agent), its model requests (chat) and its tool calls
// (execute_tool) in one trace, the run's span the parent of both; played offline from a replay
// cassette (recorded first from a scripted model in the same test).
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import type { ModelClient, ModelRequest, ModelResponse } from '../../../plugins/models/api.ts'
import replayPlugin from '../../../plugins/replay/index.ts'
import telemetryPlugin from '../../../plugins/telemetry/index.ts'
import type { SpanRecord, TelemetryApi } from '../../../plugins/telemetry/api.ts'
import { agentHarness } from '../../helpers/agent.ts'

/** A model that asks for `echo` once, then answers. */
function scripted(): ModelClient {
  let turn = 0
  return {
    provider: 'script',
    model: 'script-1',
    complete: async (_request: ModelRequest): Promise<ModelResponse> =>
      ++turn === 1
        ? {
            text: '',
            toolCalls: [{ id: 'tc1', name: 'echo', args: { text: 'hi' } }],
            stopReason: 'tool_use',
            usage: { inputTokens: 10, outputTokens: 5 },
            model: 'script-1',
          }
        : {
            text: 'done',
            toolCalls: [],
            stopReason: 'end',
            usage: { inputTokens: 20, outputTokens: 2 },
            model: 'script-1',
          },
  }
}

const modelPlugin = {
  name: 'scripted-model',
  provides: ['model'],
  apply: (ctx: { provide(name: string, value: unknown): void }) =>
    void ctx.provide('model', scripted()),
}

const echoTool = {
  name: 'echo-tool',
  inject: ['runtime'],
  apply(ctx: any) {
    ctx.effect(
      'echo',
      ctx.runtime.register(
        { name: 'echo', concurrency: 'safe', execute: (a: { text?: string }) => a.text ?? '' },
        ctx.key,
      ),
    )
  },
}

describe('telemetry agent spans', () => {
  it('puts a replayed run, its chat requests and its tool calls in one trace under the run’s span', async () => {
    // record the cassette from the scripted model
    const recorder = await agentHarness({
      model: [modelPlugin, {}],
      extra: [[echoTool, {}, 'echo']],
    })
    const cassette = join(recorder.root, 'run.jsonl')
    try {
      const { result } = await recorder.run('say hi', { record: cassette })
      assert.equal(result.status, 'done')
      // play it back offline, with telemetry recording
      const h = await agentHarness({
        model: [replayPlugin, { cassette }],
        extra: [
          [echoTool, {}, 'echo'],
          [telemetryPlugin, {}, 'telemetry'],
        ],
      })
      try {
        const telemetry = h.kernel.services.get('telemetry')!.value as TelemetryApi
        const hold = telemetry.record()
        const replayed = await h.run('say hi')
        hold()
        assert.equal(replayed.result.status, 'done', replayed.result.reason)
        const spans = telemetry.recent()
        const named = (p: string) => spans.filter((s) => s.name.startsWith(p))
        const [run] = named('invoke_agent') as [SpanRecord]
        const chats = named('chat')
        const tools = named('execute_tool')
        assert.equal(chats.length, 2)
        assert.equal(tools.length, 1)
        assert.equal(run.attributes['gen_ai.operation.name'], 'invoke_agent')
        assert.equal(run.attributes['gen_ai.agent.id'], replayed.result.runId)
        assert.equal(run.attributes['gen_ai.usage.input_tokens'], 30)
        assert.equal(run.parentSpanId, undefined)
        for (const s of [...chats, ...tools]) {
          assert.equal(s.traceId, run.traceId, s.name)
          assert.equal(s.parentSpanId, run.spanId, s.name)
        }
        assert.deepEqual(
          chats.map((c) => c.attributes['yoke.agent.turn']),
          [1, 2],
        )
        assert.equal(chats[0]!.attributes['gen_ai.usage.output_tokens'], 5)
        assert.deepEqual(chats[0]!.attributes['gen_ai.response.finish_reasons'], ['tool_use'])
        assert.equal(chats[0]!.kind, 'client')
        assert.equal(chats[0]!.attributes['gen_ai.input.messages'], undefined, 'content off')
        const [tool] = tools as [SpanRecord]
        assert.equal(tool.attributes['gen_ai.tool.name'], 'echo')
        assert.equal(tool.attributes['yoke.caller'], `agent:${replayed.result.runId}`)
        // the tool ran after the first request answered and before the second was asked
        assert.ok(tool.startMs >= chats[0]!.endMs && tool.endMs <= chats[1]!.startMs)
        assert.ok(run.startMs <= chats[0]!.startMs && run.endMs >= chats[1]!.endMs)
      } finally {
        await h.close()
      }
    } finally {
      await recorder.close()
    }
  })
})
