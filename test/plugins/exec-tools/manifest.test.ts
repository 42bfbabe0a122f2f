import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  hasExtras,
  parseManifest,
  type Manifest,
  type ManifestProblem,
} from '../../../plugins/exec-tools/manifest.ts'
import { ROOT } from '../../helpers/project.ts'

const FILE = '/pkg/manifest.json'
const parse = (text: string) => parseManifest(text, FILE)
const json = (value: unknown) => JSON.stringify(value, null, 2)
/** The manifest, asserting there were no errors. */
const ok = (text: string): Manifest => {
  const r = parse(text)
  assert.deepEqual(r.errors, [])
  assert.ok(r.manifest)
  return r.manifest
}
/** 1-based line and column of the `nth` (from 0) occurrence of `needle` */
const posOf = (text: string, needle: string, nth = 0) => {
  let offset = text.indexOf(needle)
  for (let i = 0; i < nth; i++) offset = text.indexOf(needle, offset + 1)
  assert.ok(offset >= 0, `${needle} is in the text`)
  const before = text.slice(0, offset).split('\n')
  return { line: before.length, col: before.at(-1)!.length + 1 }
}
const at = (p: ManifestProblem) => ({ line: p.line, col: p.col })
const base = { name: 'pkg', version: '1.0.0' }
const tool = (fields: Record<string, unknown>) => ({ description: 'd', ...fields })

describe('manifest.json: a full valid manifest', () => {
  const file = join(ROOT, 'test/fixtures/exec-manifest/full.json')
  const result = parseManifest(readFileSync(file, 'utf8'), file)

  it('reads every field, octos names to ours', () => {
    assert.deepEqual(result.errors, [])
    assert.deepEqual(result.warnings, [])
    const m = result.manifest!
    assert.equal(m.id, 'octos.deep-search')
    assert.equal(m.name, 'deep-search')
    assert.equal(m.version, '1.2.0')
    assert.equal(
      m.sha256,
      'abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789',
      'lowercased',
    )
    assert.equal(m.timeoutSecs, 120)
    assert.equal(m.requiresNetwork, true)
    assert.deepEqual(m.binaries, {
      'linux-x86_64': { url: 'https://example.com/ds-linux.tar.gz', sha256: '0'.repeat(64) },
      'darwin-aarch64': { url: 'https://example.com/ds-mac.tar.gz' },
    })
    assert.deepEqual(m.tools, [
      {
        name: 'deep_search',
        description: 'Search the web in depth',
        inputSchema: {
          type: 'object',
          properties: { query: { type: 'string' } },
          required: ['query'],
        },
        env: ['SERPER_API_KEY', 'HTTPS_PROXY'],
        risk: 'high',
        concurrency: 'safe',
        spawnOnly: false,
      },
      {
        name: 'deep_report',
        description: 'Write a long report in the background',
        inputSchema: { type: 'object' },
        env: [],
        concurrency: 'exclusive',
        spawnOnly: true,
        spawnOnlyMessage: 'Report is being written.',
      },
    ])
    assert.deepEqual(m.mcpServers, [
      { command: './bin/server', args: ['--stdio'], env: ['SERPER_API_KEY'], headers: {} },
      { url: 'https://mcp.example.com/mcp', args: [], env: [], headers: { 'X-Client': 'yoke' } },
    ])
    assert.deepEqual(m.hooks, [
      {
        event: 'before_tool_call',
        command: ['./hooks/guard.sh', '--strict'],
        timeoutMs: 2000,
        toolFilter: ['deep_search'],
        env: [],
      },
      {
        event: 'after_tool_call',
        command: ['node', 'hooks/log.js'],
        timeoutMs: 5000,
        toolFilter: [],
        env: [],
      },
    ])
    assert.deepEqual(m.promptsInclude, ['prompts/*.md'])
    assert.equal(hasExtras(m), true)
  })

  it('ignores unknown fields, at the top and in a tool (octos)', () => {
    const m = ok(
      json({
        ...base,
        author: 'x',
        make_type: 'slides',
        tools: [{ name: 't', description: 'd', contexts: ['a'], synthesis_config: {} }],
      }),
    )
    assert.equal('author' in m, false)
    assert.deepEqual(Object.keys(m.tools[0]).sort(), [
      'concurrency',
      'description',
      'env',
      'inputSchema',
      'name',
      'spawnOnly',
    ])
  })

  it('defaults: no tools, no extras, not network, no sha256', () => {
    const m = ok(json(base))
    assert.deepEqual(m, {
      id: 'pkg',
      name: 'pkg',
      version: '1.0.0',
      tools: [],
      requiresNetwork: false,
      binaries: {},
      mcpServers: [],
      hooks: [],
      promptsInclude: [],
    })
    assert.equal(hasExtras(m), false)
  })
})

