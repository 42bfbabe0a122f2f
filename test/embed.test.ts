// createYoke, the library entry point, in process on real temporary projects: a local plugin's
// tool called and reloaded, close disposing, a config that does not compose, approvals, and tools
// that come from a plugin executable, an MCP stdio server and the servers of a .mcp.json.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { after, describe, it } from 'node:test'
import {
  createYoke,
  YokeError,
  type ApprovalRequest,
  type ReloadEvent,
  type Yoke,
} from '../src/index.ts'
import { nodeExe, writePackage } from './helpers/exec.ts'
import { alive, FIXTURE } from './helpers/mcp.ts'
import { tempProject, type Project } from './helpers/project.ts'
import { until } from './helpers/until.ts'

// a tool that says its config's greeting, and a file written when the instance is disposed
const GREETER = `
import { writeFileSync } from 'node:fs'
export default {
  name: 'greeter',
  inject: ['runtime', 'project'],
  provides: ['greetings'],
  apply(ctx, config) {
    ctx.runtime.register({
      name: 'greet',
      description: 'greets someone',
      inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
      execute: ({ who }) => config.greeting + ', ' + who,
    })
    ctx.runtime.register({
      name: 'wipe',
      description: 'a risky one',
      risk: 'high',
      execute: () => 'wiped',
    })
    ctx.provide('greetings', { greeting: () => config.greeting })
    ctx.effect('disposal mark', () => writeFileSync(ctx.project.dir + '/disposed-' + config.greeting, ''))
  },
}
`
const greeterConfig = (greeting: string) =>
  `plugins:\n  greeter:\n    use: ./greeter.mjs\n    config: { greeting: ${greeting} }\n`

const text = (r: { content: readonly { type: string; text?: string }[] }) =>
  r.content.map((c) => c.text ?? '').join('')

