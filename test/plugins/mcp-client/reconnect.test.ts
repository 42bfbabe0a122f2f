// The reconnect decision of mcp-client, without a kernel or a server: the pure step after an
// attempt (supervisor.ts nextStep: retry with backoff, give up past the budget, wait for a
// sign-in, restart at once), the backoff and the budget refill, and a Supervisor driven by hooks
// whose connections always fail (the states it announces, the attempts it counts, restart and
// hold while it has given up).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  backoffMs,
  nextStep,
  refillsBudget,
  Supervisor,
  type ServerState,
} from '../../../plugins/mcp-client/supervisor.ts'
import { LoginRequired } from '../../../plugins/mcp-client/oauth/client.ts'
import { loginNeeded } from '../../../plugins/mcp-client/failures.ts'
import { until } from '../../helpers/until.ts'

const policy = { initialDelayMs: 100, maxDelayMs: 1000, maxAttempts: 3 }
const failure = new Error('connection refused')

describe('nextStep: what the loop does after an attempt', () => {
  it('a failure counts one attempt and waits the backoff', () => {
    assert.deepEqual(nextStep(policy, 0, { restarting: false, failure, blocked: false }), {
      state: 'reconnecting',
      attempt: 1,
      waitMs: 100,
    })
    assert.deepEqual(nextStep(policy, 2, { restarting: false, failure, blocked: false }), {
      state: 'reconnecting',
      attempt: 3,
      waitMs: 400,
    })
  })

  it('gives up once more than maxAttempts failed in a row, until restart()', () => {
    assert.deepEqual(nextStep(policy, 3, { restarting: false, failure, blocked: false }), {
      state: 'gave-up',
      attempt: 4,
      waitMs: Infinity,
    })
  })

  it('a failure that needs a sign-in waits for a person and spends nothing of the budget', () => {
    assert.deepEqual(nextStep(policy, 2, { restarting: false, failure, blocked: true }), {
      state: 'needs-login',
      attempt: 2,
      waitMs: Infinity,
    })
  })

  it('a restart (or a hold released, or a session the server forgot) connects at once, counting nothing', () => {
    assert.deepEqual(nextStep(policy, 2, { restarting: true, blocked: false }), {
      state: 'connecting',
      attempt: 2,
      waitMs: 0,
    })
  })
})

describe('backoff and budget', () => {
  it('doubles from initialDelayMs and stops at maxDelayMs', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 10].map((n) => backoffMs(policy, n)),
      [100, 200, 400, 800, 1000, 1000],
    )
  })

  it('a connection that stayed up maxDelayMs refills the budget; a crash loop does not', () => {
    assert.equal(refillsBudget(policy, 1000), true)
    assert.equal(refillsBudget(policy, 999), false)
  })

  it('a sign-in anywhere in the causes blocks the loop; other failures do not', () => {
    const login = new LoginRequired('s', 'it has not been signed in to yet')
    const wrapped = new Error('fetch failed', { cause: new Error('auth', { cause: login }) })
    assert.equal(loginNeeded(wrapped), login)
    assert.equal(loginNeeded(failure), undefined)
  })
})

describe('a Supervisor whose connections fail', () => {
  const failing = (blocked = (_err: Error) => false) => {
    const states: ServerState[] = []
    let opened = 0
    let gaveUp = 0
    const supervisor = new Supervisor(
      { initialDelayMs: 1, maxDelayMs: 4, maxAttempts: 2 },
      {
        open: async () => {
          opened++
          throw failure
        },
        ready: async () => {},
        gaveUp: async () => void gaveUp++,
        blocked,
        parked: async () => {},
        changed: (state) => void states.push(state),
        failed: (what, err) => assert.fail(`${what}: ${err}`),
      },
    )
    return { supervisor, states, opened: () => opened, gaveUp: () => gaveUp }
  }

  it('retries maxAttempts times, then gives up and says why and what to do', async () => {
    const s = failing()
    const first = await s.supervisor.start()
    assert.equal(first, failure)
    await until('the supervisor gives up', () => s.supervisor.state === 'gave-up')
    assert.equal(s.opened(), 3)
    assert.equal(s.gaveUp(), 1)
    assert.deepEqual(s.states, ['reconnecting', 'reconnecting', 'gave-up'])
    assert.match(
      s.supervisor.describe(),
      /gave up after 2 attempts \(last error: connection refused\); .*yoke mcp restart/,
    )
    // restart: a full budget again
    s.supervisor.restart()
    await until('it gives up again', () => s.opened() === 6 && s.supervisor.state === 'gave-up')
    await s.supervisor.close()
    assert.equal(s.supervisor.state, 'closed')
  })

  it('a failure that needs a sign-in stops at needs-login after one attempt', async () => {
    const s = failing(() => true)
    await s.supervisor.start()
    assert.equal(s.supervisor.state, 'needs-login')
    assert.equal(s.supervisor.attempt, 0)
    assert.equal(s.opened(), 1)
    await s.supervisor.close()
  })

  it('a hold parks the loop: no attempt until release, which starts with a full budget', async () => {
    const s = failing()
    await s.supervisor.start()
    s.supervisor.hold('a test')
    assert.equal(s.supervisor.state, 'held')
    assert.equal(s.supervisor.describe(), 'held: a test')
    const opened = s.opened()
    await new Promise((resolve) => setTimeout(resolve, 20))
    assert.equal(s.opened(), opened, 'nothing is opened while held')
    s.supervisor.release()
    assert.equal(s.supervisor.attempt, 0)
    await until('release connects again', () => s.opened() > opened)
    await s.supervisor.close()
  })
})
