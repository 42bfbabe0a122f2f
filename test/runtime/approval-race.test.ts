// Approvals that race: a bridge with `race: true` is asked alongside the call's own asker (or the
// bridge that would be asked), each with a signal of its own. The first answer wins and the
// loser's signal aborts with an Outrun naming the winner; a late answer is ignored; a racer that
// throws does not decide; the call's end ends both. Without a racing bridge nothing changes. Also:
// a refusal's reason reaches the DENIED error, every DENIED result says which stage refused, and
// the terminal's prompt, as a call's asker, says it lost when a racing bridge answers first.
import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { describe, it } from 'node:test'
import { promptBridge } from '../../src/cli/approval-prompt.ts'
import { tapHook, ToolRuntime } from '../../src/index.ts'
import type {
  ApprovalAnswer,
  ApprovalBridge,
  ApprovalReply,
  ApprovalRequest,
  Asker,
  Outrun,
  Question,
  QuestionAnswer,
} from '../../src/index.ts'
import { until } from '../helpers/until.ts'

/** A runtime whose `guarded` tool asks for approval (a pre-execute tap says `ask`). */
function asking() {
  const rt = new ToolRuntime()
  let ran = 0
  rt.register({ name: 'guarded', execute: () => `ran ${++ran}` })
  tapHook(rt.hooks.preExecute, 'policy', () => ({ kind: 'ask' as const, reason: 'high risk' }))
  return { rt, ran: () => ran }
}

/** Someone asked who answers when told to (or throws), and remembers what it was asked with. */
function person(name: string) {
  const asked: ApprovalRequest[] = []
  const questions: Question[] = []
  let reply: (a: ApprovalAnswer | ApprovalReply | Error) => void = () => {}
  let replyQuestion: (a: QuestionAnswer) => void = () => {}
  const who = {
    name,
    asked,
    questions,
    ask: (request: ApprovalRequest) =>
      new Promise<ApprovalAnswer | ApprovalReply>((resolve, reject) => {
        asked.push(request)
        reply = (a) => (a instanceof Error ? reject(a) : resolve(a))
      }),
    answer: (question: Question) =>
      new Promise<QuestionAnswer>((resolve) => {
        questions.push(question)
        replyQuestion = resolve
      }),
    says: (a: ApprovalAnswer | ApprovalReply | Error) => reply(a),
    fills: (a: QuestionAnswer) => replyQuestion(a),
  }
  return who
}

const racer = (name: string, handles?: ApprovalBridge['handles']) =>
  Object.assign(person(name), { race: true as const }, handles && { handles })

