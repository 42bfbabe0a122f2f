// The repository's own config (what `npm start` runs) and the examples it loads by path.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { after, it } from 'node:test'
import { ROOT, runYoke, tempProject, YOKE } from './helpers/project.ts'

const home = tempProject()
after(() => home.cleanup())

it('config/yoke.yaml composes offline: the TypeScript example provides a service and taps a hook', async () => {
  const run = await runYoke(['inspect', '--json', '--fresh', '--config', 'config/yoke.yaml'], {
    cwd: ROOT,
    home: home.home,
    env: { OPENAI_API_KEY: '' },
  })
  assert.equal(run.code, 0, run.stderr)
  const snap = JSON.parse(run.stdout)
  // no key: the model waits, saying for what, and the agent waits for the model
  const model = snap.instances.find((i: any) => i.key === 'model')
  assert.equal(model.error.code, 'PLUGIN_WAITING')
  assert.match(model.error.message, /OPENAI_API_KEY is not set/)
  // by key: instances that start side by side (an MCP server, a package directory) settle in either order
  const byKey = (rows: string[][]) => [...rows].sort((a, b) => (a[0]! < b[0]! ? -1 : 1))
  assert.deepEqual(
    byKey(snap.instances.map((i: any) => [i.key, i.plugin, i.state])),
    byKey([
      ['policy', 'policy', 'active'],
      ['prompt', 'prompt', 'active'],
      ['skills', 'skills', 'active'],
      ['mcp', 'mcp', 'active'],
      ['models', 'models', 'active'],
      ['installs', 'installs', 'active'],
      ['claude-plugins', 'claude-plugins', 'active'],
      ['capabilities', 'capabilities', 'active'],
      ['model', 'openai', 'pending'],
      ['agent', 'agent-loop', 'pending'],
      ['tool-search', 'tool-search', 'active'],
      ['turn-guard', 'turn-guard', 'active'],
      ['turn-guard/agent-turns', 'turn-guard-agent', 'pending'],
      ['repository', 'repository', 'active'],
      ['serve', 'mcp-server', 'active'],
      ['metrics', 'metrics-jsonl', 'active'],
      ['telemetry', 'telemetry', 'active'],
      ['console', 'console', 'active'],
      ['audit', 'audit-log', 'active'],
      ['greeter', 'greeter', 'active'],
      ['notes', 'notes', 'active'],
      ['packages', 'exec-tools', 'active'],
      ['workspace', 'mcp-client', 'active'],
      ['yoke:runtime', 'runtime', 'active'],
      ['yoke:project', 'project', 'active'],
      // the children that wait for the agent (no key here) wait with it
      ['capabilities/capabilities-offers', 'capabilities-offers', 'pending'],
      ['capabilities/capabilities-gateway', 'capabilities-gateway', 'active'],
      ['capabilities/capabilities-skills', 'capabilities-skills', 'active'],
      ['capabilities/capabilities-repository', 'capabilities-repository', 'active'],
      ['repository/references', 'repository-references', 'pending'],
      ['packages/house-rules', 'exec-package', 'active'],
      ['packages/sys-info', 'exec-package', 'active'],
      ['packages/text-tools', 'exec-package', 'active'],
      ['packages/house-rules/hooks', 'shell-hooks', 'active'],
    ]),
  )
  assert.deepEqual(
    snap.services
      .filter((s: any) => !s.owner.startsWith('yoke:'))
      .sort((a: any, b: any) => a.name.localeCompare(b.name)),
    [
      { name: 'auditLog', owner: 'audit', active: true },
      { name: 'capabilities', owner: 'capabilities', active: true },
      { name: 'claudePlugins', owner: 'claude-plugins', active: true },
      { name: 'execTools', owner: 'packages', active: true },
      { name: 'installs', owner: 'installs', active: true },
      { name: 'mcp', owner: 'mcp', active: true },
      { name: 'mcpServer', owner: 'serve', active: true },
      { name: 'models', owner: 'models', active: true },
      { name: 'prompt', owner: 'prompt', active: true },
      { name: 'repository', owner: 'repository', active: true },
      { name: 'skillFilter', owner: 'skills', active: true },
      { name: 'skills', owner: 'skills', active: true },
      { name: 'telemetry', owner: 'telemetry', active: true },
      { name: 'toolSearch', owner: 'tool-search', active: true },
    ],
  )
  assert.ok(snap.hooks.find((h: any) => h.hook === 'kernel.state').taps.includes('audit-log'))
  assert.ok(
    snap.hooks
      .find((h: any) => h.hook === 'runtime.preExecute')
      .taps.some((t: string) => t.startsWith('shell-hook before_tool_call')),
    "house-rules' shell hook",
  )
  const sources = new Set(snap.tools.map((t: any) => t.source))
  for (const source of ['native', 'skills', 'exec:text-tools', 'exec:sys-info', 'mcp:workspace'])
    assert.ok(sources.has(source), `tools from ${source}`)
  const validate = await runYoke(['config', 'validate', '--config', 'config/yoke.yaml'], {
    cwd: ROOT,
    home: home.home,
  })
  assert.equal(validate.code, 0, validate.stderr)
})

