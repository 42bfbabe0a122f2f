import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import policy from '../../../plugins/policy/index.ts'
import {
  Kernel,
  runtimePlugin,
  toPlugin,
  validateConfig,
  type Plugin,
  type ToolDefinition,
  type ToolRuntime,
} from '../../../src/index.ts'

async function withPolicy(config: unknown, tools: ToolDefinition[]) {
  const kernel = new Kernel()
  kernel.spawn(toPlugin(runtimePlugin) as Plugin, {}, { key: 'yoke:runtime' })
  const plugin = toPlugin(policy) as Plugin
  const checked = validateConfig(plugin, config)
  assert.ok('value' in checked, JSON.stringify(checked))
  kernel.spawn(plugin, checked.value, { key: 'policy' })
  await kernel.settled()
  const rt = kernel.services.get('runtime')!.value as ToolRuntime
  for (const t of tools) rt.register(t, 'test')
  return { rt, close: () => kernel.dispose() }
}

const tool = (name: string, extra: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name,
  execute: () => 'ran',
  ...extra,
})

describe('policy plugin', () => {
  it('deny → ask → allow, first match wins; conditions on source and risk', async () => {
    const { rt, close } = await withPolicy(
      {
        deny: ['mcp__github__delete_*', { tool: '*', source: 'exec:*', risk: 'critical' }],
        ask: [{ tool: 'write_*' }, { source: 'mcp:*', risk: ['medium'] }],
        allow: ['write_safe', 'risky_but_fine'],
      },
      [
        tool('mcp__github__delete_repo', { source: 'mcp:github' }),
        tool('mcp__github__list', { source: 'mcp:github', risk: 'medium' }),
        tool('write_file'),
        tool('write_safe'),
        tool('nuke', { source: 'exec:tools', risk: 'critical' }),
        tool('risky_but_fine', { risk: 'high' }),
        tool('risky', { risk: 'high' }),
        tool('plain'),
      ],
    )
    const asked: string[] = []
    rt.approvals.register({
      name: 'record',
      ask: async ({ call, reason }) => (asked.push(`${call.name}: ${reason}`), 'allow-once'),
    })
    const status = async (name: string) => (await rt.call(name)).status
    assert.equal(
      await status('mcp__github__delete_repo'),
      'DENIED',
      'hidden from listings, and denied if called anyway',
    )
    assert.equal(await status('nuke'), 'DENIED')
    assert.match(
      (await rt.call('nuke')).error!.message,
      /denied by the policy rule deny: \{"tool":"\*","source":"exec:\*","risk":"critical"\}/,
    )
    assert.equal(await status('write_file'), 'ok')
    assert.equal(
      await status('write_safe'),
      'ok',
      'ask rules come before allow rules: write_safe matches ask write_*',
    )
    assert.equal(await status('mcp__github__list'), 'ok')
    assert.equal(await status('risky_but_fine'), 'ok')
    assert.equal(await status('risky'), 'ok')
    assert.equal(await status('plain'), 'ok')
    assert.deepEqual(asked, [
      'write_file: the policy rule ask: {"tool":"write_*"} asks first',
      'write_safe: the policy rule ask: {"tool":"write_*"} asks first',
      'mcp__github__list: the policy rule ask: {"tool":"*","source":"mcp:*","risk":["medium"]} asks first',
      'risky: risky is high risk',
    ])
    assert.deepEqual(
      rt.list().map((t) => t.name),
      ['mcp__github__list', 'write_file', 'write_safe', 'nuke', 'risky_but_fine', 'risky', 'plain'],
    )
    await close()
  })

  it('high risk asks by default, and with no bridge the call is denied with a hint that says how to allow it', async () => {
    const { rt, close } = await withPolicy({}, [tool('drop_db', { risk: 'critical' })])
    const result = await rt.call('drop_db')
    assert.equal(result.status, 'DENIED')
    assert.match(
      result.error!.message,
      /approval needed \(drop_db is critical risk\); no approval bridge is registered to ask/,
    )
    assert.match(result.error!.hint!, /allow: \["drop_db"\]/)
    await close()
  })

  it('an unknown config key is refused', () => {
    const checked = validateConfig(toPlugin(policy) as Plugin, { alow: ['x'] })
    assert.ok('issues' in checked)
  })
})
