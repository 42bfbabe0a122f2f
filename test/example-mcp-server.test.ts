// examples/mcp-server (the workspace server), spawned as a real process and driven by the SDK's own
// v2 client over stdio on the 2026-07-28 revision: every tool and the resources, then hostile input
// (escapes by .., absolute paths and symlinks, .git, huge and binary files, bad and runaway regular
// expressions, hostile globs), after which it must still serve. Then the 2025 era on the same
// stdio entry: the v2 client pinned to it, and the v1 SDK's client. Every wait is bounded.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { alive } from './helpers/mcp.ts'
import { ROOT } from './helpers/project.ts'
import { until } from './helpers/until.ts'

const SERVER = join(ROOT, 'examples/mcp-server/index.mjs')
const WAIT = { timeout: 15_000 } // every request is bounded
const MiB = 1024 * 1024

type Result = {
  content: Array<{ type: string; text?: string }>
  structuredContent?: any
  isError?: boolean
}
const textOf = (r: Result) => r.content.map((c) => c.text ?? '').join('')

describe('example MCP server: workspace', () => {
  const base = mkdtempSync(join(tmpdir(), 'yoke-workspace-'))
  const root = join(base, 'root')
  const put = (rel: string, data: string | Buffer, at = root) => {
    mkdirSync(dirname(join(at, rel)), { recursive: true })
    writeFileSync(join(at, rel), data)
  }
  let client: Client
  let transport: StdioClientTransport
  let stderr = ''
  const call = async (name: string, args: Record<string, unknown> = {}, options = {}) =>
    (await client.callTool({ name, arguments: args }, { ...WAIT, ...options })) as Result
  const ok = async (name: string, args: Record<string, unknown> = {}) => {
    const r = await call(name, args)
    assert.ok(!r.isError, `${name} ${JSON.stringify(args)} failed: ${textOf(r)}`)
    return r
  }
  const refused = async (name: string, args: Record<string, unknown>, message: RegExp) => {
    const r = await call(name, args)
    assert.equal(
      r.isError,
      true,
      `${name} ${JSON.stringify(args)} should fail; it answered ${textOf(r).slice(0, 200)}`,
    )
    assert.match(textOf(r), message)
  }

  before(async () => {
    put('README.md', '# Demo\nHello World\n')
    put('src/a.ts', 'export const alpha = 1\n// TODO: beta\n')
    put('src/nested/b.ts', 'export const Beta = 2\n')
    put('src/many.txt', Array.from({ length: 3000 }, (_, i) => `line ${i + 1}`).join('\n') + '\n')
    put('src/long.txt', `${'x'.repeat(5000)}needle${'y'.repeat(5000)}\n`)
    put('empty.txt', '')
    put('node_modules/pkg/index.js', "export const hidden = 'needle'\n")
    put('.git/config', '[remote "origin"]\n  url = https://secret-token@example.com/repo.git\n')
    put('blob.bin', Buffer.from([0x89, 0x50, 0x00, 0x00, ...Buffer.from('needle')]))
    put('redos.txt', `${'a'.repeat(40)}!\n`)
    put(`${'a'.repeat(200)}.txt`, 'a long name\n')
    put('huge.log', '')
    truncateSync(join(root, 'huge.log'), 20 * MiB) // sparse: 20 MiB on paper, nothing on disk
    put('secret.txt', 'top secret\n', join(base, 'outside'))
    symlinkSync(join(base, 'outside'), join(root, 'escape-link'))
    symlinkSync(join(base, 'outside/secret.txt'), join(root, 'secret-link.txt'))
    symlinkSync('src/a.ts', join(root, 'inner-link.ts'))

    transport = new StdioClientTransport({
      command: process.execPath,
      args: [SERVER, root],
      env: { ...process.env, WORKSPACE_SEARCH_MS: '1500' } as Record<string, string>,
      stderr: 'pipe',
    })
    transport.stderr?.on('data', (d) => (stderr += d))
    client = new Client(
      { name: 'yoke-test', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    )
    await client.connect(transport, WAIT)
    assert.equal(client.getProtocolEra(), 'modern', 'auto negotiates the 2026-07-28 revision')
  })
  after(async () => {
    const pid = transport?.pid
    await client?.close()
    if (pid) {
      await until('the server to exit when its client closes', () => !alive(pid), { ms: 5000 })
    }
    rmSync(base, { recursive: true, force: true })
  })

  it('offers four read-only tools, a resource template, and says what it is', async () => {
    assert.equal(client.getServerVersion()?.name, 'workspace')
    assert.match(client.getInstructions() ?? '', /Read-only access to the files under/)
    const { tools } = await client.listTools(undefined, WAIT)
    assert.deepEqual(
      tools.map((t) => t.name),
      ['list_files', 'read_file', 'search_text', 'file_info'],
    )
    for (const t of tools) {
      assert.equal(t.annotations?.readOnlyHint, true, t.name)
      assert.equal(t.annotations?.destructiveHint, false, t.name)
      assert.ok(t.description && t.description.length > 40, t.name)
    }
    const { resourceTemplates } = await client.listResourceTemplates(undefined, WAIT)
    assert.deepEqual(
      resourceTemplates.map((t) => t.uriTemplate),
      ['workspace:///{+path}'],
    )
  })

  it('list_files: one level by default, globs at any depth, skips node_modules and .git unless named', async () => {
    const top = await ok('list_files')
    const paths = top.structuredContent.entries.map((e: any) => e.path)
    assert.ok(paths.includes('README.md') && paths.includes('src'), paths.join(' '))
    assert.ok(!paths.includes('src/a.ts'), 'depth 1 by default')
    assert.ok(!paths.includes('node_modules') && !paths.includes('.git'))
    assert.deepEqual(top.structuredContent.skipped.sort(), ['.git', 'node_modules'])
    assert.match(textOf(top), /^src\/$/m)
    assert.match(textOf(top), /^README\.md {2}19 B$/m)
    assert.match(textOf(top), /\[skipped .*node_modules.* \(name one as path to list it\)\]/)
    const links = Object.fromEntries(
      top.structuredContent.entries.map((e: any) => [e.path, e.type]),
    )
    assert.equal(links['escape-link'], 'symlink', 'symlinks are reported, not followed')

    const ts = await ok('list_files', { glob: '*.ts' })
    assert.deepEqual(
      ts.structuredContent.entries.map((e: any) => `${e.path} ${e.type}`),
      ['inner-link.ts symlink', 'src/a.ts file', 'src/nested/b.ts file'],
    )
    const under = await ok('list_files', { path: 'src', glob: 'nested/*.{ts,mjs}' })
    assert.deepEqual(
      under.structuredContent.entries.map((e: any) => e.path),
      ['src/nested/b.ts'],
    )
    const named = await ok('list_files', { path: 'node_modules', depth: 2 })
    assert.deepEqual(
      named.structuredContent.entries.map((e: any) => e.path),
      ['node_modules/pkg', 'node_modules/pkg/index.js'],
    )

    const limited = await ok('list_files', { path: 'src', depth: 3, limit: 2 })
    assert.equal(limited.structuredContent.entries.length, 2)
    assert.equal(limited.structuredContent.truncated, true)
    assert.match(textOf(limited), /2 entries shown; there are more/)
    assert.match(
      textOf(await ok('list_files', { glob: '*.rs' })),
      /nothing under "\." matches \*\.rs/,
    )
  })

  it('read_file: numbered lines in pages that say how to read on; long lines are cut', async () => {
    assert.equal(
      textOf(await ok('read_file', { path: 'README.md' })),
      '     1\t# Demo\n     2\tHello World',
    )
    const page = textOf(await ok('read_file', { path: 'src/many.txt', offset: 11, limit: 5 }))
    assert.equal(
      page,
      [
        '    11\tline 11',
        '    12\tline 12',
        '    13\tline 13',
        '    14\tline 14',
        '    15\tline 15',
        '[lines 11-15 of 3000; read on with offset 16]',
      ].join('\n'),
    )
    const first = textOf(await ok('read_file', { path: 'src/many.txt' }))
    assert.match(first, /\[lines 1-400 of 3000; read on with offset 401\]$/)
    const last = textOf(await ok('read_file', { path: 'src/many.txt', offset: 2999 }))
    assert.match(last, /line 3000\n\[lines 2999-3000 of 3000\]$/)
    const long = textOf(await ok('read_file', { path: 'src/long.txt' }))
    assert.match(long, /… \[line cut: 10006 characters\]$/)
    assert.ok(long.length < 2100)
    assert.match(textOf(await ok('read_file', { path: 'empty.txt' })), /empty\.txt is empty/)
    assert.match(
      textOf(await ok('read_file', { path: 'inner-link.ts' })),
      /alpha/,
      'a symlink inside the root is followed',
    )
  })

  it('search_text: substring and regex, case, glob, one file, bounded results; skips binary, huge and node_modules', async () => {
    const plain = await ok('search_text', { query: 'BETA' })
    assert.deepEqual(
      plain.structuredContent.matches.map((m: any) => `${m.path}:${m.line}`),
      ['src/a.ts:2', 'src/nested/b.ts:1'],
    )
    assert.match(textOf(plain), /^src\/a\.ts:2: \/\/ TODO: beta$/m)
    const cased = await ok('search_text', { query: 'Beta', caseSensitive: true })
    assert.deepEqual(
      cased.structuredContent.matches.map((m: any) => m.path),
      ['src/nested/b.ts'],
    )
    const regex = await ok('search_text', {
      query: '^export const \\w+ = \\d$',
      regex: true,
      glob: 'src/**/*.ts',
    })
    assert.equal(regex.structuredContent.matches.length, 2)
    const one = await ok('search_text', { query: 'hello', path: 'README.md' })
    assert.deepEqual(one.structuredContent.matches, [
      { path: 'README.md', line: 2, text: 'Hello World' },
    ])

    const needle = await ok('search_text', { query: 'needle' })
    assert.deepEqual(
      needle.structuredContent.matches.map((m: any) => m.path),
      ['src/long.txt'],
      'not blob.bin, huge.log or node_modules',
    )
    const shown = needle.structuredContent.matches[0].text as string
    assert.ok(shown.includes('needle') && shown.length <= 242, 'a window around the match')
    assert.match(textOf(needle), /\[1 binary files skipped\]/)
    assert.match(textOf(needle), /\[1 files over 16\.0 MiB skipped\]/)
    assert.match(textOf(needle), /skipped .*node_modules/)
    const named = await ok('search_text', { query: 'needle', path: 'node_modules' })
    assert.deepEqual(
      named.structuredContent.matches.map((m: any) => m.path),
      ['node_modules/pkg/index.js'],
    )

    const many = await ok('search_text', { query: 'line', path: 'src/many.txt', maxResults: 50 })
    assert.equal(many.structuredContent.matches.length, 50)
    assert.equal(many.structuredContent.truncated, true)
    assert.match(textOf(many), /50 matches shown; there are more/)
    const all = await ok('search_text', { query: 'line', path: 'src', maxResults: 1000 })
    assert.ok(textOf(all).length <= 66 * 1024, 'one answer stays within its cap')
  })

  it('file_info: files, directories, binary files and symlinks', async () => {
    const file = (await ok('file_info', { path: 'src/many.txt' })).structuredContent
    assert.deepEqual([file.type, file.lines, file.binary], ['file', 3000, false])
    assert.match(file.modified, /^\d{4}-\d\d-\d\dT/)
    const dir = (await ok('file_info', { path: 'src' })).structuredContent
    assert.deepEqual([dir.type, dir.entries], ['directory', 4])
    assert.equal((await ok('file_info', { path: 'blob.bin' })).structuredContent.binary, true)
    const link = await ok('file_info', { path: 'inner-link.ts' })
    assert.equal(link.structuredContent.symlinkTo, 'src/a.ts')
    const huge = await ok('file_info', { path: 'huge.log' })
    assert.equal(huge.structuredContent.size, 20 * MiB)
    assert.match(textOf(huge), /too large to inspect/)
  })

  it('resources: files by workspace:/// URI, text or base64; listing and completion', async () => {
    const { resources } = await client.listResources(undefined, WAIT)
    assert.ok(resources.some((r) => r.uri === 'workspace:///README.md'))
    assert.ok(!resources.some((r) => r.uri.includes('node_modules') || r.uri.includes('.git/')))
    const readme = await client.readResource({ uri: 'workspace:///README.md' }, WAIT)
    assert.deepEqual(readme.contents, [
      { uri: 'workspace:///README.md', mimeType: 'text/markdown', text: '# Demo\nHello World\n' },
    ])
    const blob = (await client.readResource({ uri: 'workspace:///blob.bin' }, WAIT))
      .contents[0] as { blob: string }
    assert.equal(Buffer.from(blob.blob, 'base64').subarray(4).toString(), 'needle')
    await assert.rejects(
      client.readResource({ uri: 'workspace:///..%2Foutside%2Fsecret.txt' }, WAIT),
      /outside the workspace root/,
    )
    await assert.rejects(
      client.readResource({ uri: 'workspace:///secret-link.txt' }, WAIT),
      /points outside the workspace root/,
    )
    const done = await client.complete(
      {
        ref: { type: 'ref/resource', uri: 'workspace:///{+path}' },
        argument: { name: 'path', value: 'src/ne' },
      },
      WAIT,
    )
    assert.deepEqual(done.completion.values, ['src/nested/'])
  })

  it('hostile input gets a clear error, and the server keeps serving', async () => {
    await refused(
      'read_file',
      { path: '../outside/secret.txt' },
      /"\.\.\/outside\/secret\.txt" is outside the workspace root/,
    )
    await refused(
      'read_file',
      { path: 'src/../../outside/secret.txt' },
      /outside the workspace root/,
    )
    await refused(
      'read_file',
      { path: '/etc/passwd' },
      /is an absolute path: paths are relative to the workspace root/,
    )
    await refused(
      'read_file',
      { path: 'secret-link.txt' },
      /"secret-link\.txt" is a symlink \(or is under one\) that points outside the workspace root/,
    )
    await refused(
      'read_file',
      { path: 'escape-link/secret.txt' },
      /points outside the workspace root/,
    )
    await refused('list_files', { path: 'escape-link' }, /points outside the workspace root/)
    await refused(
      'search_text',
      { query: 'secret', path: 'escape-link' },
      /points outside the workspace root/,
    )
    await refused('file_info', { path: 'escape-link' }, /points outside the workspace root/)
    await refused(
      'read_file',
      { path: '.git/config' },
      /inside \.git, which this server does not serve/,
    )
    await refused('list_files', { path: 'src/../.git' }, /inside \.git/)
    await refused(
      'read_file',
      { path: 'huge.log' },
      /"huge\.log" is 20\.0 MiB, over the 16\.0 MiB this server reads/,
    )
    await refused(
      'read_file',
      { path: 'blob.bin' },
      /"blob\.bin" is a binary file .*read_file returns text only/,
    )
    await refused('read_file', { path: 'src' }, /"src" is a directory: list_files it/)
    await refused('list_files', { path: 'README.md' }, /is a file, not a directory/)
    await refused(
      'read_file',
      { path: 'src/nope.ts' },
      /"src\/nope\.ts" does not exist; list_files "src" shows what is there/,
    )
    await refused('read_file', { path: 'a\0b' }, /NUL byte/)
    await refused(
      'read_file',
      { path: 'README.md', offset: 99 },
      /offset 99 is past the end of "README\.md", which has 2 lines/,
    )
    await refused('read_file', { path: 'README.md', limit: 5000 }, /Input validation error/)
    await refused(
      'search_text',
      { query: '([', regex: true },
      /invalid regular expression: .*Unterminated/,
    )
    await refused(
      'list_files',
      { glob: '{a,b' },
      /bad glob "\{a,b": the glob has a \{ without a \}/,
    )
    await refused(
      'list_files',
      { glob: '{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}' },
      /more than 64 alternatives/,
    )

    // a glob that would backtrack as a regular expression is matched in linear time
    const started = Date.now()
    const hostileGlob = await ok('list_files', { glob: `${'*a'.repeat(40)}*b` })
    assert.equal(hostileGlob.structuredContent.entries.length, 0)
    assert.ok(Date.now() - started < 2000, `the hostile glob took ${Date.now() - started} ms`)

    assert.match(
      textOf(await ok('read_file', { path: 'README.md' })),
      /Hello World/,
      'still serving',
    )
  })

  it('a regular expression that backtracks catastrophically is stopped within its budget; so is a cancelled search', async () => {
    const started = Date.now()
    await refused(
      'search_text',
      { query: '(a+)+$', regex: true, path: 'redos.txt' },
      /ran for over 1\.5 s and was stopped: it probably backtracks catastrophically/,
    )
    assert.ok(Date.now() - started < 8000, `stopped after ${Date.now() - started} ms`)
    assert.match(
      textOf(await ok('search_text', { query: 'hello' })),
      /README\.md:2/,
      'still serving',
    )

    // a cancelled call stops its worker: five in a row would otherwise fill the four search slots
    for (let i = 0; i < 5; i++) {
      const controller = new AbortController()
      const pending = call(
        'search_text',
        { query: '(a+)+$', regex: true, path: 'redos.txt' },
        { signal: controller.signal },
      )
      setTimeout(() => controller.abort(), 50)
      await assert.rejects(pending, /abort/i)
    }
    assert.match(
      textOf(await ok('search_text', { query: 'hello' })),
      /README\.md:2/,
      'still serving after cancels',
    )
    assert.equal(stderr, '', 'nothing on stderr')
  })

  it('refuses to start on a root that does not exist, and says why (exit 2)', () => {
    const run = spawnSync(process.execPath, [SERVER, join(base, 'missing')], {
      encoding: 'utf8',
      timeout: 15_000,
      input: '',
    })
    assert.equal(run.status, 2)
    assert.match(run.stderr, /the workspace root .*missing does not exist/)
    const help = spawnSync(process.execPath, [SERVER, '--help'], {
      encoding: 'utf8',
      timeout: 15_000,
    })
    assert.equal(help.status, 0)
    assert.match(help.stdout, /usage: node index\.mjs \[ROOT\]/)
  })
})

describe('example MCP server: the 2025 era on the same stdio entry', () => {
  const root = mkdtempSync(join(tmpdir(), 'yoke-workspace-legacy-'))
  writeFileSync(join(root, 'README.md'), '# Demo\nHello World\n')
  after(() => rmSync(root, { recursive: true, force: true }))

  // the v2 client pinned to the 2025 handshake, and the v1 SDK's client (which knows no other)
  const clients = {
    'v2 client pinned legacy': () => ({
      client: new Client(
        { name: 'yoke-test', version: '1.0.0' },
        { versionNegotiation: { mode: 'legacy' } },
      ),
      transport: new StdioClientTransport({ command: process.execPath, args: [SERVER, root] }),
    }),
    'v1 SDK client': () => ({
      client: new V1Client({ name: 'yoke-test', version: '1.0.0' }),
      transport: new V1StdioClientTransport({ command: process.execPath, args: [SERVER, root] }),
    }),
  }
  for (const [label, make] of Object.entries(clients)) {
    it(`${label}: lists the tools, reads a file and a resource, refuses an escape`, async () => {
      const { client, transport } = make()
      await client.connect(transport as never, WAIT)
      try {
        const v2 = client instanceof Client
        if (v2) assert.equal(client.getProtocolEra(), 'legacy')
        const { tools } = await client.listTools(undefined, WAIT)
        assert.deepEqual(
          tools.map((t) => t.name),
          ['list_files', 'read_file', 'search_text', 'file_info'],
        )
        const callTool = (args: Record<string, unknown>) =>
          (v2
            ? client.callTool({ name: 'read_file', arguments: args }, WAIT)
            : (client as V1Client).callTool(
                { name: 'read_file', arguments: args },
                undefined,
                WAIT,
              )) as Promise<Result>
        assert.equal(
          textOf(await callTool({ path: 'README.md' })),
          '     1\t# Demo\n     2\tHello World',
        )
        const escape = await callTool({ path: '../etc/passwd' })
        assert.equal(escape.isError, true)
        assert.match(textOf(escape), /outside the workspace root/)
        const readme = await client.readResource({ uri: 'workspace:///README.md' }, WAIT)
        assert.equal((readme.contents[0] as { text: string }).text, '# Demo\nHello World\n')
      } finally {
        await client.close()
      }
    })
  }
})
