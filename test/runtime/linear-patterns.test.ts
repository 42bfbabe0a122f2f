// Patterns from untrusted schemas cannot freeze yoke: the ReDoS cases of issue 14 validate in
// milliseconds through the runtime (a plain ajv, in a child process, is still running seconds
// later), a pattern RE2 cannot run is refused at registration, and the same holds through a real
// MCP server and a real exec package.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { ToolRuntime } from '../../src/index.ts'
import { createAjv, MAX_URL_LENGTH, PATTERN_BUDGET } from '../../src/lib/schema-safety.ts'
import type { ToolDefinition } from '../../src/runtime/types.ts'
import { execHarness, nodeExe } from '../helpers/exec.ts'
import { fixture, mcpHarness, text, type McpHarness } from '../helpers/mcp.ts'
import { ROOT } from '../helpers/project.ts'

const BOUND_MS = 200 // generous: each case takes under 2 ms; the backtracking engine takes minutes

/**
 * This process's CPU time in ms: what validation costs is CPU spent here, so a busy machine (which
 * stretches wall time, not our CPU time) cannot fail the bounds below.
 */
function cpuMs(): number {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

/** The ReDoS shapes of issue 14, each with a 200-character (or so) argument that does not match. */
const HOSTILE: Array<[label: string, pattern: string, arg: string]> = [
  ['adjacent stars', `^${'a*'.repeat(30)}b$`, 'a'.repeat(200)],
  ['adjacent pluses', '\\d+\\d+\\d+\\d+\\d+$', `${'1'.repeat(200)}x`],
  ['an overlapping alternative', '(\\s|.)*x', ' '.repeat(200)],
  ['a repeated ambiguous group', '^(a|aa)+$', `${'a'.repeat(200)}b`],
]

const withPattern = (name: string, pattern: string): ToolDefinition => ({
  name,
  inputSchema: { type: 'object', properties: { s: { type: 'string', pattern } } },
  execute: (args) => `ok ${String(args.s).length}`,
})

/** Validates `arg` against `pattern` with a plain ajv (JavaScript's RegExp) in a child process. */
function plainAjv(pattern: string, arg: string, timeoutMs: number) {
  const script = `import { Ajv } from 'ajv'
const [schema, data] = process.argv.slice(1).map((x) => JSON.parse(x))
new Ajv().compile(schema)(data)`
  const schema = { type: 'object', properties: { s: { type: 'string', pattern } } }
  const started = performance.now()
  return new Promise<{ finished: boolean; ms: number }>((resolve) =>
    execFile(
      process.execPath,
      ['--input-type=module', '-e', script, JSON.stringify(schema), JSON.stringify({ s: arg })],
      { cwd: ROOT, timeout: timeoutMs, killSignal: 'SIGKILL' },
      (err) => {
        const ms = performance.now() - started
        if (err && !(err as { killed?: boolean }).killed) throw err
        resolve({ finished: !err, ms })
      },
    ),
  )
}

describe('hostile patterns through the runtime', () => {
  it('each ReDoS case of issue 14 validates in milliseconds; a plain ajv is still at it after 3 s', async (t) => {
    const rt = new ToolRuntime()
    const plain = Promise.all(HOSTILE.map(([, p, arg]) => plainAjv(p, arg, 3000))) // in parallel
    for (const [i, [label, pattern, arg]] of HOSTILE.entries()) {
      rt.register(withPattern(`hostile_${i}`, pattern), 'test')
      const started = cpuMs()
      const result = await rt.call(`hostile_${i}`, { s: arg })
      const ms = cpuMs() - started
      t.diagnostic(`${label} ${pattern}: ${ms.toFixed(2)} ms on re2js`)
      assert.equal(result.status, 'INVALID_ARGS', label)
      assert.match(result.error!.message, /must match pattern/)
      assert.ok(ms < BOUND_MS, `${label}: ${ms} ms`)
    }
    for (const [i, { finished, ms }] of (await plain).entries()) {
      t.diagnostic(`${HOSTILE[i]![0]}: plain ajv killed after ${ms.toFixed(0)} ms`)
      assert.equal(finished, false, `plain ajv finished ${HOSTILE[i]![0]} in ${ms} ms`)
    }
  })

  it('matching and non-matching arguments still get the right answer', async () => {
    const rt = new ToolRuntime()
    rt.register(withPattern('ambiguous', '^(a|aa)+$'), 'test')
    rt.register(withPattern('ident', '^[a-z0-9-]+$'), 'test')
    rt.register(withPattern('letters', '^\\p{L}+$'), 'test')
    const ok = async (name: string, s: string) => (await rt.call(name, { s })).status
    assert.equal(await ok('ambiguous', 'a'.repeat(200)), 'ok')
    assert.equal(await ok('ambiguous', 'aab'), 'INVALID_ARGS')
    assert.equal(await ok('ident', 'my-tool-1'), 'ok')
    assert.equal(await ok('ident', 'My_Tool'), 'INVALID_ARGS')
    assert.equal(await ok('ident', 'tool\n'), 'INVALID_ARGS', '$ does not match before a newline')
    assert.equal(await ok('letters', 'Ωmega'), 'ok')
    assert.equal(await ok('letters', 'a1'), 'INVALID_ARGS')
  })

  it('a lookbehind is refused at registration, naming the tool and the pattern', () => {
    const rt = new ToolRuntime()
    assert.throws(
      () => rt.register(withPattern('lookbehind', '(?<=\\$)\\d+'), 'pkg'),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'TOOL_INVALID')
        assert.match(
          err.message,
          /cannot register tool "lookbehind" \(instance pkg\): its input schema has the pattern "\(\?<=\\\\\$\)\\\\d\+", which yoke does not run: it uses a lookbehind/,
        )
        return true
      },
    )
    assert.equal(rt.list().length, 0)
  })

  it('pattern work per call is capped: past the budget the call fails closed, quickly, and says why', async () => {
    const rt = new ToolRuntime()
    // a pattern whose automaton explodes: the linear engine's worst case, ~1,000 instructions a character
    rt.register(withPattern('dense', '^(?:a|b|ab|ba){0,120}c$'), 'test')
    let started = cpuMs()
    const long = await rt.call('dense', { s: 'ab'.repeat(2000) })
    assert.ok(cpuMs() - started < BOUND_MS)
    assert.equal(long.status, 'INVALID_ARGS')
    assert.match(
      long.error!.message,
      new RegExp(
        `not checked: the strings matched against patterns add up to more than ${PATTERN_BUDGET} characters × instructions, the limit per call`,
      ),
    )
    assert.equal((await rt.call('dense', { s: `${'ab'.repeat(100)}c` })).status, 'ok')
    // many strings in one call share the budget
    rt.register(
      {
        name: 'many',
        inputSchema: {
          type: 'object',
          properties: {
            xs: { type: 'array', items: { type: 'string', pattern: '^(?:a|b|ab|ba){0,120}c$' } },
          },
        },
        execute: () => 'ok',
      },
      'test',
    )
    started = cpuMs()
    const many = await rt.call('many', { xs: Array.from({ length: 400 }, () => 'ab'.repeat(200)) })
    assert.ok(cpuMs() - started < BOUND_MS, `${cpuMs() - started} ms`)
    assert.match(many.error!.message, /not checked/)
    // a onepass pattern (one thread, one step per character) checks a megabyte
    rt.register(withPattern('plain', '^[^\\u0000]*$'), 'test')
    started = cpuMs()
    assert.equal((await rt.call('plain', { s: 'x'.repeat(1_000_000) })).status, 'ok')
    assert.ok(cpuMs() - started < 1000)
  })

  it('patternProperties and propertyNames keys run on the linear engine too', async () => {
    const rt = new ToolRuntime()
    rt.register(
      {
        name: 'keys',
        inputSchema: {
          type: 'object',
          propertyNames: { pattern: '^(\\s|.)*x$' },
          patternProperties: { '\\d+\\d+\\d+\\d+\\d+$': { type: 'number' } },
        },
        execute: () => 'ok',
      },
      'test',
    )
    const started = cpuMs()
    const result = await rt.call('keys', { [`${'1'.repeat(200)}y`]: 1 })
    assert.ok(cpuMs() - started < BOUND_MS)
    assert.equal(result.status, 'INVALID_ARGS')
    assert.match(result.error!.message, /property name must be valid/)
    assert.equal((await rt.call('keys', { '12345x': 1 })).status, 'ok')
  })

  it("ajv-formats' url format (quadratic on JavaScript's engine) is capped in length; other formats are linear", () => {
    const ajv = createAjv()
    const url = ajv.compile({ type: 'string', format: 'url' })
    assert.equal(url('https://example.com/a?b=c'), true)
    assert.equal(url('not a url'), false)
    const hostile = `http://${'::'.repeat(20_000)}$` // 40,000 characters: ~1 s uncapped
    const started = cpuMs()
    assert.equal(url(hostile), false)
    assert.equal(url(`https://example.com/${'a'.repeat(MAX_URL_LENGTH)}`), false)
    assert.ok(cpuMs() - started < BOUND_MS)
    // the rest, against long strings of their own alphabet: each well under the bound
    for (const format of ['uri', 'uri-reference', 'email', 'hostname', 'ipv6', 'date-time'])
      for (const unit of ['a', '1', ':', '.', 'a.', '%20', '-', '/'])
        for (const tail of ['', '!', ' ']) {
          const v = ajv.compile({ type: 'string', format })
          const s = `${format === 'email' ? 'a@' : 'http://'}${unit.repeat(20_000 / unit.length)}${tail}`
          const t0 = cpuMs()
          v(s)
          assert.ok(cpuMs() - t0 < BOUND_MS, `${format} ${JSON.stringify(unit)}`)
        }
  })
})

