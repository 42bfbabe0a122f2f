// A view's allow mask is a snapshot of the global tools it matched: the view makes it anew after a
// change. Here, that a listing (or a call) between a change and the settled refresh sees the tool.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { View } from '../../../plugins/mcp-server/views.ts'
import { GLOBAL, hostTrack, runtimeView, ToolRuntime } from '../../../src/index.ts'

describe('a view with an allow list', () => {
  it('offers a tool registered after it was made at its next listing, before any refresh', () => {
    const rt = new ToolRuntime()
    const api = runtimeView(rt, 'test', hostTrack)
    rt.register({ name: 'other', execute: () => 'x' }, 'test')
    const view = new View(
      api,
      'gateway',
      'skills',
      { allow: ['skills_*'], skills: false, commands: false, toolSearch: false },
      GLOBAL,
    )
    rt.hooks.change.tap('view', () => view.invalidate())
    assert.deepEqual([...view.tools().keys()], [])
    rt.register({ name: 'skills_list', execute: () => 'listed' }, 'test')
    assert.deepEqual([...view.tools().keys()], ['skills_list'], 'seen without a refresh')
    assert.ok(rt.registry.resolve('skills_list', view.scope.key), 'and callable in its scope')
    assert.equal(view.refresh(), true, 'the settled refresh still says the view changed')
    assert.deepEqual([...view.tools().keys()], ['skills_list'])
    rt.register({ name: 'not_allowed', execute: () => 'x' }, 'test')
    assert.deepEqual([...view.tools().keys()], ['skills_list'], 'the mask still keeps the rest out')
    assert.equal(rt.registry.resolve('not_allowed', view.scope.key), undefined)
  })
})
