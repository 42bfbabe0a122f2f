// mcp-json's decisions without a kernel or a file watcher: what one server of the file runs as
// (specOf: the defaults under its own entry, ${VAR} expanded with unset ones reported, a stdio
// server of an untrusted project waiting with the verdict), and which children a new reading of
// the file stops and starts (plan: only what changed).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { plan, specOf, WAITS } from '../../../plugins/mcp-json/servers.ts'
import type { ImportedServer } from '../../../plugins/mcp-client/api.ts'

const server = (serverName: string, config: Record<string, unknown>) =>
  ({ serverName, enabled: true, config: { serverName, ...config } }) as unknown as ImportedServer

describe('specOf: what a server of the file runs as', () => {
  it('its own entry wins over the defaults, and ${VAR} is expanded from the environment', () => {
    const warnings: string[] = []
    const spec = specOf(
      server('web', { url: 'https://${HOST}/mcp', callMs: 5000 }),
      { callMs: 1000, ssrfGuard: true },
      true,
      { HOST: 'example.com' },
      (m) => warnings.push(m),
    )
    assert.deepEqual(JSON.parse(spec), {
      callMs: 5000,
      ssrfGuard: true,
      serverName: 'web',
      url: 'https://example.com/mcp',
    })
    assert.deepEqual(warnings, [])
  })

  it('an unset variable is reported, naming the server', () => {
    const warnings: string[] = []
    specOf(server('web', { url: 'https://${NOPE_H1}/mcp' }), {}, true, {}, (m) => warnings.push(m))
    assert.equal(warnings.length, 1)
    assert.match(warnings[0]!, /^server "web": .*NOPE_H1/)
  })

  it('a stdio server waits while the project is not trusted; a URL server runs', () => {
    const why = 'the project is not trusted yet'
    const stdio = specOf(server('local', { command: 'node' }), {}, why, {}, () => {})
    assert.equal(stdio, `${WAITS}${why}`)
    const url = specOf(server('web', { url: 'https://x.example/mcp' }), {}, why, {}, () => {})
    assert.ok(!url.startsWith(WAITS))
    assert.ok(
      !specOf(server('local', { command: 'node' }), {}, true, {}, () => {}).startsWith(WAITS),
    )
  })
})

describe('plan: a new reading of the file', () => {
  const map = (entries: Record<string, string>) => new Map(Object.entries(entries))

  it('restarts only the servers whose spec changed, stops the removed, starts the new', () => {
    assert.deepEqual(plan(map({ a: '1', b: '2', c: '3' }), map({ a: '1', b: '22', d: '4' })), {
      stop: ['b', 'c'],
      start: ['b', 'd'],
    })
  })

  it('the same file changes nothing; an empty one stops everything', () => {
    assert.deepEqual(plan(map({ a: '1' }), map({ a: '1' })), { stop: [], start: [] })
    assert.deepEqual(plan(map({ a: '1' }), map({})), { stop: ['a'], start: [] })
  })

  it('trust given: a waiting stdio server is started for real', () => {
    assert.deepEqual(plan(map({ a: `${WAITS}no` }), map({ a: '{"command":"node"}' })), {
      stop: ['a'],
      start: ['a'],
    })
  })
})
