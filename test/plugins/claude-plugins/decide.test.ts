// claude-plugins' decisions without a kernel (plugins/claude-plugins/decide.ts): one folder per
// plugin name, `except`, which running plugins restart, stop or start, and names by bare name.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { byName, choose, restarts } from '../../../plugins/claude-plugins/decide.ts'
import type { PluginManifest } from '../../../plugins/claude-plugins/manifest.ts'

const names: Record<string, string> = { '/a': 'alpha', '/b': 'beta', '/a2': 'alpha', '/x': 'gone' }
const manifestOf = (dir: string) => ({ name: names[dir]! }) as PluginManifest
const specOf = (dir: string, m: PluginManifest) => `${m.name}@${dir}`
const found = (...dirs: string[]) => dirs.map((dir) => ({ dir, source: 'config' }))

describe('claude-plugins: which folders run', () => {
  it('the first folder with a name is used; a later one is left out with a warning naming both', () => {
    const { next, warnings } = choose(found('/a', '/b', '/a2'), manifestOf, specOf, new Set())
    assert.deepEqual([...next.keys()], ['alpha', 'beta'])
    assert.equal(next.get('alpha')!.dir, '/a')
    assert.deepEqual(warnings, [
      'plugin alpha in /a2 is not loaded: /a has the same name (the first is used)',
    ])
  })

  it('a name in except is left out, silently, and does not take the name', () => {
    const { next, warnings } = choose(found('/x', '/b'), manifestOf, specOf, new Set(['gone']))
    assert.deepEqual([...next.keys()], ['beta'])
    assert.deepEqual(warnings, [])
  })

  it('an unchanged plugin keeps running; a changed one restarts; a gone one stops; a new one starts', () => {
    const running = new Map([
      ['same', { spec: '1' }],
      ['edited', { spec: '1' }],
      ['gone', { spec: '1' }],
    ])
    const next = new Map([
      ['same', { spec: '1' }],
      ['edited', { spec: '2' }],
      ['new', { spec: '1' }],
    ])
    assert.deepEqual(restarts(running, next), {
      stop: ['edited', 'gone'],
      start: ['edited', 'new'],
    })
  })

  it('a command or agent by full name, or by bare name when one plugin alone has it', () => {
    const items = [{ name: 'a:review' }, { name: 'b:review' }, { name: 'a:fix' }]
    assert.equal(byName(items, 'b:review'), items[1])
    assert.equal(byName(items, 'fix'), items[2])
    assert.equal(byName(items, 'review'), undefined, 'two plugins have it')
  })
})
