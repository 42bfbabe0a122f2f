// shell-hooks' decisions without a kernel: a before_tool_call answer read into the call's decision
// (payload.ts), and one hook's run as an object (runner.ts): failures never block, three in a row
// disable it, a success resets the count.
import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { describe, it } from 'node:test'
import type { Logger, PreDecision } from '../../../src/index.ts'
import { hookConfig } from '../../../plugins/shell-hooks/api.ts'
import { beforeToolDecision, parseArgs } from '../../../plugins/shell-hooks/payload.ts'
import { BREAKER, HookRunner } from '../../../plugins/shell-hooks/runner.ts'

const hook = { name: 'before_tool_call#0 ./guard', command: './guard' }
const allow = { kind: 'allow' } as unknown as PreDecision
const call = (valid: boolean) => ({
  name: 'write',
  tool: { validate: () => valid } as never,
})

describe('shell-hooks: a before_tool_call answer', () => {
  it('exit 1 denies with stdout as the reason, or names the command', () => {
    const said = beforeToolDecision(hook, { code: 1, stdout: ' no \n' }, call(true), allow)
    assert.deepEqual(said.decision, { kind: 'deny', reason: 'no' })
    const silent = beforeToolDecision(hook, { code: 1, stdout: '' }, call(true), allow)
    assert.deepEqual(silent.decision, { kind: 'deny', reason: 'the hook ./guard denied it' })
  })

  it('exit 2 replaces the arguments when they match the schema; else the call keeps its own, with a warning', () => {
    const ok = beforeToolDecision(hook, { code: 2, stdout: '{"path":"a"}' }, call(true), allow)
    assert.deepEqual(ok.decision, { kind: 'allow', args: { path: 'a' } })
    assert.equal(ok.warning, undefined)
    const bad = beforeToolDecision(hook, { code: 2, stdout: '{"path":1}' }, call(false), allow)
    assert.equal(bad.decision, allow)
    assert.match(bad.warning!, /not a JSON object matching write's schema; the call keeps its own/)
    const deep = beforeToolDecision(hook, { code: 2, stdout: '['.repeat(100) }, call(true), allow)
    assert.equal(deep.decision, allow, 'not JSON: kept')
  })

  it('exit 0, a failed hook (no outcome) and a disabled one leave the decision as it was', () => {
    assert.equal(
      beforeToolDecision(hook, { code: 0, stdout: 'x' }, call(true), allow).decision,
      allow,
    )
    assert.equal(beforeToolDecision(hook, undefined, call(true), allow).decision, allow)
  })

  it('replacement arguments nested past the bound are refused before anything walks them', () => {
    assert.match(String(parseArgs(`${'{"a":'.repeat(100)}1${'}'.repeat(100)}`)), /nested deeper/)
    assert.equal(parseArgs('[1]'), undefined)
  })
})

describe('shell-hooks: one hook as an object', () => {
  const logger = (warnings: string[]) =>
    ({
      warn: (m: string) => warnings.push(m),
      info() {},
      error() {},
      debug() {},
    }) as unknown as Logger
  const runner = (command: string[], warnings: string[]) =>
    new HookRunner(
      hookConfig.parse({ event: 'after_tool_call', command, tool_filter: ['only_this'] }),
      0,
      tmpdir(),
      logger(warnings),
      new AbortController().signal,
    )

  it('applies to the tools of its filter only', () => {
    const h = runner(['true'], [])
    assert.equal(h.applies('only_this'), true)
    assert.equal(h.applies('other'), false)
  })

  it(`failures never block: each answers undefined; ${BREAKER} in a row disable it, said once`, async () => {
    const warnings: string[] = []
    const h = runner(['false'], warnings)
    for (let i = 0; i < BREAKER + 2; i++) assert.equal(await h.run({}, [0]), undefined)
    assert.equal(warnings.length, BREAKER, 'a disabled hook runs no more')
    assert.match(warnings.at(-1)!, /exit code 1; disabled after 3 failures in a row/)
    assert.equal(h.disabled, true)
  })

  it('a success resets the count', async () => {
    const warnings: string[] = []
    const h = runner(['sh', '-c', 'cat >/dev/null; exit ${FAIL:-0}'], warnings)
    assert.deepEqual(await h.run({}, [1]), undefined, 'exit 0 is not a code it takes')
    assert.equal((await h.run({}, [0]))?.code, 0)
    assert.equal(h.disabled, false)
    assert.equal(warnings.length, 1)
  })
})