describe('approvals: racing a call’s own asker', () => {
  it('without a racing bridge nothing changes: the asker alone, with the request as it is', async () => {
    const { rt } = asking()
    const asker = person('terminal')
    const bridge = person('bridge')
    rt.approvals.register(bridge)
    const signal = new AbortController().signal
    const running = rt.call('guarded', {}, { asker, signal })
    await until('the asker to be asked', () => asker.asked.length === 1)
    assert.equal(asker.asked[0]!.racing, undefined)
    assert.equal(asker.asked[0]!.signal.aborted, false)
    asker.says('allow-once')
    assert.equal((await running).ok, true)
    assert.equal(bridge.asked.length, 0, 'the asker answers for its call before any bridge')
  })

  it('the racer answers first: the call goes on, the asker’s signal aborts naming it, its late answer is ignored', async () => {
    const { rt, ran } = asking()
    const asker = person('terminal')
    const browser = racer('console')
    rt.approvals.register(browser)
    const running = rt.call('guarded', {}, { asker })
    await until('both to be asked', () => asker.asked.length === 1 && browser.asked.length === 1)
    assert.deepEqual(asker.asked[0]!.racing, ['console'])
    assert.deepEqual(browser.asked[0]!.racing, ['terminal'])
    assert.notEqual(asker.asked[0]!.signal, browser.asked[0]!.signal, 'a signal each')
    browser.says('allow-once')
    const result = await running
    assert.equal(result.ok, true)
    const lost = asker.asked[0]!.signal
    assert.equal(lost.aborted, true)
    assert.equal((lost.reason as Outrun).by, 'console')
    assert.equal((lost.reason as Outrun).answer, 'allow-once')
    assert.equal(browser.asked[0]!.signal.aborted, false, 'the winner is not aborted')
    asker.says('deny') // late: changes nothing
    await new Promise(setImmediate)
    assert.equal(ran(), 1)
    assert.equal(browser.asked[0]!.signal.aborted, false)
  })

  it('the asker answers first with a refusal and a reason: DENIED says it, from the approval stage', async () => {
    const { rt, ran } = asking()
    const asker = person('yoke tools call')
    const browser = racer('console')
    rt.approvals.register(browser)
    const running = rt.call('guarded', {}, { asker })
    await until('both to be asked', () => asker.asked.length === 1 && browser.asked.length === 1)
    asker.says({ answer: 'deny', reason: 'not on a Friday' })
    const result = await running
    assert.equal(result.status, 'DENIED')
    assert.match(result.error!.message, /refused through "yoke tools call": not on a Friday/)
    assert.equal(result.error!.stage, 'approval')
    assert.equal((browser.asked[0]!.signal.reason as Outrun).by, 'yoke tools call')
    assert.equal((browser.asked[0]!.signal.reason as Outrun).answer, 'deny')
    browser.says('allow-once')
    await new Promise(setImmediate)
    assert.equal(ran(), 0, 'a late allow runs nothing')
  })

  it('a racer that throws does not decide: the other still answers, and the thrower leaves `racing`', async () => {
    const { rt } = asking()
    const asker = person('terminal')
    const browser = racer('console')
    rt.approvals.register(browser)
    const running = rt.call('guarded', {}, { asker })
    await until('both to be asked', () => asker.asked.length === 1 && browser.asked.length === 1)
    browser.says(new Error('the page went away'))
    await until('the thrower to leave the asker’s rivals', () => !asker.asked[0]!.racing!.length)
    assert.equal(asker.asked[0]!.signal.aborted, false)
    asker.says('allow-once')
    assert.equal((await running).ok, true)
  })

  it('when every one throws, the call is refused naming each failure', async () => {
    const { rt } = asking()
    const asker = person('terminal')
    const browser = racer('console')
    rt.approvals.register(browser)
    const running = rt.call('guarded', {}, { asker })
    await until('both to be asked', () => asker.asked.length === 1 && browser.asked.length === 1)
    browser.says(new Error('the page went away'))
    asker.says(new Error('the input ended'))
    const result = await running
    assert.equal(result.status, 'DENIED')
    assert.match(result.error!.message, /"console" failed: the page went away/)
    assert.match(result.error!.message, /"terminal" failed: the input ended/)
  })

  it('the call’s own end (abort) ends both: each signal aborts, one result', async () => {
    const { rt, ran } = asking()
    const asker = person('terminal')
    const browser = racer('console')
    rt.approvals.register(browser)
    const abort = new AbortController()
    const running = rt.call('guarded', {}, { asker, signal: abort.signal })
    await until('both to be asked', () => asker.asked.length === 1 && browser.asked.length === 1)
    abort.abort()
    const result = await running
    assert.equal(result.status, 'ABORTED')
    assert.equal(asker.asked[0]!.signal.aborted, true)
    assert.equal(browser.asked[0]!.signal.aborted, true)
    browser.says('allow-once')
    await new Promise(setImmediate)
    assert.equal(ran(), 0)
  })

  it('races the bridge that would be asked when the call has no asker; a racer that does not handle the call is not asked', async () => {
    const { rt } = asking()
    const terminal = person('terminal')
    const away = racer('elsewhere', () => false)
    const browser = racer('console', () => true)
    rt.approvals.register(terminal)
    rt.approvals.register(away)
    rt.approvals.register(browser)
    const running = rt.call('guarded', {})
    await until('both to be asked', () => terminal.asked.length === 1 && browser.asked.length === 1)
    assert.equal(away.asked.length, 0)
    terminal.says('allow-session')
    assert.equal((await running).ok, true)
    assert.equal((await rt.call('guarded', {})).ok, true, 'the session grant holds')
    assert.equal(terminal.asked.length, 1)
  })

  it('a racer with no one else to race is asked alone, with the request as it is', async () => {
    const { rt } = asking()
    const browser = racer('console')
    rt.approvals.register(browser)
    const running = rt.call('guarded', {})
    await until('the racer to be asked', () => browser.asked.length === 1)
    assert.equal(browser.asked[0]!.racing, undefined)
    browser.says({ answer: 'deny', reason: 'no' })
    assert.match((await running).error!.message, /refused through "console": no/)
  })
})