describe('manifest.json: name and id', () => {
  it('id is the name when id is absent or blank', () => {
    assert.equal(ok(json(base)).id, 'pkg')
    assert.equal(ok(json({ ...base, id: '  ' })).id, 'pkg')
  })

  it('name defaults to a non-blank id', () => {
    const m = ok(json({ id: 'only-id', version: '1' }))
    assert.deepEqual([m.id, m.name], ['only-id', 'only-id'])
  })

  it('neither name nor id is an error', () => {
    for (const value of [{ version: '1' }, { id: ' ', version: '1' }]) {
      const r = parse(json(value))
      assert.equal(r.manifest, undefined)
      assert.match(r.errors[0].message, /manifest\.name is required/)
    }
  })

  it('a name that is not one path segment is refused (it names the executable)', () => {
    for (const name of ['../x', 'a/b', '..', '']) {
      const text = json({ name, version: '1' })
      const r = parse(text)
      assert.equal(r.manifest, undefined, name)
      assert.match(r.errors[0].message, /^manifest\.name must be a plain name/)
      assert.deepEqual(at(r.errors[0]), posOf(text, JSON.stringify(name)))
    }
    assert.match(
      parse(json({ id: '../../etc', version: '1' })).errors[0].message,
      /^manifest\.id must be a plain name/,
      'an id can become the name',
    )
  })
})

describe('manifest.json: errors at file:line:col', () => {
  it('sha256 "" or whitespace: octos\'s message, at the value', () => {
    for (const sha256 of ['', '  ']) {
      const text = json({ ...base, sha256 })
      const r = parse(text)
      assert.equal(r.manifest, undefined)
      assert.equal(r.errors.length, 1)
      assert.equal(
        r.errors[0].message,
        'manifest.sha256 must be a non-empty hex digest (omit the field for unsigned plugins)',
      )
      assert.deepEqual(at(r.errors[0]), posOf(text, JSON.stringify(sha256)))
      assert.equal(r.errors[0].file, FILE)
    }
  })

  it('sha256 not 64 hex digits', () => {
    for (const sha256 of ['abc', 'g'.repeat(64), `${'a'.repeat(64)} `]) {
      const text = json({ ...base, sha256 })
      const r = parse(text)
      assert.equal(r.manifest, undefined)
      assert.match(r.errors[0].message, /^manifest\.sha256 must be 64 hex digits/)
      assert.deepEqual(at(r.errors[0]), posOf(text, JSON.stringify(sha256)))
    }
  })

  it('missing version', () => {
    const r = parse('{\n  "name": "pkg"\n}')
    assert.equal(r.manifest, undefined)
    assert.deepEqual(
      r.errors.map((e) => e.message),
      ['manifest.version is required'],
    )
    assert.deepEqual(at(r.errors[0]), { line: 1, col: 1 }, 'a missing field points at its object')
  })

  it('wrong top-level types: every one is reported, in file order', () => {
    const text = json({ ...base, timeout_secs: 0, tools: {}, requires_network: 'yes' })
    const r = parse(text)
    assert.equal(r.manifest, undefined)
    assert.deepEqual(
      r.errors.map((e) => [e.message, at(e)]),
      [
        ['manifest.timeout_secs must be a positive integer', posOf(text, '0,')],
        ['manifest.tools must be an array', posOf(text, '{}')],
        ['manifest.requires_network must be true or false', posOf(text, '"yes"')],
      ],
    )
  })

  it('invalid JSON: the position V8 names, or the one it quotes', () => {
    const trailing = '{\n  "name": "pkg",\n  "version": "1",\n}'
    const r1 = parse(trailing)
    assert.equal(r1.manifest, undefined)
    assert.match(r1.errors[0].message, /^not valid JSON: /)
    assert.deepEqual(at(r1.errors[0]), { line: 4, col: 1 })

    const token = '{\n  "name": "a-long-name",\n  "version": x\n}'
    assert.deepEqual(at(parse(token).errors[0]), { line: 3, col: 14 })
    assert.doesNotMatch(parse(token).errors[0].message, /\n/, 'one line')

    const cut = '{\n  "name": "pkg",\n  "version": "1"'
    assert.deepEqual(at(parse(cut).errors[0]), { line: 3, col: 17 }, 'the end of the input')
  })

  it('YAML that is not JSON is refused', () => {
    for (const text of [
      'name: pkg\nversion: "1"\n',
      "{'name': 'pkg', 'version': '1'}",
      '{name: pkg, version: "1"}',
    ]) {
      const r = parse(text)
      assert.equal(r.manifest, undefined, text)
      assert.match(r.errors[0].message, /^not valid JSON: /)
    }
  })

  it('a top level that is not an object, and a duplicate key', () => {
    for (const text of ['[]', '"pkg"', 'null', '42'])
      assert.deepEqual(
        parse(text).errors.map((e) => e.message),
        ['manifest must be a JSON object'],
      )
    const dup = '{\n  "name": "a",\n  "version": "1",\n  "name": "b"\n}'
    const r = parse(dup)
    assert.equal(r.manifest, undefined)
    assert.equal(r.errors[0].message, 'duplicate key "name"')
    assert.equal(r.errors[0].line, 4)
  })

  it('a byte-order mark is not content', () => {
    assert.equal(ok(`\uFEFF${json(base)}`).name, 'pkg')
  })
})

