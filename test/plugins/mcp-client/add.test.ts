// `yoke mcp add` from the shell, as a newcomer uses it: the entry goes into the project config that
// yoke discovers (a new one is created only when there is none, and said so), a command line with
// relative paths runs as it did where it was typed (a stdio server runs in the config's
// directory), and a server that crashes is reported by its error line, not Node's version banner.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { parse } from 'yaml'
import { tellingLine } from '../../../plugins/mcp-client/stdio.ts'
import type { McpServerStatus } from '../../../plugins/mcp/api.ts'
import { ROOT, runYoke, suiteProjects, type Project } from '../../helpers/project.ts'

// an MCP server with no dependencies, so a copy runs from any directory
const SERVER = readFileSync(`${ROOT}test/fixtures/mcp/raw.mjs`, 'utf8')
const CRASH = "throw new Error('the server is broken on purpose')\n"

type Entry = { use: string; config: Record<string, unknown> }
const entries = (p: Project, rel: string) =>
  (parse(readFileSync(p.path(rel), 'utf8')) as { plugins: Record<string, Entry> }).plugins

describe('yoke mcp add', () => {
  const project = suiteProjects()
  const yoke = (p: Project, dir: string, ...args: string[]) =>
    runYoke(args, { cwd: p.path(dir), home: p.home })
  /** the servers a one-shot composition sees, discovered from `dir` as `yoke dev` there would */
  const servers = async (p: Project, dir = '.') => {
    const r = await yoke(p, dir, 'mcp', 'list', '--fresh', '--json')
    assert.equal(r.code, 0, r.stderr)
    return (JSON.parse(r.stdout) as { servers: McpServerStatus[] }).servers
  }

  it('writes to the discovered config/yoke.yaml, with a cwd: so that ./tools/server.mjs is the file typed', async () => {
    const p = project({
      'package.json': '{ "name": "app" }\n',
      'config/yoke.yaml': '# ours\npreset: base\n',
      'tools/server.mjs': SERVER,
    })
    const r = await yoke(p, '.', 'mcp', 'add', 'demo', '--', 'node', './tools/server.mjs')
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^config\/yoke\.yaml: added mcp-demo\n/)
    assert.match(r.stdout, /runs in \.\. \(where this ran\)/)
    assert.equal(existsSync(p.path('yoke.config.yaml')), false, 'no second config is created')
    // the server runs in config/ (the config's directory): cwd .. brings it back to where it was typed
    assert.deepEqual(entries(p, 'config/yoke.yaml')['mcp-demo']!.config, {
      serverName: 'demo',
      command: 'node',
      args: ['./tools/server.mjs'],
      cwd: '..',
    })
    assert.match(readFileSync(p.path('config/yoke.yaml'), 'utf8'), /^# ours\n/)
    const [demo] = await servers(p)
    assert.equal(demo?.state, 'connected', demo?.detail)
    assert.ok(demo.tools > 0)
  })

  it('from a subdirectory, names that directory: `node server.mjs` there still finds its file', async () => {
    const p = project({
      'package.json': '{ "name": "app" }\n',
      'yoke.config.yaml': 'preset: base\n',
      'servers/local/server.mjs': SERVER,
    })
    const r = await yoke(p, 'servers/local', 'mcp', 'add', 'local', '--', 'node', 'server.mjs')
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^\.\.\/\.\.\/yoke\.config\.yaml: added mcp-local\n/)
    assert.equal(entries(p, 'yoke.config.yaml')['mcp-local']!.config.cwd, 'servers/local')
    const [local] = await servers(p)
    assert.equal(local?.state, 'connected', local?.detail)
  })

  it('leaves cwd out when nothing on the command line is a path here', async () => {
    const p = project({ 'config/yoke.yaml': 'preset: base\n' })
    const r = await yoke(
      p,
      '.',
      'mcp',
      'add',
      'mem',
      '--json',
      '--',
      'npx',
      '-y',
      '@modelcontextprotocol/server-memory',
      `--root=${p.dir}`,
    )
    assert.equal(r.code, 0, r.stderr)
    const answer = JSON.parse(r.stdout) as { created: boolean; config: Record<string, unknown> }
    assert.equal(answer.created, false)
    assert.equal('cwd' in answer.config, false)
    assert.equal('cwd' in entries(p, 'config/yoke.yaml')['mcp-mem']!.config, false)
  })

  it('with no project config, creates the first discovered name and says so', async () => {
    const p = project({ 'server.mjs': SERVER })
    const r = await yoke(p, '.', 'mcp', 'add', 'fresh', '--', 'node', './server.mjs')
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^created yoke\.config\.yaml \(there was no project config/)
    // here is the project directory: the command line needs no cwd
    assert.deepEqual(entries(p, 'yoke.config.yaml')['mcp-fresh']!.config, {
      serverName: 'fresh',
      command: 'node',
      args: ['./server.mjs'],
    })
    const [fresh] = await servers(p)
    assert.equal(fresh?.state, 'connected', fresh?.detail)
  })

  it('from a subdirectory of a package with no config, creates it at the package root, where a dev anywhere in it looks', async () => {
    const p = project({ 'package.json': '{ "name": "app" }\n', 'sub/server.mjs': SERVER })
    const r = await yoke(p, 'sub', 'mcp', 'add', 'deep', '--', 'node', 'server.mjs')
    assert.equal(r.code, 0, r.stderr)
    assert.equal(existsSync(p.path('sub/yoke.config.yaml')), false)
    assert.equal(entries(p, 'yoke.config.yaml')['mcp-deep']!.config.cwd, 'sub')
    for (const dir of ['.', 'sub']) {
      const [deep] = await servers(p, dir)
      assert.equal(deep?.state, 'connected', `${dir}: ${deep?.detail}`)
    }
  })

  it('edits a discovered .yokerc (YAML by another name)', async () => {
    const p = project({ '.yokerc': '# rc\npreset: base\n', 'server.mjs': SERVER })
    const r = await yoke(p, '.', 'mcp', 'add', 'rc', '--', 'node', './server.mjs')
    assert.equal(r.code, 0, r.stderr)
    assert.equal(entries(p, '.yokerc')['mcp-rc']!.config.serverName, 'rc')
    assert.match(readFileSync(p.path('.yokerc'), 'utf8'), /^# rc\n/)
  })

  it("reports a crashing server by its error line, not Node's version banner", async () => {
    const p = project({ 'yoke.config.yaml': 'preset: base\n', 'crash.mjs': CRASH })
    const r = await yoke(p, '.', 'mcp', 'add', 'broken', '--', 'node', 'crash.mjs')
    assert.equal(r.code, 0, r.stderr)
    const [broken] = await servers(p)
    assert.notEqual(broken?.state, 'connected')
    assert.match(broken!.detail, /\(stderr: Error: the server is broken on purpose\)/)
    assert.doesNotMatch(broken!.detail, /Node\.js v\d/)
  })
})

