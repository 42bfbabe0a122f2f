// run_code over a real runtime: programs that call tools through the whole pipeline, each limit,
// every ambient escape, approvals (approved, refused), a scope that may not see a tool, and a tool
// replaced or unloaded while a program runs. No model: the programs are given as a model would.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import codeMode from '../../../plugins/code-mode/index.ts'
import {
  GLOBAL,
  tapHook,
  type Asker,
  type CallOptions,
  type Kernel,
  type ToolCall,
  type ToolRuntime,
  type TraceContext,
} from '../../../src/index.ts'
import { kernelWith } from '../../helpers/kernel.ts'

const tools = {
  name: 'tools',
  inject: ['runtime'],
  apply(ctx: any) {
    ctx.runtime.register({
      name: 'add',
      description: 'Adds two numbers.',
      inputSchema: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
      },
      concurrency: 'safe',
      execute: (args: { a: number; b: number }) => ({ sum: args.a + args.b }),
    })
    ctx.runtime.register({
      name: 'mcp__notes__list',
      description: 'Lists notes.',
      inputSchema: { type: 'object', properties: { tag: { type: 'string' } } },
      execute: () => JSON.stringify(['alpha', 'beta', 'gamma']),
    })
    ctx.runtime.register({
      name: 'shout',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      execute: (args: { text: string }) => args.text.toUpperCase(),
    })
    ctx.runtime.register({
      name: 'wipe',
      description: 'Deletes everything.',
      risk: 'high',
      execute: () => 'wiped',
    })
    ctx.runtime.register({ name: 'secret', execute: () => 'the secret' })
  },
}

let kernel: Kernel
let rt: ToolRuntime
const run = (code: string, options: CallOptions = {}, language?: string) =>
  rt.call('run_code', { code, ...(language && { language }) }, { caller: 'test', ...options })
const text = (r: { content: readonly { type: string }[] }) =>
  r.content.map((p) => (p as { text?: string }).text ?? '').join('\n')

before(async () => {
  ;({ kernel, rt } = await kernelWith([
    ['tools', tools],
    ['code', codeMode, { limits: { cpuMs: 2000, memoryMb: 16, maxCalls: 20, outputBytes: 4096 } }],
  ]))
  // the policy's part: a high-risk tool asks
  rt.hooks.preExecute.tap('test-policy', (d, call) =>
    call.tool?.risk === 'high' && d.kind === 'allow' ? { kind: 'ask', reason: 'high risk' } : d,
  )
})
after(() => kernel.dispose())

