// The agent loop's stop/continue decision, without a kernel: when the model answers with no tool
// calls, `stop` taps may send the run on with a reason (the next user message), at most
// maxStopContinuations times in a row; past the bound the run ends `done` and the log says why.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { StopDecision } from '../../../plugins/agent-loop/api.ts'
import { defineAgentHooks } from '../../../plugins/agent-loop/agent-loop.ts'
import { afterStop, Run } from '../../../plugins/agent-loop/loop.ts'
import type { ModelClient, ModelRequest } from '../../../plugins/models/api.ts'

const CONTINUE = (reason: string): StopDecision => ({ kind: 'continue', reason })

describe('agent loop: afterStop', () => {
  it('stops on stop, continues below the bound, and is bounded at it', () => {
    assert.equal(afterStop({ kind: 'stop' }, 0, 3), 'stop')
    assert.equal(afterStop(CONTINUE('go on'), 0, 3), 'continue')
    assert.equal(afterStop(CONTINUE('go on'), 2, 3), 'continue')
    assert.equal(afterStop(CONTINUE('go on'), 3, 3), 'bounded')
    assert.equal(afterStop(CONTINUE('go on'), 0, 0), 'bounded')
    assert.equal(afterStop({ kind: 'stop' }, 9, 3), 'stop')
  })
})

/** A run on a model that always answers with text and no tool calls; `stop` taps decide. */
function bareRun(maxStopContinuations: number, decide: (continued: number) => StopDecision) {
  const requests: ModelRequest[] = []
  const warnings: string[] = []
  let answers = 0
  const model: ModelClient = {
    provider: 'fake',
    model: 'fake-1',
    async complete(request) {
      requests.push(request)
      return {
        text: `answer ${++answers}`,
        toolCalls: [],
        stopReason: 'end',
        usage: { inputTokens: 1, outputTokens: 1 },
        model: 'fake-1',
      }
    },
  }
  const hooks = defineAgentHooks()
  hooks.stop!.tap('test', (_decision, info) => decide(info.continued))
  const never = new AbortController().signal
  const run = new Run(
    'run-1',
    {
      tasks: { wait: async () => undefined, cancel: () => false },
      prompt: () => undefined,
      hooks,
      logger: {
        debug() {},
        info() {},
        warn: (m: string) => void warnings.push(m),
        error() {},
      } as never,
      maxStopContinuations,
    },
    model,
    {
      layer: { list: () => [], call: () => Promise.reject(new Error('no tools')) } as never,
      scope: 'global',
      lane: 'main',
      budget: { maxTurns: 20, maxTokens: 10_000, maxMs: 60_000 },
      cancelSignal: never,
    },
    never,
    () => {},
  )
  return { run, requests, warnings }
}

describe('agent loop: a run asked to continue', () => {
  it('goes on with the reason as the next user message, then ends when the taps say stop', async () => {
    const { run, requests } = bareRun(3, (continued) =>
      continued < 2 ? CONTINUE(`check again (${continued})`) : { kind: 'stop' },
    )
    const result = await run.execute('the task')
    assert.equal(result.status, 'done')
    assert.equal(result.text, 'answer 3')
    assert.equal(requests.length, 3)
    const users = result.messages.filter((m) => m.role === 'user').map((m) => m.content)
    assert.deepEqual(users, ['the task', 'check again (0)', 'check again (1)'])
  })

  it('ends after maxStopContinuations in a row, and the log names the bound', async () => {
    const { run, requests, warnings } = bareRun(2, () => CONTINUE('never done'))
    const result = await run.execute('the task')
    assert.equal(result.status, 'done')
    assert.equal(requests.length, 3, 'the first answer and two continuations')
    assert.match(warnings.join('\n'), /ends after 2 continuations .*maxStopContinuations/)
  })
})
