// Registering many tools at once (issue 29): registerAll lets the event loop run between slices,
// announces each slice once with every name in it, and lookups see each tool when its change is
// announced; its removal is one announcement. Schemas are checked at registration and compiled at
// the first call.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Kernel, toPlugin, type Plugin } from '../../src/index.ts'
import { runtimePlugin, ToolRuntime, type RuntimeApi } from '../../src/index.ts'
import type { ToolChange } from '../../src/runtime/runtime.ts'
import type { ToolDefinition } from '../../src/runtime/types.ts'

const tool = (i: number): ToolDefinition => ({
  name: `t_${i}`,
  inputSchema: { type: 'object', properties: { n: { type: 'integer', maximum: i } } },
  concurrency: 'safe',
  execute: (args) => `t_${i}:${String(args.n)}`,
})

describe('registerAll', () => {
  it('every name is announced once, resolvable when announced; the loop runs between slices; removal is one change', async () => {
    const rt = new ToolRuntime()
    const changes: ToolChange[] = []
    rt.hooks.change.tap('test', (change) => {
      changes.push(change)
      for (const name of change.added) assert.ok(rt.registry.resolve(name), `${name} resolves`)
    })
    let ticks = 0
    const ticker = setInterval(() => ticks++, 0)
    const count = 20_000
    const remove = await rt.registerAll(
      Array.from({ length: count }, (_, i) => tool(i)),
      { owner: 'many' },
    )
    clearInterval(ticker)
    const added = changes.flatMap((c) => c.added)
    assert.equal(added.length, count)
    assert.equal(new Set(added).size, count, 'each name once')
    assert.ok(changes.length < count / 10, `announced in slices (${changes.length} changes)`)
    assert.ok(ticks > 0, 'timers ran while the tools registered')
    assert.equal(rt.list().length, count)
    const ok = await rt.call('t_77', { n: 3 })
    assert.equal(ok.content[0]?.type === 'text' && ok.content[0].text, 't_77:3')
    const bad = await rt.call('t_77', { n: 78 })
    assert.equal(bad.status, 'INVALID_ARGS', 'the schema compiled at the first call is applied')
    changes.length = 0
    await remove()
    assert.equal(changes.length, 1)
    assert.equal(changes[0]!.removed.length, count)
    assert.equal(rt.list().length, 0)
  })

  it('a refused definition goes to `refused` and the others register; without it the batch rejects and leaves none', async () => {
    const rt = new ToolRuntime()
    const defs = [tool(1), { ...tool(2), name: 'bad name' }, tool(3)]
    const refused: string[] = []
    const remove = await rt.registerAll(defs, {
      owner: 'many',
      refused: (def, err) => refused.push(`${def.name}: ${err.code}`),
    })
    assert.deepEqual(refused, ['bad name: TOOL_INVALID'])
    assert.deepEqual(
      rt.list().map((t) => t.name),
      ['t_1', 't_3'],
    )
    await remove()
    await assert.rejects(rt.registerAll(defs, { owner: 'many' }), { code: 'TOOL_INVALID' })
    assert.equal(rt.list().length, 0, 'what the rejected batch registered went')
  })

  it("through a plugin's runtime view, the batch is one effect of the instance and goes with it", async () => {
    const kernel = new Kernel()
    kernel.spawn(toPlugin(runtimePlugin) as Plugin, {}, { key: 'yoke:runtime' })
    const fiber = kernel.spawn(
      toPlugin({
        name: 'many',
        inject: ['runtime'],
        async apply(ctx: { runtime: RuntimeApi }) {
          await ctx.runtime.registerAll([tool(1), tool(2)])
        },
      }) as Plugin,
      {},
      { key: 'many' },
    )
    await kernel.settled()
    const rt = kernel.services.get('runtime')!.value as unknown as ToolRuntime
    assert.deepEqual(
      rt.list().map((t) => `${t.name} ${t.owner}`),
      ['t_1 many', 't_2 many'],
    )
    await kernel.remove(fiber)
    assert.equal(rt.list().length, 0)
    await kernel.dispose()
  })

  it('a schema that passes the meta-schema but does not compile fails its calls with the reason', async () => {
    const rt = new ToolRuntime()
    assert.throws(
      () =>
        rt.register(
          { ...tool(1), inputSchema: { type: 'object', properties: { a: { type: 'nope' } } } },
          'x',
        ),
      /does not compile/,
    )
    rt.register(
      {
        ...tool(2),
        inputSchema: { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } },
      },
      'x',
    )
    const result = await rt.call('t_2', {})
    assert.equal(result.status, 'INVALID_ARGS')
    assert.match(result.error!.message, /does not compile/)
  })
})