describe('run_code: a program calls tools through the pipeline', () => {
  it('calls three tools and returns a summary, each call a pipeline call under run_code', async () => {
    const seen: ToolCall[] = []
    const tap = (d: any, call: ToolCall) => (seen.push(call), d)
    const untap = tapHook(rt.hooks.preExecute, 'test-seen', tap)
    try {
      const r = await run(`
        const { sum } = await tools.add({ a: 2, b: 3 })
        const notes = JSON.parse(await tools.notes.list({}))
        const loud = await tools.shout({ text: notes[0] })
        console.log('three calls made')
        return { sum, notes: notes.length, loud }
      `)
      assert.equal(r.status, 'ok', text(r))
      assert.deepEqual((r.structured as any).result, { sum: 5, notes: 3, loud: 'ALPHA' })
      assert.match(text(r), /"sum": 5/)
      assert.match(text(r), /console:\nthree calls made/)
      assert.match(text(r), /tool calls \(3\): add ok, mcp__notes__list ok, shout ok/)
      const nested = seen.filter((c) => c.name !== 'run_code')
      const parent = seen.find((c) => c.name === 'run_code')!
      assert.deepEqual(
        nested.map((c) => c.name),
        ['add', 'mcp__notes__list', 'shout'],
      )
      for (const c of nested) {
        assert.equal(c.scope, GLOBAL)
        assert.equal(c.caller, 'test', 'a nested call is made as its caller')
      }
      assert.ok(parent)
    } finally {
      void untap()
    }
  })

  it('runs calls in parallel with Promise.all, and TypeScript once stripped', async () => {
    const r = await run(
      `const sums: number[] = (await Promise.all([1, 2, 3].map((a: number) => tools.add({ a, b: a })))).map((s: { sum: number }) => s.sum)
       return sums`,
      {},
      'typescript',
    )
    assert.equal(r.status, 'ok', text(r))
    assert.deepEqual((r.structured as any).result, [2, 4, 6])
    const unlabelled = await run('const n: number = 4\nreturn n * 2')
    assert.equal(unlabelled.status, 'ok', text(unlabelled))
    assert.equal((unlabelled.structured as any).result, 8)
  })

  it("each nested call's span is a child of run_code's (the trace hook sees run_code's as the caller's)", async () => {
    const spans = new Map<string, { parent?: string; own: string }>()
    const tracer = (incoming: TraceContext | undefined, call: ToolCall): TraceContext => {
      const own = `00-${'a'.repeat(32)}-${String(spans.size + 1).padStart(16, '0')}-01`
      spans.set(call.name, { parent: incoming?.traceparent, own })
      return { traceparent: own }
    }
    const untap = tapHook(rt.hooks.trace, 'test-tracer', tracer)
    try {
      const r = await run(
        'await tools.add({ a: 1, b: 1 }); return await tools.shout({ text: "x" })',
      )
      assert.equal(r.status, 'ok', text(r))
      const parent = spans.get('run_code')!.own
      assert.equal(spans.get('add')?.parent, parent)
      assert.equal(spans.get('shout')?.parent, parent)
    } finally {
      void untap()
    }
  })

  it("Promise.all: safe calls overlap, exclusive ones run alone (as the loop runs a model's)", async () => {
    const peak = { safe: 0, exclusive: 0 }
    const now = { safe: 0, exclusive: 0 }
    const body = (kind: 'safe' | 'exclusive') => async () => {
      peak[kind] = Math.max(peak[kind], ++now[kind])
      await new Promise((resolve) => setImmediate(resolve))
      now[kind]--
      return kind
    }
    const removers = [
      rt.register({ name: 'overlap_safe', concurrency: 'safe', execute: body('safe') }),
      rt.register({ name: 'overlap_alone', execute: body('exclusive') }),
    ]
    try {
      const r = await run(`
        const safe = Promise.all([1, 2, 3].map(() => tools.overlap_safe({})))
        const alone = Promise.all([1, 2, 3].map(() => tools.overlap_alone({})))
        return [...(await safe), ...(await alone)].length
      `)
      assert.equal((r.structured as any)?.result, 6, text(r))
      assert.ok(peak.safe > 1, 'safe calls ran together')
      assert.equal(peak.exclusive, 1, 'exclusive calls ran one at a time')
    } finally {
      for (const remove of removers) await remove()
    }
  })

  it('a failed call throws a ToolError the program may catch; a syntax error names its line', async () => {
    const r = await run(`
      try { await tools.add({ a: 'x' }) } catch (e) { return [e.name, e.code, e.tool] }
    `)
    assert.deepEqual((r.structured as any).result, ['ToolError', 'INVALID_ARGS', 'add'])
    const bad = await run('const = 1')
    assert.equal(bad.status, 'CODE_SYNTAX')
    const thrown = await run('\n\nthrow new Error("no luck")')
    assert.equal(thrown.status, 'CODE_ERROR')
    assert.match(thrown.error!.message, /no luck \(line 3\)/)
  })

  it('api() declares what the scope may call, typed from the schemas', async () => {
    const r = await run('return api()')
    const api = (r.structured as any).result as string
    assert.match(api, /add\(args: \{\n\s+a: number\n\s+b: number\n\s+\}\): Promise<string>/)
    assert.match(api, /notes: \{\n\s+\/\*\* Lists notes\. \*\/\n\s+list\(args\?: \{/)
    assert.doesNotMatch(api, /run_code/)
  })

  it('describes itself per listing (the gateway asks), while any other lister sees it as registered', () => {
    const listed = rt.list()
    const runCode = listed.find((t) => t.name === 'run_code')!
    // a search index reads the registered description: no declarations to match every query
    assert.doesNotMatch(runCode.description!, /declare const tools|Lists notes/)
    const served = listed.filter((t) => t.name !== 'wipe')
    const described = runCode.describe!('view', served)
    assert.match(described, /The tools you may call:\n/)
    assert.match(described, /Lists notes\./)
    assert.doesNotMatch(described, /wipe|Deletes everything/)
    assert.equal(runCode.describe!('view', served), described, 'kept while the tools are the same')
  })
})

describe('run_code: limits end the run with their code and leave yoke running', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['an endless loop', 'while (true) {}', /CODE_TIMEOUT/],
    [
      'a memory bomb',
      'let s = "x"; for (;;) { s = s + s; s.charCodeAt(s.length - 1) }',
      /CODE_MEMORY/,
    ],
    ['a deep recursion', 'const f = (n) => f(n + 1) + 1; return f(0)', /CODE_STACK/],
    ['a flood of calls', 'for (;;) await tools.add({ a: 1, b: 1 })', /CODE_CALLS/],
    ['a flood of output', 'for (;;) console.log("spam spam spam spam")', /CODE_OUTPUT/],
    ['a caught timeout', 'for (;;) { try { while (true) {} } catch {} }', /CODE_TIMEOUT/],
  ]
  for (const [what, code, status] of cases)
    it(`${what}`, async () => {
      const r = await run(code)
      assert.match(r.status, status, text(r))
      const next = await run('return (await tools.add({ a: 1, b: 2 })).sum')
      assert.equal((next.structured as any)?.result, 3, 'the next program runs as before')
    })

  it('a builtin that runs long between interrupt checks is ended by the host, whose event loop runs on', async () => {
    let ticks = 0
    const ticker = setInterval(() => ticks++, 5)
    const r = await run('const a = []; for (;;) a.push(Array.from({ length: 1e5 }, (_, i) => i))')
    clearInterval(ticker)
    assert.match(r.status, /CODE_TIMEOUT|CODE_MEMORY/, text(r))
    assert.ok(ticks > 0, 'the host ran its timers while the program ran')
    const next = await run('return 1 + 1')
    assert.equal((next.structured as any)?.result, 2)
  })

  it('a promise nothing settles ends the run at once', async () => {
    const r = await run('await new Promise(() => {})')
    assert.equal(r.status, 'CODE_ERROR')
    assert.match(r.error!.message, /nothing will settle/)
  })
})

describe('run_code: no ambient authority', () => {
  it('sees no process, require, import, fetch, timers, file system or host handle', async () => {
    const r = await run(`
      const kinds = {}
      for (const name of ['process', 'require', 'module', 'fetch', 'setTimeout', 'setInterval',
        'setImmediate', 'queueMicrotask', 'XMLHttpRequest', 'WebSocket', 'Deno', 'Bun', 'std', 'os',
        '__yoke_host', 'global', 'Buffer'])
        kinds[name] = typeof globalThis[name]
      kinds.viaFunction = typeof Function('return this')().process
      kinds.viaConstructor = ({}).constructor.constructor('return typeof process')()
      let imported
      try { await import('fs'); imported = 'imported' } catch (e) { imported = e.name }
      kinds.import = imported
      kinds.toolsHas = 'add' in tools
      return kinds
    `)
    assert.equal(r.status, 'ok', text(r))
    const kinds = (r.structured as any).result
    for (const [name, kind] of Object.entries(kinds)) {
      if (name === 'import') assert.notEqual(kind, 'imported', 'import() must fail')
      else if (name === 'toolsHas') assert.equal(kind, false)
      else assert.equal(kind, 'undefined', `${name} is ${kind}`)
    }
    const escaped = await run('return Function("return typeof process")()')
    assert.equal((escaped.structured as any).result, 'undefined')
  })
})

describe('run_code: approvals, scopes, reloads', () => {
  const askerSaying = (answer: 'allow-once' | 'deny', asked: string[]): Asker => ({
    name: 'the person',
    ask: async (request) => (asked.push(request.call.name), answer),
  })

  it('a call needing approval pauses the program and resumes it once approved', async () => {
    const asked: string[] = []
    const r = await run(
      'const a = await tools.wipe({}); const b = await tools.shout({ text: a }); return b',
      { asker: askerSaying('allow-once', asked) },
    )
    assert.equal(r.status, 'ok', text(r))
    assert.equal((r.structured as any).result, 'WIPED')
    assert.deepEqual(asked, ['wipe'], 'the nested call asks the run_code caller')
  })

  it('a refused call ends the program with CODE_DENIED; nothing after it runs', async () => {
    const asked: string[] = []
    const after: string[] = []
    const tap = (d: any, call: ToolCall) => (after.push(call.name), d)
    const untap = tapHook(rt.hooks.preExecute, 'test-after', tap)
    const r = await run(
      'await tools.add({ a: 1, b: 1 }); try { await tools.wipe({}) } catch (e) { return "caught" }; await tools.shout({ text: "x" })',
      { asker: askerSaying('deny', asked) },
    )
    void untap()
    assert.equal(r.status, 'CODE_DENIED', text(r))
    assert.match(
      r.error!.message,
      /ended at wipe, which was refused \(DENIED\).*refused through "the person"/,
    )
    assert.match(r.error!.message, /after tool calls \(1\): add ok/)
    assert.deepEqual(asked, ['wipe'])
    assert.ok(!after.includes('shout'), 'no call after the refusal')
  })

  it('a tool the scope may not see is refused as a direct call is (UNKNOWN_TOOL)', async () => {
    const scope = rt.registry.createScope('restricted')
    const unmask = rt.registry.restrict('restricted', { deny: ['secret'] })
    try {
      const direct = await rt.call('secret', {}, { scope: 'restricted' })
      assert.equal(direct.status, 'UNKNOWN_TOOL')
      const listing = rt.list('restricted') // what the scope's owner lists (a view, an agent)
      assert.ok(!listing.some((t) => t.name === 'secret'))
      const r = await run(
        'let code; try { await tools.secret({}) } catch (e) { code = e.code }; return [code, (await api()).includes("secret")]',
        { scope: 'restricted' },
      )
      assert.deepEqual((r.structured as any).result, ['UNKNOWN_TOOL', false])
      const uncaught = await run('return await callTool("secret", {})', { scope: 'restricted' })
      assert.equal(uncaught.status, 'CODE_ERROR')
      assert.match(uncaught.error!.message, /UNKNOWN_TOOL/)
    } finally {
      unmask()
      scope()
    }
  })

  it("a tool reloaded mid-program: the program's next call gets the new version", async () => {
    const fiber = 9_001
    const v1 = rt.register({ name: 'ver', execute: () => 'v1' }, 'reloading', GLOBAL, fiber)
    let v2: (() => Promise<void>) | undefined
    const swap = rt.register({
      name: 'reload_now',
      execute: async () => {
        // the reload: the new version stands in front, then the old one goes
        v2 = rt.register({ name: 'ver', execute: () => 'v2' }, 'reloading', GLOBAL, fiber + 1)
        await v1()
        return 'reloaded'
      },
    })
    try {
      const r = await run(
        'const a = await tools.ver({}); await tools.reload_now({}); const b = await tools.ver({}); return [a, b]',
      )
      assert.deepEqual((r.structured as any).result, ['v1', 'v2'])
    } finally {
      await v2?.()
      await swap()
    }
  })

  it('a tool unloaded while the program waits on it ends that call UNLOADED', async () => {
    let started!: () => void
    const running = new Promise<void>((resolve) => (started = resolve))
    const remove = rt.register({
      name: 'slow',
      execute: (_args, call) => {
        started()
        return new Promise((resolve) => call.onEnd(() => resolve('never')))
      },
    })
    const program = run('try { await tools.slow({}) } catch (e) { return e.code }')
    await running
    await remove()
    const r = await program
    assert.equal((r.structured as any)?.result, 'UNLOADED', text(r))
  })
})