describe('hostile patterns from real tool sources', () => {
  let h: McpHarness
  before(async () => {
    h = await mcpHarness()
  })
  after(() => h.close())

  it('an MCP server with a ReDoS pattern: the call returns a result, quickly; a lookbehind tool is skipped by name', async () => {
    const schema = {
      type: 'object',
      properties: { s: { type: 'string', pattern: '\\d+\\d+\\d+\\d+\\d+$' } },
    }
    await h.add(
      'redos',
      fixture('redos', 'conformance', {
        env: { TOOL: 'digits', BEHAVIOUR: 'echo', SCHEMA: JSON.stringify(schema) },
      }),
    )
    let started = cpuMs()
    const hostile = await h.rt.call('mcp__redos__digits', { s: `${'1'.repeat(200)}x` })
    assert.ok(cpuMs() - started < BOUND_MS, `${cpuMs() - started} ms`)
    assert.equal(hostile.status, 'INVALID_ARGS')
    started = cpuMs()
    const fine = await h.rt.call('mcp__redos__digits', { s: `${'1'.repeat(200)}` })
    assert.equal(fine.status, 'ok', text(fine))
    assert.equal(JSON.parse(text(fine)).s, '1'.repeat(200))
    assert.ok(cpuMs() - started < 5000)

    const lookbehind = { type: 'object', properties: { s: { type: 'string', pattern: '(?<=@)x' } } }
    await h.add(
      'behind',
      fixture('behind', 'conformance', {
        env: { TOOL: 'after_at', BEHAVIOUR: 'echo', SCHEMA: JSON.stringify(lookbehind) },
      }),
    )
    assert.ok(!h.rt.list().some((t) => t.name === 'mcp__behind__after_at'))
    assert.match(
      h.status('behind').problems.join('\n'),
      /skipped tool "after_at": its input schema has the pattern "\(\?<=@\)x", which yoke does not run: it uses a lookbehind/,
    )
    await h.remove('behind')
    await h.remove('redos')
  })

  it('an exec package with a ReDoS pattern answers quickly; its lookbehind tool is not registered, by name', async () => {
    const e = await execHarness({
      hostile: {
        manifest: {
          name: 'hostile',
          version: '1',
          tools: [
            {
              name: 'hostile_any',
              description: 'x',
              input_schema: {
                type: 'object',
                properties: { s: { type: 'string', pattern: '(\\s|.)*x' } },
              },
            },
            {
              name: 'hostile_behind',
              description: 'y',
              input_schema: {
                type: 'object',
                properties: { s: { type: 'string', pattern: '(?<!a)b' } },
              },
            },
          ],
        },
        exe: nodeExe(`process.stdout.write('ran ' + String(args.s).length)`),
      },
    })
    try {
      const names = e.rt.list().map((t) => t.name)
      assert.ok(names.includes('hostile_any') && !names.includes('hostile_behind'), String(names))
      assert.ok(
        e.logs.some((l) =>
          /hostile_behind is not registered: its input schema has the pattern "\(\?<!a\)b", which yoke does not run: it uses a lookbehind/.test(
            l.message,
          ),
        ),
        e.logs.map((l) => l.message).join('\n'),
      )
      const started = cpuMs()
      const hostile = await e.rt.call('hostile_any', { s: ' '.repeat(200) })
      assert.ok(cpuMs() - started < BOUND_MS)
      assert.equal(hostile.status, 'INVALID_ARGS')
      const fine = await e.rt.call('hostile_any', { s: `${' '.repeat(200)}x` })
      assert.equal(fine.status, 'ok', text(fine))
      assert.equal(text(fine), 'ran 201')
    } finally {
      await e.close()
    }
  })
})
