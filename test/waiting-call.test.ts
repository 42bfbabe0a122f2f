// Nothing silent (issue 27): a call to a tool whose instance waits — for trust, for a variable —
// answers PLUGIN_WAITING with that instance's reason and fix, never UNKNOWN_TOOL.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { createYoke } from '../src/index.ts'
import { tempProject } from './helpers/project.ts'

delete process.env.YOKE_TRUST // the suite trusts its projects; this one must not be

const PLUGIN = `export default {
  name: 'local',
  inject: ['runtime'],
  apply(ctx) { ctx.runtime.register({ name: 'hello', execute: () => 'hi' }) },
}
`

describe('a call to a tool whose instance waits', () => {
  it('an untrusted project: PLUGIN_WAITING naming the instance and `yoke trust`', async () => {
    const p = tempProject({
      'yoke.config.yaml': 'plugins:\n  local:\n    use: ./plugin.mjs\n',
      'plugin.mjs': PLUGIN,
    })
    const yoke = createYoke({ cwd: p.dir, home: p.home, onLog: () => {} })
    after(async () => {
      await yoke.close()
      p.cleanup()
    })
    const result = await yoke.call('hello')
    assert.equal(result.status, 'PLUGIN_WAITING')
    assert.match(result.error!.message, /instance "local" is waiting: no tool "hello"/)
    assert.match(result.error!.message, /not trusted/)
    assert.match(result.error!.hint!, /yoke trust/)
    // a name nobody could provide is still only unknown once nothing waits: trusting runs it
    const trusted = createYoke({ cwd: p.dir, home: p.home, trust: true, onLog: () => {} })
    after(() => trusted.close())
    assert.equal((await trusted.call('hello')).status, 'ok')
    assert.equal((await trusted.call('nothing-here')).status, 'UNKNOWN_TOOL')
  })

  it('a missing variable: PLUGIN_WAITING naming it', async () => {
    const p = tempProject({
      'yoke.config.yaml':
        'plugins:\n  local:\n    use: ./plugin.mjs\n    config: { key: "${NOT_SET_FOR_THIS_TEST}" }\n',
      'plugin.mjs': PLUGIN,
    })
    const yoke = createYoke({ cwd: p.dir, home: p.home, trust: true, onLog: () => {} })
    after(async () => {
      await yoke.close()
      p.cleanup()
    })
    const result = await yoke.call('hello')
    assert.equal(result.status, 'PLUGIN_WAITING')
    assert.match(result.error!.message, /NOT_SET_FOR_THIS_TEST/)
  })
})
