// Repository's activate/rollback decisions on plain records, without a kernel: a version runs
// only when approved in this session and not stopped while its approval waited; activating one
// over a running version is an update (an older one a rollback, the same one a restart); a run
// that fails leaves what ran.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  activatedText,
  activation,
  keptText,
  runRefusal,
  type RunState,
} from '../../../plugins/repository/decisions.ts'

const record = (over: Partial<RunState> = {}): RunState => ({
  name: 'weather',
  approved: new Set(['s1\u00002']),
  stops: [],
  stopSeq: 0,
  state: 'defined',
  ...over,
})

describe('repository: may a version activate', () => {
  it('only once approved from this scope (a grant is not shared between scopes)', () => {
    assert.equal(runRefusal(record(), 2, 's1', { since: 0 }), undefined)
    assert.deepEqual(runRefusal(record(), 2, 's2', { since: 0 }), {
      outcome: 'rejected',
      reason: 'it was not approved in this session before the run (run it again to be asked)',
    })
    assert.equal(runRefusal(record(), 1, 's1')?.outcome, 'rejected', 'another version')
    assert.deepEqual(
      runRefusal(record({ approved: new Set() }), 2, 's1', { refusal: 'no, not now', since: 0 }),
      { outcome: 'rejected', reason: 'no, not now' },
    )
  })

  it('a stop asked while its approval waited wins: of this version, or of whatever runs', () => {
    const stops = [{ seq: 1, by: 'capabilities', why: 'withdrawn' }]
    assert.deepEqual(runRefusal(record({ stops, stopSeq: 1 }), 2, 's1', { since: 0 }), {
      outcome: 'failed',
      reason:
        'weather was stopped by capabilities (withdrawn) while this run waited for its approval',
    })
    const ofOther = [{ seq: 1, by: 'user', version: 1 }]
    assert.equal(
      runRefusal(record({ stops: ofOther, stopSeq: 1 }), 2, 's1', { since: 0 }),
      undefined,
    )
    assert.equal(
      runRefusal(record({ stops, stopSeq: 1 }), 2, 's1', { since: 1 }),
      undefined,
      'a stop seen before the approval began',
    )
    assert.equal(
      runRefusal(record({ stops, stopSeq: 1 }), 2, 's1'),
      undefined,
      'no approval pending: the stops so far are old',
    )
  })
})

describe('repository: what activating is', () => {
  it('a first run, an update, a rollback, a restart', () => {
    assert.deepEqual(activation({ state: 'defined' }, 1), {
      action: 'run',
      rollback: false,
      restart: false,
    })
    assert.deepEqual(activation({ state: 'stopped', current: 2 }, 1), {
      action: 'run',
      rollback: false,
      restart: false,
    })
    assert.deepEqual(activation({ state: 'running', current: 1 }, 2), {
      action: 'update',
      from: 1,
      rollback: false,
      restart: false,
    })
    assert.deepEqual(activation({ state: 'running', current: 2 }, 1), {
      action: 'update',
      from: 2,
      rollback: true,
      restart: false,
    })
    assert.equal(activation({ state: 'running', current: 2 }, 2).restart, true)
  })

  it('says it to the model, and what a failed run leaves', () => {
    assert.equal(activatedText(undefined, 1), 'running')
    assert.equal(activatedText(1, 2), 'running (was version 1)')
    assert.equal(activatedText(2, 1), 'running (was version 2)')
    assert.equal(activatedText(2, 2), 'restarted')
    assert.equal(keptText(record({ state: 'running', current: 1 })), 'version 1 keeps running')
    assert.equal(keptText(record({ state: 'failed', current: 1 })), 'weather stays failed')
  })
})