describe('manifest.json: tools', () => {
  it('a tool with a bad env name is skipped with a warning at the entry; the others stay (loader_skips_tool_with_invalid_env_allowlist_entry)', () => {
    const text = json({
      ...base,
      tools: [
        tool({ name: 'good' }),
        tool({ name: 'bad', env: ['OK_NAME', 'BAD NAME'] }),
        tool({ name: 'also_good', env: ['X'] }),
      ],
    })
    const r = parse(text)
    assert.deepEqual(
      r.manifest!.tools.map((t) => t.name),
      ['good', 'also_good'],
    )
    assert.equal(r.warnings.length, 1)
    const w = r.warnings[0]
    assert.equal(w.tool, 'bad')
    assert.match(
      w.message,
      /^tool "bad" skipped: env\[1\] is "BAD NAME": name must not contain whitespace or control characters$/,
    )
    assert.deepEqual(at(w), posOf(text, '"BAD NAME"'))
  })

  it('a blocked name in env_allowlist skips the tool too', () => {
    const r = parse(json({ ...base, tools: [tool({ name: 't', env_allowlist: ['ld_preload'] })] }))
    assert.deepEqual(r.manifest!.tools, [])
    assert.match(
      r.warnings[0].message,
      /env_allowlist\[0\] is "ld_preload": name is a known process-hijack env var/,
    )
  })

  it('env_allowlist is an alias of env; both are merged without repeats', () => {
    const m = ok(
      json({
        ...base,
        tools: [
          tool({ name: 'a', env_allowlist: ['A_TOKEN'] }),
          tool({ name: 'b', env: ['B', 'C'], env_allowlist: ['C', 'D'] }),
        ],
      }),
    )
    assert.deepEqual(
      m.tools.map((t) => t.env),
      [['A_TOKEN'], ['B', 'C', 'D']],
    )
  })

  it('risk: trimmed and lowercased; an unknown literal is unspecified (unknown_risk_literal_does_not_force_approval)', () => {
    const risks = [' LOW', 'Medium', 'high', 'CRITICAL ', 'severe', '', undefined]
    const m = ok(json({ ...base, tools: risks.map((risk, i) => tool({ name: `t${i}`, risk })) }))
    assert.deepEqual(
      m.tools.map((t) => t.risk),
      ['low', 'medium', 'high', 'critical', undefined, undefined, undefined],
    )
    assert.equal('risk' in m.tools[4], false)
  })

  it('concurrency_class: unset, "" and safe are safe; exclusive; unknown runs exclusive with a warning (plugin_unknown_concurrency_class_falls_back_to_exclusive)', () => {
    const classes = [undefined, '', ' SAFE ', 'Exclusive', 'parallel']
    const text = json({
      ...base,
      tools: classes.map((concurrency_class, i) => tool({ name: `t${i}`, concurrency_class })),
    })
    const r = parse(text)
    assert.deepEqual(
      r.manifest!.tools.map((t) => t.concurrency),
      ['safe', 'safe', 'safe', 'exclusive', 'exclusive'],
    )
    assert.equal(r.warnings.length, 1)
    assert.equal(r.warnings[0].tool, 't4')
    assert.match(r.warnings[0].message, /unknown concurrency_class "parallel", runs exclusive/)
    assert.deepEqual(at(r.warnings[0]), posOf(text, '"parallel"'))
  })

  it('input_schema defaults to {"type":"object"} and must be an object', () => {
    const text = json({
      ...base,
      tools: [
        tool({ name: 'a' }),
        tool({ name: 'b', input_schema: [] }),
        tool({ name: 'c', input_schema: 'x' }),
      ],
    })
    const r = parse(text)
    assert.deepEqual(
      r.manifest!.tools.map((t) => [t.name, t.inputSchema]),
      [['a', { type: 'object' }]],
    )
    assert.deepEqual(
      r.warnings.map((w) => w.message),
      [
        'tool "b" skipped: input_schema must be an object',
        'tool "c" skipped: input_schema must be an object',
      ],
    )
    const a = ok(json({ ...base, tools: [tool({ name: 'a' }), tool({ name: 'b' })] }))
    assert.notEqual(
      a.tools[0].inputSchema,
      a.tools[1].inputSchema,
      'each tool gets its own default',
    )
  })

  it('bad names, a missing description, a non-object entry, duplicates: each skipped alone', () => {
    const text = json({
      ...base,
      tools: [
        { name: 'no description' },
        { name: 'x'.repeat(65), description: 'd' },
        7,
        { description: 'no name' },
        tool({ name: 'dup' }),
        tool({ name: 'dup' }),
        tool({ name: 'kept' }),
      ],
    })
    const r = parse(text)
    assert.deepEqual(
      r.manifest!.tools.map((t) => t.name),
      ['dup', 'kept'],
    )
    assert.deepEqual(
      r.warnings.map((w) => w.message),
      [
        'tool "no description" skipped: description is required', // at the tool's object: it comes first
        'tool "no description" skipped: name must be 1-64 characters of A-Z a-z 0-9 _ -',
        `tool "${'x'.repeat(65)}" skipped: name must be 1-64 characters of A-Z a-z 0-9 _ -`,
        'manifest.tools[2] skipped: must be an object',
        'manifest.tools[3] skipped: name is required',
        'tool "dup" skipped: a tool of that name comes earlier in this manifest',
      ],
    )
    assert.deepEqual(at(r.warnings[5]), posOf(text, '"dup"', 1), 'at the second name')
  })

  it('spawn_only and its message', () => {
    const m = ok(
      json({
        ...base,
        tools: [
          tool({ name: 'bg', spawn_only: true, spawn_only_message: 'later' }),
          tool({ name: 'fg' }),
        ],
      }),
    )
    assert.deepEqual(
      m.tools.map((t) => [t.spawnOnly, t.spawnOnlyMessage]),
      [
        [true, 'later'],
        [false, undefined],
      ],
    )
  })
})

