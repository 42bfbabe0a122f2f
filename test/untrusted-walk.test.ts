/**
 * A fresh, untrusted project walked through every entry point a newcomer meets (issue 27, Deliver
 * 4): its local plugin, its exec package and its stdio MCP server wait for `yoke trust`, and each
 * command says so — nothing is left out silently. The environment has no YOKE_TRUST (test/run.js
 * sets it for the rest of the suite; it is removed here).
 *
 * What each command does, decided here:
 * - `tools list`: the list it can give on stdout, one `waiting` line naming `yoke trust` on
 *   stderr, exit 1 (the list is partial: what waits for trust is the project's own tools);
 * - `tools call` of a tool that is not there while instances wait: PLUGIN_WAITING naming
 *   `yoke trust`, exit 1;
 * - `doctor`: every instance with its state and why, exit 1 (the config asks for what is not running);
 * - `createYoke` (the build, as an application imports it): a `waiting:` warning through onLog (or stderr), and the call answers PLUGIN_WAITING;
 * - `config validate` (the config is valid: exit 0) and `inspect`: a waiting line on stderr;
 * - `mcp list`, `plugins list`, `serve --stdio`: they name trust too.
 */
import assert from 'node:assert/strict'
import { chmodSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { DevProcess, ROOT, runCommand, suiteProjects, YOKE } from './helpers/project.ts'

const projects = suiteProjects()

/** The environment of a user who never trusted anything: the suite's YOKE_TRUST removed. */
function untrustedEnv(home: string): Record<string, string> {
  const env: Record<string, string> = { ...(process.env as Record<string, string>) }
  delete env.YOKE_TRUST
  return { ...env, NO_COLOR: '1', YOKE_HOME: home }
}

/** Runs `command args` in the project, untrusted, to its end (bounded). */
function run(command: string, args: string[], cwd: string, home: string, ms = 90_000) {
  return runCommand(command, args, { cwd, env: untrustedEnv(home), ms })
}

const PROBE = `export default {
  name: 'probe',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({ name: 'probe', description: 'a local tool', execute: () => 'probed' })
  },
}
`

const MANIFEST = JSON.stringify({
  name: 'hello-pkg',
  version: '1.0.0',
  tools: [{ name: 'hello', description: 'says hello', input_schema: { type: 'object' } }],
})

function freshProject() {
  const p = projects({
    'plugin.mjs': PROBE,
    'pkgs/hello-pkg/manifest.json': MANIFEST,
    'pkgs/hello-pkg/hello-pkg': '#!/bin/sh\necho hello\n',
    'yoke.config.yaml': [
      'preset: base',
      'plugins:',
      '  local:',
      '    use: ./plugin.mjs',
      '  packages:',
      '    use: exec-tools',
      '    config:',
      '      dirs: [./pkgs]',
      '  echo:',
      '    use: mcp-client',
      '    config:',
      '      serverName: echo',
      '      command: node',
      `      args: [${JSON.stringify(join(ROOT, 'examples/mcp-server/index.mjs'))}, .]`,
      '',
    ].join('\n'),
  })
  chmodSync(p.path('pkgs/hello-pkg/hello-pkg'), 0o755)
  return p
}

const yoke = (p: { dir: string; home: string }, ...args: string[]) =>
  run(process.execPath, [YOKE, ...args], p.dir, p.home)

/** The one line that names trust: which instances wait, and the command that starts them. */
const TRUST_LINE =
  /waiting 3 instances wait for trust: local \(the local module \.\/plugin\.mjs\), packages .*, echo .*run `yoke trust` in /

describe('a fresh untrusted project: every entry point names trust', () => {
  const p = freshProject()

  it('tools list: the list, a waiting line naming `yoke trust` on stderr, exit 1', async () => {
    const r = await yoke(p, 'tools', 'list')
    assert.equal(r.code, 1, r.stdout + r.stderr)
    assert.match(r.stdout, /^skills_list /m)
    assert.doesNotMatch(r.stdout, /^probe /m)
    assert.match(r.stderr, TRUST_LINE)
    const json = await yoke(p, 'tools', 'list', '--json')
    assert.equal(json.code, 1)
    const answer = JSON.parse(json.stdout) as {
      waiting: Array<{ instance: string; trust: boolean }>
    }
    assert.deepEqual(
      answer.waiting.map((w) => [w.instance, w.trust]),
      [
        ['local', true],
        ['packages', true],
        ['echo', true],
      ],
    )
  })

  it('tools call of a tool whose owner waits: PLUGIN_WAITING naming `yoke trust`, exit 1', async () => {
    const r = await yoke(p, 'tools', 'call', 'probe')
    assert.equal(r.code, 1, r.stdout + r.stderr)
    assert.match(r.stderr, /PLUGIN_WAITING/)
    assert.doesNotMatch(r.stderr, /UNKNOWN_TOOL/)
    assert.match(r.stderr, /`yoke trust`/)
  })

  it('doctor: every instance with its state and why, exit 1 while the config asks for what waits', async () => {
    const r = await yoke(p, 'doctor')
    assert.equal(r.code, 1, r.stdout + r.stderr)
    assert.match(r.stdout, /✓ instance "skills" \(skills\) is active/)
    for (const key of ['local', 'packages', 'echo'])
      assert.match(r.stdout, new RegExp(`✗ instance "${key}" .* is pending: .*not trusted yet`))
    assert.match(
      r.stdout,
      /✗ 3 of the \d+ instances the config asks for are not running: local, packages, echo/,
    )
    assert.match(r.stdout, /✗ 3 instances wait for trust: .*`yoke trust`/)
    assert.match(r.stdout, /✓ tools from skills: 2 \(skills_list, skill_read\)/)
    assert.match(r.stdout, /✓ hook runtime\.preExecute: policy/)
    const json = JSON.parse((await yoke(p, 'doctor', '--json')).stdout) as {
      ok: boolean
      checks: Array<{ level: string; topic?: string; message: string }>
    }
    assert.equal(json.ok, false)
    assert.ok(json.checks.some((c) => c.topic === 'trust' && /`yoke trust`/.test(c.message)))
  })

  it('createYoke: a `waiting:` warning naming `yoke trust`, and the call answers PLUGIN_WAITING', async () => {
    const script = p.write(
      'embed.mjs',
      `import { createYoke } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist/src/index.js')).href)}
const logged = []
const yoke = createYoke({ runMode: 'once', onLog: (r) => logged.push(r) })
await yoke.ready
const result = await yoke.call('probe', {})
await yoke.close()
console.log(JSON.stringify({ status: result.status, logged: logged.filter((r) => r.level === 'warn').map((r) => r.message) }))
`,
    )
    const r = await run(process.execPath, [script], p.dir, p.home)
    assert.equal(r.code, 0, r.stdout + r.stderr)
    const { status, logged } = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
      status: string
      logged: string[]
    }
    assert.equal(status, 'PLUGIN_WAITING')
    assert.ok(
      logged.some((m) => /^waiting: 3 instances wait for trust: .*`yoke trust`/.test(m)),
      logged.join('\n'),
    )
    // without onLog, the warning goes to stderr (as the README says)
    p.write(
      'embed-stderr.mjs',
      `import { createYoke } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist/src/index.js')).href)}
const yoke = createYoke({ runMode: 'once' })
await yoke.ready
await yoke.close()
`,
    )
    const quiet = await run(process.execPath, [p.path('embed-stderr.mjs')], p.dir, p.home)
    assert.equal(quiet.code, 0, quiet.stderr)
    assert.match(quiet.stderr, /warn waiting: 3 instances wait for trust: .*`yoke trust`/)
  })

  it('config validate (valid: exit 0) and inspect name trust on stderr', async () => {
    const valid = await yoke(p, 'config', 'validate')
    assert.equal(valid.code, 0, valid.stderr)
    assert.match(
      valid.stderr,
      /waiting 3 instances wait for trust: local, packages, echo; .*`yoke trust`/,
    )
    const inspect = await yoke(p, 'inspect')
    assert.equal(inspect.code, 0, inspect.stderr)
    assert.match(inspect.stderr, TRUST_LINE)
  })

  it('tools list and tools call answered by a running dev say the same', async (t) => {
    // the dev runs untrusted (YOKE_TRUST empty: not set), its stdio piped, so it asks nothing
    const dev = new DevProcess([], { cwd: p.dir, home: p.home, env: { YOKE_TRUST: '' } })
    t.after(() => dev.stop())
    await dev.ready(90_000)
    const list = await yoke(p, 'tools', 'list')
    assert.equal(list.code, 1, list.stdout + list.stderr)
    assert.match(list.stderr, TRUST_LINE)
    const call = await yoke(p, 'tools', 'call', 'probe')
    assert.equal(call.code, 1, call.stdout + call.stderr)
    assert.match(call.stderr, /PLUGIN_WAITING[\s\S]*`yoke trust`/)
  })

  it('mcp list: names trust for the stdio server that waits', async () => {
    const r = await yoke(p, 'mcp', 'list')
    assert.match(r.stdout + r.stderr, /echo/)
    assert.match(r.stdout + r.stderr, /`yoke trust`/)
    assert.match(r.stderr, TRUST_LINE)
  })

  it('plugins list: lists (listing runs no code) and names trust', async () => {
    const r = await yoke(p, 'plugins', 'list')
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /^hello-pkg 1\.0\.0 {2}waits for trust$/m)
    assert.match(r.stdout, /^ {2}tools: hello$/m)
    assert.match(r.stderr, TRUST_LINE)
  })

  it('serve --stdio, with the SDK client: the tools it can serve, and stderr names trust', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [YOKE, 'serve', '--stdio'],
      cwd: p.dir,
      env: untrustedEnv(p.home),
      stderr: 'pipe',
    })
    let stderr = ''
    transport.stderr?.on('data', (d) => (stderr += d))
    const client = new Client({ name: 'walk', version: '1.0.0' })
    await client.connect(transport)
    try {
      const { tools } = await client.listTools()
      const names = tools.map((t) => t.name)
      assert.ok(names.includes('skills_list'), names.join(', '))
      assert.ok(!names.includes('probe'))
      const called = await client.callTool({ name: 'probe', arguments: {} })
      assert.equal(called.isError, true)
      assert.match(JSON.stringify(called.content), /yoke trust/)
    } finally {
      await client.close()
    }
    assert.match(stderr, /`yoke trust`/)
  })
})
