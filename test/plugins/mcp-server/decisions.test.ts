// mcp-server's decisions, called as plain functions (no kernel, no socket): who gets a new
// 2025-era session when the table is full (admission.ts), which port a reloaded instance
// asks for first (http.ts portAgain), and which era a request is (request.ts isLegacy, the SDK's
// classification over the node request's headers).
import assert from 'node:assert/strict'
import type { IncomingMessage } from 'node:http'
import { describe, it } from 'node:test'
import { isLegacyRequest } from '@modelcontextprotocol/server'
import { admission, perClientCap, type Seat } from '../../../plugins/mcp-server/admission.ts'
import { portAgain } from '../../../plugins/mcp-server/http.ts'
import { deeperThan, isLegacy, nestsDeeper } from '../../../plugins/mcp-server/request.ts'

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

describe("a request's era, as the SDK reads it (without a web Request)", () => {
  const modernMeta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' }
  const bodies: Array<[string, unknown]> = [
    [
      'initialize',
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'c', version: '1' },
        },
      },
    ],
    ['a call', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo' } }],
    [
      'a call with the envelope',
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', _meta: modernMeta } },
    ],
    ['a notification', { jsonrpc: '2.0', method: 'notifications/initialized' }],
    ['a batch', [{ jsonrpc: '2.0', id: 4, method: 'ping' }]],
    ['a response', { jsonrpc: '2.0', id: 5, result: {} }],
    ['not JSON-RPC', { hello: 'world' }],
    // the envelope claim's edges (request.ts answers these without the classifier)
    [
      'a notification with the envelope',
      { jsonrpc: '2.0', method: 'notifications/x', params: { _meta: modernMeta } },
    ],
    [
      'initialize with the envelope',
      { jsonrpc: '2.0', id: 6, method: 'initialize', params: { _meta: modernMeta } },
    ],
    [
      'a claim naming 2025',
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'ping',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } },
      },
    ],
    [
      'a claim that is no string',
      {
        jsonrpc: '2.0',
        id: 8,
        method: 'ping',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': 7 } },
      },
    ],
    ['a claim without jsonrpc', { id: 9, method: 'ping', params: { _meta: modernMeta } }],
    [
      'a response with a method and a claim',
      { jsonrpc: '2.0', id: 10, method: 'ping', result: {}, params: { _meta: modernMeta } },
    ],
    [
      'an error with a method and a claim',
      {
        jsonrpc: '2.0',
        id: 11,
        method: 'ping',
        error: { code: 1, message: 'x' },
        params: { _meta: modernMeta },
      },
    ],
    [
      'a claim in an array _meta',
      {
        jsonrpc: '2.0',
        id: 12,
        method: 'ping',
        params: { _meta: ['io.modelcontextprotocol/protocolVersion'] },
      },
    ],
    [
      'a claim in array params',
      { jsonrpc: '2.0', id: 13, method: 'ping', params: [{ _meta: modernMeta }] },
    ],
    [
      'a batch with a claim',
      [{ jsonrpc: '2.0', id: 14, method: 'ping', params: { _meta: modernMeta } }],
    ],
  ]
  const headerSets: Array<Record<string, string | string[]>> = [
    {},
    { 'mcp-protocol-version': '2025-11-25' },
    { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
    { 'mcp-protocol-version': ['2026-07-28', '2025-11-25'] },
  ]

  it('isLegacy agrees with isLegacyRequest for every method, header set and body', async () => {
    for (const method of ['POST', 'GET', 'DELETE'])
      for (const headers of headerSets)
        for (const [what, body] of method === 'POST' ? bodies : [['no body', undefined] as const]) {
          const web = new Headers()
          for (const [k, v] of Object.entries(headers))
            for (const one of Array.isArray(v) ? v : [v]) web.append(k, one)
          const expected = await isLegacyRequest(
            new Request('http://localhost/mcp', { method, headers: web }),
            body,
          )
          const req = { method, headers, url: '/mcp' } as unknown as IncomingMessage
          assert.equal(
            isLegacy(req, body),
            expected,
            `${method} ${what} ${JSON.stringify(headers)}`,
          )
        }
  })

  it('a body too short to nest past the limit is not walked, and the answer is the same', () => {
    const nested = (depth: number): unknown => (depth ? [nested(depth - 1)] : 0)
    for (const max of [1, 4, 8, 512])
      for (const depth of [0, 1, max - 1, max, max + 1, max * 3]) {
        const value = nested(depth)
        const text = JSON.stringify(value)
        assert.equal(nestsDeeper(text, value, max), deeperThan(value, max), `${depth} / ${max}`)
        assert.equal(nestsDeeper(JSON.stringify({ a: value }), { a: value }, max), depth + 1 > max)
      }
  })
})