it('the greeter waits for the audit log when it is disabled, and inspect says who would provide it', async () => {
  const run = await runYoke(
    ['inspect', '--fresh', '--config', 'config/yoke.yaml', '--set', 'plugins.audit.enabled=false'],
    { cwd: ROOT, home: home.home },
  )
  assert.equal(run.code, 0, run.stderr)
  assert.match(run.stdout, /greeter\s+pending/)
  assert.match(
    run.stdout,
    /waits for service "auditLog": provided by instance "audit" \(disabled\)/,
  )
})

it('use: resolves an installed npm package (ESM exports) from the project', async () => {
  const project = tempProject({
    'node_modules/@acme/yoke-plugin-hello/package.json': JSON.stringify({
      name: '@acme/yoke-plugin-hello',
      type: 'module',
      exports: { '.': { import: './dist/index.js' } },
    }),
    'node_modules/@acme/yoke-plugin-hello/dist/index.js': `export default { name: 'hello', provides: ['hello'], apply(ctx) { ctx.provide('hello', 'hi') } }\n`,
    'yoke.config.yaml': 'plugins:\n  hello:\n    use: "@acme/yoke-plugin-hello"\n',
  })
  try {
    const run = await runYoke(['inspect', '--json', '--fresh'], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(run.code, 0, run.stderr)
    assert.deepEqual(
      JSON.parse(run.stdout).services.filter((s: any) => s.owner === 'hello'),
      [{ name: 'hello', owner: 'hello', active: true }],
    )
  } finally {
    project.cleanup()
  }
})

it('the example MCP server answers through the pipeline', async () => {
  const run = await runYoke(
    [
      'tools',
      'call',
      'mcp__workspace__search_text',
      '--json',
      '--config',
      'config/yoke.yaml',
      '--args',
      JSON.stringify({ query: 'name: commit-messages', glob: 'SKILL.md' }),
    ],
    { cwd: ROOT, home: home.home, env: { HOME: home.dir } },
  )
  assert.equal(run.code, 0, run.stdout + run.stderr)
  const out = JSON.parse(run.stdout)
  assert.equal(out.status, 'ok', run.stdout)
  assert.match(
    JSON.stringify(out.content),
    /examples\/skills\/commit-messages\/SKILL\.md:2: name: commit-messages/,
  )
})

it('npm start (yoke dev on config/yoke.yaml) gets ready with tools from every source and prints a summary of them', async () => {
  // HOME and YOKE_HOME isolated (no user skills or patch leak in), TMPDIR too (the control socket)
  const env = {
    ...process.env,
    NO_COLOR: '1',
    HOME: home.dir,
    YOKE_HOME: home.home,
    TMPDIR: home.dir,
    YOKE_MCP_PORT: '0',
    OPENAI_API_KEY: '',
  }
  const child = spawn(process.execPath, [YOKE, 'dev', '--config', 'config/yoke.yaml'], {
    cwd: ROOT,
    env,
  })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`npm start was not ready within 60 s\n${stdout}\n${stderr}`)),
        60_000,
      )
      child.stdout.on('data', (d) => {
        stdout += d
        if (/ ready in [\d.]+ s · watching for changes/.test(stdout)) {
          clearTimeout(timer)
          resolve()
        }
      })
      void exited.then((code) =>
        reject(new Error(`yoke dev exited (${code}) before it was ready\n${stdout}\n${stderr}`)),
      )
    })
    // the main job: a client lists the tools over the MCP endpoint and calls one of each source
    const [, url, tokenFile] = /^mcp endpoint\n {2}(\S+) · token in (\S+)$/m.exec(stdout) ?? []
    assert.ok(url && tokenFile, `the summary shows the endpoint and where the token is\n${stdout}`)
    // the SDK's v2 client, negotiating: the endpoint serves it the 2026-07-28 revision
    const client = new Client(
      { name: 'npm-start-test', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    )
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: {
          headers: { Authorization: `Bearer ${readFileSync(tokenFile, 'utf8').trim()}` },
        },
      }),
    )
    try {
      assert.equal(client.getProtocolEra(), 'modern')
      const { tools } = await client.listTools()
      for (const name of ['skills_list', 'word_count', 'note_list', 'mcp__workspace__list_files'])
        assert.ok(
          tools.some((t) => t.name === name),
          name,
        )
      const calls: Array<[string, Record<string, unknown>, RegExp]> = [
        ['skills_list', {}, /commit-messages/],
        ['word_count', { text: 'one two three' }, /3/],
        ['mcp__workspace__list_files', { path: 'examples' }, /mcp-server/],
        ['note_list', {}, /no notes/],
      ]
      for (const [name, args, expected] of calls) {
        const result = (await client.callTool({ name, arguments: args }, { timeout: 20_000 })) as {
          isError?: boolean
          content: Array<{ type: string; text?: string }>
        }
        assert.ok(!result.isError, `${name}: ${JSON.stringify(result.content)}`)
        assert.match(result.content.map((c) => c.text ?? '').join('\n'), expected, name)
      }
    } finally {
      await client.close()
    }
  } finally {
    child.kill('SIGINT')
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    assert.equal(await exited, 0, stderr)
    clearTimeout(timer)
  }
  const section = (title: string) =>
    stdout.split(new RegExp(`^${title}\\b.*$`, 'm'))[1]?.split(/^\S/m)[0] ?? ''
  assert.match(
    stdout,
    /^config preset presets\/base\.yaml · preset presets\/default\.yaml · project config\/yoke\.yaml$/m,
  )
  // capabilities-store starts only once a store is there: config/yoke.yaml has none, so it is not listed
  assert.match(stdout, /^instances 27 active · 5 pending$/m)
  assert.doesNotMatch(stdout, /capabilities-store/)
  assert.match(
    section('instances'),
    /^  model +pending +openai\n +PLUGIN_WAITING .*OPENAI_API_KEY is not set$/m,
  )
  for (const key of [
    'policy',
    'skills',
    'audit',
    'notes',
    'packages',
    'workspace',
    'packages/house-rules/hooks',
  ]) {
    assert.match(section('instances'), new RegExp(`^  ${key} +active `, 'm'), key)
  }
  assert.match(section('instances'), /^  workspace +active +mcp-client$/m)
  const tools = section('tools')
  // the repository plugin's tools, then the notes example's
  assert.match(
    tools,
    /^  native +repository_define, .*, note_add, note_list, note_clear \(high\), note_wait$/m,
  )
  assert.match(tools, /^  capabilities +capability_stats$/m)
  assert.match(tools, /^  skills +skills_list, skill_read$/m)
  assert.match(tools, /^  exec:text-tools +word_count, slugify$/m)
  assert.match(tools, /^  exec:sys-info +disk_free$/m)
  assert.match(
    tools,
    /^  mcp:workspace +mcp__workspace__\{list_files, read_file, search_text, file_info\}$/m,
  )
  assert.match(section('skills'), /^  commit-messages, csv-insights, http-debugging, text-tools$/m)
  assert.match(
    section('mcp servers'),
    /^  workspace +connected · stdio · 2026-07-28 · workspace 1\.0\.0 · 4 tools$/m,
  )
  assert.doesNotMatch(stdout + stderr, /\b(warn|error)\b/)
  assert.match(stderr, /generated the bearer token for MCP clients/)
})
