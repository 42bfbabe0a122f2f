// An upstream MCP task that asks a question (2025-11-25: the task goes input_required and the
// server sends elicitation/create, naming the task, only on a pending tasks/result), with the real
// server-everything's simulate-research-query { ambiguous: true }. The question reaches yoke's
// answerer for the call that runs the task, even while another call of that server is in flight;
// its answer reaches the server (the report carries it); an unanswered question is bounded
// (callMs: cancel, the task goes on); a call that ends while its question waits withdraws it.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { McpAnswer, McpQuestion } from '../../../plugins/mcp/api.ts'
import { everything, mcpHarness, text, type McpHarness } from '../../helpers/mcp.ts'

const RESEARCH = 'mcp__everything__simulate-research-query'
const CLARIFY = /could have multiple interpretations/

describe('mcp-client: an upstream task that asks a question (server-everything)', () => {
  let h: McpHarness
  let answer: (q: McpQuestion) => Promise<McpAnswer>
  before(async () => {
    h = await mcpHarness()
    // callMs bounds a question nobody answers (third test); status changes come every second
    await h.add('everything', everything('everything', { callMs: 5000 }))
    h.hub.answerer({ name: 'test', ask: (q) => answer(q) })
  })
  after(() => h.close())

  it("asks the task's call, and the answer reaches the server, while another call of it waits on its own question", async () => {
    const asked: Array<{ message: string; call?: string }> = []
    let releaseOther!: () => void
    const otherHeld = new Promise<void>((resolve) => (releaseOther = resolve))
    let otherAsked!: () => void
    const otherIsAsking = new Promise<void>((resolve) => (otherAsked = resolve))
    answer = async (q) => {
      asked.push({ message: q.message, call: q.call?.name })
      if (CLARIFY.test(q.message)) {
        releaseOther()
        return { action: 'accept', content: { interpretation: 'historical' } }
      }
      otherAsked()
      await otherHeld // in flight until the task's question was answered
      return { action: 'decline' }
    }
    // a call of the same server that stays in flight: with two calls running, a question that
    // does not name its task could not be told apart
    const other = h.rt.call('mcp__everything__trigger-elicitation-request', {})
    await otherIsAsking
    const progress: string[] = []
    const result = await h.rt.call(
      RESEARCH,
      { topic: 'replicas', ambiguous: true },
      { onProgress: (e) => void progress.push(String((e as { status?: string }).status)) },
    )
    assert.equal(result.status, 'ok', text(result))
    assert.match(text(result), /Clarification\*\*: historical/, 'the answer reached the server')
    assert.ok(progress.includes('input_required'), progress.join(','))
    const task = asked.find((a) => CLARIFY.test(a.message))
    assert.deepEqual(task?.call, RESEARCH, JSON.stringify(asked))
    assert.equal((await other).status, 'ok')
    assert.ok(
      h.logs.some((l) =>
        /asked during mcp__everything__simulate-research-query .*→ accept by test/.test(l.message),
      ),
    )
  })

  it("another call's question is asked while a task of the same server runs", async () => {
    const asked: Array<string | undefined> = []
    answer = async (q) => (asked.push(q.call?.name), { action: 'decline' })
    let running!: () => void
    const started = new Promise<void>((resolve) => (running = resolve))
    const task = h.rt.call(
      RESEARCH,
      { topic: 'beside', ambiguous: false },
      { onProgress: () => running() },
    )
    await started
    // the task runs and names its own questions: this call's question is this call's alone
    const other = await h.rt.call('mcp__everything__trigger-elicitation-request', {})
    assert.equal(other.status, 'ok', text(other))
    assert.deepEqual(asked, ['mcp__everything__trigger-elicitation-request'])
    assert.equal((await task).status, 'ok')
  })

  it('a question nobody answers ends as cancel within callMs, and the task goes on to its end', async () => {
    let withdrawn = false
    answer = (q) =>
      new Promise((resolve) =>
        q.signal.addEventListener('abort', () => {
          withdrawn = true
          resolve({ action: 'accept', content: { interpretation: 'late' } })
        }),
      )
    const result = await h.rt.call(RESEARCH, { topic: 'unanswered', ambiguous: true })
    assert.equal(result.status, 'ok', text(result))
    assert.ok(withdrawn, 'the question was withdrawn at its bound')
    assert.match(text(result), /User cancelled - using default interpretation/)
    assert.ok(
      h.logs.some((l) =>
        /asked during mcp__everything__simulate-research-query .*→ cancel .*no answer within 5000 ms/.test(
          l.message,
        ),
      ),
    )
  })

  it('a call that ends while its question waits withdraws the question and ends, never hangs', async () => {
    const stop = new AbortController()
    let withdrawn!: () => void
    const gone = new Promise<void>((resolve) => (withdrawn = resolve))
    answer = (q) =>
      new Promise((resolve) => {
        q.signal.addEventListener('abort', () => (withdrawn(), resolve({ action: 'cancel' })))
        stop.abort()
      })
    const result = await h.rt.call(
      RESEARCH,
      { topic: 'abandoned', ambiguous: true },
      { signal: stop.signal },
    )
    assert.equal(result.status, 'ABORTED', text(result))
    await gone
  })
})