describe('the stderr line that explains a failure', () => {
  it('is the error headline of a Node crash, with its code, a Python traceback or a panic', () => {
    const moduleNotFound = [
      'node:internal/modules/cjs/loader:1210',
      '  throw err;',
      '  ^',
      "Error: Cannot find module '/srv/x.mjs'",
      '    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)',
      '    at node:internal/main/run_main_module:28:49 {',
      "  code: 'MODULE_NOT_FOUND',",
      '  requireStack: []',
      '}',
      'Node.js v20.20.2',
    ]
    assert.equal(tellingLine(moduleNotFound), "Error: Cannot find module '/srv/x.mjs'")
    assert.equal(
      tellingLine(['Error [ERR_MODULE_NOT_FOUND]: Cannot find package', 'Node.js v20.20.2']),
      'Error [ERR_MODULE_NOT_FOUND]: Cannot find package',
    )
    assert.equal(
      tellingLine([
        'Traceback (most recent call last):',
        '  File "server.py", line 1, in <module>',
        "ModuleNotFoundError: No module named 'mcp'",
      ]),
      "ModuleNotFoundError: No module named 'mcp'",
    )
    assert.equal(
      tellingLine(['panic: no token', 'goroutine 1 [running]:', 'main.main()']),
      'panic: no token',
    )
  })

  it("is a server's own last words when nothing looks like an error", () => {
    assert.equal(
      tellingLine(['starting', 'fixture: refusing to start']),
      'fixture: refusing to start',
    )
    assert.equal(tellingLine(['listening', 'Node.js v20.20.2']), 'listening')
    assert.equal(tellingLine([]), undefined)
  })
})