describe('createYoke', () => {
  const projects: Project[] = []
  const yokes: Yoke[] = []
  after(async () => {
    for (const y of yokes) await y.close()
    for (const p of projects) p.cleanup()
  })
  const project = (files: Record<string, string>) => {
    const p = tempProject(files)
    projects.push(p)
    return p
  }
  const open = (p: Project, options: Parameters<typeof createYoke>[0] = {}) => {
    const yoke = createYoke({ cwd: p.dir, home: p.home, onLog: () => {}, ...options })
    yokes.push(yoke)
    return yoke
  }

  it("a local plugin's tool: listed, called, typed service, reloaded after an edit, disposed on close", async () => {
    const p = project({ 'greeter.mjs': GREETER, 'yoke.config.yaml': greeterConfig('hello') })
    const yoke = open(p)
    const event = await yoke.ready
    assert.ok(event.ok)
    assert.deepEqual(event.added.sort(), [
      'capabilities',
      'claude-plugins',
      'greeter',
      'installs',
      'mcp',
      'models',
      'policy',
      'prompt',
      'skills',
    ])
    assert.ok(yoke.tools().some((t) => t.name === 'greet' && t.owner === 'greeter'))
    const result = await yoke.call('greet', { who: 'Ada' })
    assert.equal(result.status, 'ok', text(result))
    assert.equal(text(result), 'hello, Ada')
    assert.equal((await yoke.call('greet', {})).status, 'INVALID_ARGS')
    const greetings = yoke.get('greetings' as never) as { greeting(): string } | undefined
    assert.equal(greetings?.greeting(), 'hello')

    p.write('yoke.config.yaml', greeterConfig('hi'))
    const reload = await yoke.reload()
    assert.deepEqual(reload.restarted, ['greeter'])
    assert.equal(text(await yoke.call('greet', { who: 'Ada' })), 'hi, Ada')
    assert.ok(existsSync(p.path('disposed-hello')), 'the old version was disposed')

    await yoke.close()
    await yoke.close() // idempotent
    assert.ok(existsSync(p.path('disposed-hi')), 'close disposed the running instance')
    assert.deepEqual(yoke.tools(), [])
    await assert.rejects(yoke.call('greet', { who: 'Ada' }), /closed/)
  })

  it('`await using` closes it at the end of the block', async () => {
    const p = project({ 'greeter.mjs': GREETER, 'yoke.config.yaml': greeterConfig('bye') })
    {
      await using yoke = createYoke({ cwd: p.dir, home: p.home, onLog: () => {} })
      await yoke.ready
      assert.equal(text(await yoke.call('greet', { who: 'Bo' })), 'bye, Bo')
      assert.ok(!existsSync(p.path('disposed-bye')))
    }
    assert.ok(existsSync(p.path('disposed-bye')))
  })

  it('watch: an edit of the config reloads by itself, as yoke dev does', async () => {
    const p = project({ 'greeter.mjs': GREETER, 'yoke.config.yaml': greeterConfig('one') })
    const yoke = open(p, { watch: true })
    await yoke.ready
    const reloaded = new Promise<ReloadEvent>((resolve) =>
      yoke.composition.hooks.reload.tap('test', resolve),
    )
    p.writeAtomic('yoke.config.yaml', greeterConfig('two'))
    await until(
      'the edit to reload',
      async () => text(await yoke.call('greet', { who: 'Ed' })) === 'two, Ed',
    )
    assert.deepEqual((await reloaded).restarted, ['greeter'])
  })

  it('a config that does not compose rejects ready (and call) with its YokeError; a fixed one reloads', async () => {
    const p = project({
      'greeter.mjs': GREETER,
      'yoke.config.yaml':
        'plugins:\n  greeter:\n    use: ./greeter.mjs\n    config: { greeting: [\n',
    })
    const yoke = open(p)
    const error = await yoke.ready.then(
      () => assert.fail('ready resolved'),
      (err: unknown) => err,
    )
    assert.ok(error instanceof YokeError, String(error))
    assert.equal(error.code, 'CONFIG_SYNTAX')
    assert.equal(error.site.file, p.path('yoke.config.yaml'))
    assert.ok(error.site.line, 'the error has its line')
    await assert.rejects(yoke.call('greet', { who: 'x' }), (err) => err === error)

    p.write('yoke.config.yaml', 'plugins:\n  greeter:\n    use: ./nowhere.mjs\n')
    await assert.rejects(yoke.reload(), { code: 'PLUGIN_NOT_FOUND' })

    p.write('yoke.config.yaml', greeterConfig('fixed'))
    assert.ok((await yoke.reload()).ok)
    assert.equal(text(await yoke.call('greet', { who: 'Cy' })), 'fixed, Cy')
  })

  it('the `set` object is a config of its own: no project file needed', async () => {
    const p = project({ 'greeter.mjs': GREETER })
    const yoke = open(p, {
      preset: 'minimal',
      set: { 'plugins.greeter': { use: './greeter.mjs', config: { greeting: 'set "quoted"' } } },
    })
    assert.deepEqual((await yoke.ready).added, ['greeter'])
    assert.equal(text(await yoke.call('greet', { who: 'Di' })), 'set "quoted", Di')
  })

  it("approvals: a high-risk call is denied without a bridge, asked of the option's function with one", async () => {
    const p = project({ 'greeter.mjs': GREETER, 'yoke.config.yaml': greeterConfig('hey') })
    const denied = await open(p).call('wipe')
    assert.equal(denied.status, 'DENIED', text(denied))
    const asked: ApprovalRequest[] = []
    const yoke = open(p, {
      approval: (request) => (asked.push(request), 'allow-once'),
    })
    const allowed = await yoke.call('wipe', {}, { caller: 'my-app' })
    assert.equal(allowed.status, 'ok', text(allowed))
    assert.equal(asked.length, 1)
    assert.equal(asked[0]!.call.name, 'wipe')
    assert.equal(asked[0]!.call.caller, 'my-app')
  })

  it('tools from a plugin executable, an MCP stdio server and a .mcp.json server exist once settled', async () => {
    const base = [
      'preset: minimal',
      'plugins:',
      '  packages:',
      '    use: exec-tools',
      '    config: { dirs: [./packages] }',
      '  mcp:',
      '    use: mcp',
      '  fixture:',
      '    use: mcp-client',
      `    config: { serverName: fixture, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(FIXTURE)}] }`,
      '',
    ].join('\n')
    const p = project({
      'yoke.config.yaml': base,
      '.mcp.json': JSON.stringify({
        mcpServers: { listed: { command: process.execPath, args: [FIXTURE] } },
      }),
    })
    writePackage(p.path('packages'), 'shout', {
      manifest: {
        name: 'shout',
        version: '1.0.0',
        tools: [{ name: 'shout', description: 'upper case', input_schema: { type: 'object' } }],
      },
      exe: nodeExe(
        `process.stdout.write(JSON.stringify({ output: String(args.text).toUpperCase() }))`,
      ),
    })
    const yoke = open(p)
    assert.deepEqual((await yoke.ready).failed, [])
    const names = () => yoke.tools().map((t) => t.name)
    for (const name of ['shout', 'mcp__fixture__echo'])
      assert.ok(names().includes(name), `${name} in ${names().join(', ')}`)
    const shout = await yoke.call('shout', { text: 'quiet' })
    assert.equal(shout.status, 'ok', text(shout))
    assert.equal(text(shout), 'QUIET')

    // mcp-json starts its servers as child instances, which nothing else waits for on this
    // reload (the hub they join is unchanged): reload() resolves once they settled too
    p.write('yoke.config.yaml', `${base}  fromfile:\n    use: mcp-json\n`)
    assert.deepEqual((await yoke.reload()).added, ['fromfile'])
    assert.ok(names().includes('mcp__listed__echo'), names().join(', '))
    const echo = await yoke.call('mcp__listed__echo', { text: 'through .mcp.json' })
    assert.equal(echo.status, 'ok', text(echo))
    assert.match(text(echo), /through \.mcp\.json/)

    const pids = (yoke.get('mcp')?.list() ?? []).map((s) => s.pid)
    assert.equal(pids.length, 2)
    await yoke.close()
    for (const pid of pids) assert.ok(!alive(pid!), `server ${pid} stopped with close`)
  })

  it('onLog receives every log record; without it, warnings and errors go to stderr', async () => {
    const p = project({
      'loud.mjs': `export default { name: 'loud', apply(ctx) { ctx.logger.warn('careful'); ctx.logger.debug('detail') } }\n`,
      'yoke.config.yaml': 'preset: minimal\nplugins:\n  loud:\n    use: ./loud.mjs\n',
    })
    const seen: string[] = []
    await open(p, { onLog: (r) => void seen.push(`${r.level} ${r.fiber?.key}: ${r.message}`) })
      .ready
    assert.ok(seen.includes('warn loud: careful'), seen.join('\n'))
    assert.ok(seen.includes('debug loud: detail'), seen.join('\n'))

    const written: string[] = []
    const write = process.stderr.write
    process.stderr.write = ((chunk: string) => written.push(String(chunk)) > 0) as typeof write
    try {
      const yoke = createYoke({ cwd: p.dir, home: p.home })
      yokes.push(yoke)
      await yoke.ready
    } finally {
      process.stderr.write = write
    }
    assert.deepEqual(written, ['yoke warn loud: careful\n'])
  })
})