describe('approvals: questions race the same way', () => {
  it('the asker’s answer and the racer’s: the first wins, with who gave it; the other is told', async () => {
    const { rt } = asking()
    const asker = person('mcp-server (elicitation)')
    const browser = racer('console')
    rt.approvals.register(browser)
    const call = { id: 'c1', name: 'guarded', args: {}, scope: 'global', caller: 'x', asker }
    const asking1 = rt.approvals.question({
      from: 'MCP server "files"',
      call,
      mode: 'form',
      message: 'which folder?',
      signal: new AbortController().signal,
    })
    await until(
      'both to be asked',
      () => asker.questions.length > 0 && browser.questions.length > 0,
    )
    assert.deepEqual(browser.questions[0]!.racing, ['mcp-server (elicitation)'])
    browser.fills({ action: 'accept', content: { folder: 'docs' } })
    assert.deepEqual(await asking1, {
      action: 'accept',
      content: { folder: 'docs' },
      by: 'console',
    })
    const reason = asker.questions[0]!.signal.reason as Outrun
    assert.deepEqual([reason.by, reason.answer], ['console', 'accept'])
  })
})

describe('approvals: which stage refused a DENIED call', () => {
  it('pre-execute, approval and guard each say so on the result’s error', async () => {
    const rt = new ToolRuntime()
    rt.register({ name: 'echo', execute: (a) => String(a.text) })
    rt.approvals.register({ name: 'no', ask: async () => 'deny' })
    tapHook(rt.hooks.preExecute, 'policy', (d, call) =>
      call.args.text === 'deny'
        ? { kind: 'deny' as const, reason: 'no' }
        : call.args.text === 'ask'
          ? { kind: 'ask' as const, reason: 'check' }
          : d,
    )
    rt.guard((call) => (call.args.text === 'guard' ? 'the guard says no' : undefined))
    const stages = []
    for (const text of ['deny', 'ask', 'guard', 'ok']) {
      const r = await rt.call('echo', { text })
      stages.push(r.error?.stage ?? r.status)
    }
    assert.deepEqual(stages, ['pre-execute', 'approval', 'guard', 'ok'])
  })
})

describe('approvals: the terminal’s prompt loses a race', () => {
  it('a racing bridge answers first: the prompt stops waiting and says who answered', async () => {
    const { rt } = asking()
    const input = new PassThrough()
    const output = new PassThrough()
    let printed = ''
    output.on('data', (d) => (printed += d))
    const terminal: Asker & { close(): void } = promptBridge(
      input,
      output as unknown as NodeJS.WriteStream,
    )
    const browser = racer('console')
    rt.approvals.register(browser)
    try {
      const running = rt.call('guarded', {}, { asker: terminal })
      await until('the prompt to be shown', () => printed.includes('allow?'))
      await until('the racer to be asked', () => browser.asked.length === 1)
      browser.says('allow-once')
      assert.equal((await running).ok, true)
      await until('the prompt to say it lost', () => printed.includes('answered first'))
      assert.match(printed, /answered first through console \(allow-once\)/)
      assert.doesNotMatch(printed, /denied/)
      input.write('n\n') // the next line is not taken by the abandoned prompt
    } finally {
      terminal.close()
    }
  })
})
