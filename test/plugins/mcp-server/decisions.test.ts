// mcp-server's decisions, called as plain functions (no kernel, no socket): who gets a new
// 2025-era session when the table is full (admission.ts), and which port a reloaded instance
// asks for first (http.ts portAgain).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { admission, perClientCap, type Seat } from '../../../plugins/mcp-server/admission.ts'
import { portAgain } from '../../../plugins/mcp-server/http.ts'

const seat = (client: string, lastSeen: number, requests = 0, closed = false): Seat => ({
  client,
  lastSeen,
  requests,
  closed,
})
const limits = { maxSessions: 4, maxSessionsPerClient: 2 }

describe('session admission', () => {
  it('admits while there is room, evicting no one', () => {
    assert.deepEqual(admission([seat('a', 1)], 'b', limits), { admitted: true })
  })

  it('a client at its own cap gives up its idlest session, not a busy one', () => {
    const busy = seat('a', 1, 1)
    const idle = seat('a', 2)
    const room = admission([busy, idle, seat('b', 0)], 'a', limits)
    assert.equal(room.admitted, true)
    assert.equal(room.admitted && room.evict?.seat, idle)
    assert.match((room.admitted && room.evict?.why) || '', /maxSessionsPerClient 2/)
  })

  it('a client whose sessions all have a request in flight is refused 429', () => {
    const room = admission([seat('a', 1, 1), seat('a', 2, 1)], 'a', limits)
    assert.equal(room.admitted, false)
    assert.equal(!room.admitted && room.status, 429)
  })

  it('a full table takes the idlest session of the client holding the most', () => {
    const oldestOfB = seat('b', 1)
    const seats = [seat('a', 0), oldestOfB, seat('b', 5), seat('c', 3)]
    const room = admission(seats, 'd', { maxSessions: 4, maxSessionsPerClient: 3 })
    assert.equal(room.admitted && room.evict?.seat, oldestOfB)
  })

  it('a full table of busy sessions is 503; closed sessions count until they are gone', () => {
    const seats = [seat('a', 0, 1), seat('b', 1, 1), seat('c', 2, 1), seat('e', 3, 0, true)]
    const room = admission(seats, 'd', limits)
    assert.equal(!room.admitted && room.status, 503)
  })

  it('the per-client cap defaults to a quarter of the sessions, at least one', () => {
    assert.equal(perClientCap(64), 16)
    assert.equal(perClientCap(2), 1)
    assert.equal(perClientCap(64, 3), 3)
  })
})

describe('endpoint reuse across a reload', () => {
  const last = { host: '127.0.0.1', port: 41234, url: 'http://127.0.0.1:41234/mcp' }

  it('port 0 on the same host asks for the port the last version had', () => {
    assert.equal(portAgain(last, { host: '127.0.0.1', port: 0 }), 41234)
  })

  it('a configured port, another host, or no last version: the config decides', () => {
    assert.equal(portAgain(last, { host: '127.0.0.1', port: 3920 }), undefined)
    assert.equal(portAgain(last, { host: '::1', port: 0 }), undefined)
    assert.equal(portAgain(undefined, { host: '127.0.0.1', port: 0 }), undefined)
  })
})