describe('manifest.json: extras', () => {
  it('an extras-only package (tools: []) is valid', () => {
    const m = ok(
      json({
        ...base,
        tools: [],
        hooks: [{ event: 'before_tool_call', command: ['./guard.sh'] }],
        prompts: { include: ['prompts/*.md'] },
      }),
    )
    assert.deepEqual(m.tools, [])
    assert.equal(hasExtras(m), true)
    assert.equal(hasExtras(ok(json({ ...base, mcp_servers: [{ command: 'srv' }] }))), true)
    assert.equal(hasExtras(ok(json({ ...base, prompts: { include: [] } }))), false)
  })

  it('a hook whose command is not an argv array is skipped with a warning', () => {
    const text = json({
      ...base,
      hooks: [
        { event: 'before_tool_call', command: './guard.sh --strict' },
        { event: 'after_tool_call', command: [] },
        { event: 'on_turn_end', command: ['ok'] },
      ],
    })
    const r = parse(text)
    assert.deepEqual(
      r.manifest!.hooks.map((h) => h.event),
      ['on_turn_end'],
    )
    assert.deepEqual(
      r.warnings.map((w) => w.message),
      [
        'manifest.hooks[0] skipped: command must be an array',
        'manifest.hooks[1] skipped: command must not be empty',
      ],
    )
    assert.deepEqual(at(r.warnings[0]), posOf(text, '"./guard.sh --strict"'))
  })

  it('an unknown hook event is skipped with a warning at the event', () => {
    const text = json({
      ...base,
      hooks: [
        { event: 'before_everything', command: ['x'] },
        { event: 'user_prompt_submit', command: ['y'], timeout_ms: 100 },
      ],
    })
    const r = parse(text)
    assert.deepEqual(r.manifest!.hooks, [
      { event: 'user_prompt_submit', command: ['y'], timeoutMs: 100, toolFilter: [], env: [] },
    ])
    assert.deepEqual(
      r.warnings.map((w) => w.message),
      ['manifest.hooks[0] skipped: event is not a known hook event: "before_everything"'],
    )
    assert.deepEqual(at(r.warnings[0]), posOf(text, '"before_everything"'))
  })

  it("a hook's env lists names like a tool's: read, and a hijack name skips that hook alone", () => {
    const r = parse(
      json({
        ...base,
        hooks: [
          { event: 'before_tool_call', command: ['./a'], env: ['GUARD_TOKEN'] },
          { event: 'after_tool_call', command: ['./b'], env: ['LD_PRELOAD'] },
        ],
      }),
    )
    assert.deepEqual(
      r.manifest!.hooks.map((h) => [h.command[0], h.env]),
      [['./a', ['GUARD_TOKEN']]],
    )
    assert.deepEqual(
      r.warnings.map((w) => w.message),
      ['manifest.hooks[1] skipped: env[0] is "LD_PRELOAD": name is a known process-hijack env var'],
    )
  })

  it('MCP servers: exactly one of command and url; env names checked; a bad entry is skipped alone', () => {
    const servers = [
      { command: 'a', url: 'https://x' },
      {},
      { url: 'file:///etc/passwd' },
      { command: 'b', env: ['NODE_OPTIONS'] },
      { url: 'http://localhost:3000/mcp' },
    ]
    const r = parse(json({ ...base, mcp_servers: servers }))
    assert.deepEqual(r.manifest!.mcpServers, [
      { url: 'http://localhost:3000/mcp', args: [], env: [], headers: {} },
    ])
    assert.deepEqual(
      r.warnings.map((w) => w.message),
      [
        'manifest.mcp_servers[0] skipped: must have exactly one of command and url',
        'manifest.mcp_servers[1] skipped: must have exactly one of command and url',
        'manifest.mcp_servers[2] skipped: url must be an http(s) URL',
        'manifest.mcp_servers[3] skipped: env[0] is "NODE_OPTIONS": name is a known process-hijack env var',
      ],
    )
  })

  it('prompts.include: a non-string entry is skipped; prompts of the wrong type is an error', () => {
    const r = parse(json({ ...base, prompts: { include: ['a/*.md', 3, ''] } }))
    assert.deepEqual(r.manifest!.promptsInclude, ['a/*.md'])
    assert.deepEqual(
      r.warnings.map((w) => w.message),
      [
        'manifest.prompts.include[1] skipped: must be a string',
        'manifest.prompts.include[2] skipped: must not be empty',
      ],
    )
    assert.deepEqual(
      parse(json({ ...base, prompts: ['a'] })).errors.map((e) => e.message),
      ['manifest.prompts must be an object'],
    )
  })

  it('null means absent for optional fields (serde Option)', () => {
    const m = ok(
      json({
        ...base,
        id: null,
        sha256: null,
        timeout_secs: null,
        prompts: null,
        tools: [tool({ name: 't', risk: null, env: null })],
      }),
    )
    assert.deepEqual(
      [m.id, m.sha256, m.timeoutSecs, m.promptsInclude, m.tools[0].env],
      ['pkg', undefined, undefined, [], []],
    )
  })
})
